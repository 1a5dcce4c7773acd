/**
 * Long-lived streaming responses (server-sent events) on uWebSockets.js: status and headers once,
 * then chunks written with back-pressure, a bounded per-client buffer, and close callbacks. The
 * adapter (app.ts) routes a request here; this module owns the stream's socket from then on. It
 * holds no domain logic (what an event says is the service's business).
 */
import type uWS from 'uWebSockets.js';
import { statusLine, type HttpRequest, type HttpResult, type InFlight, type StreamEntry } from './app.js';

/** A long-lived response (server-sent events, chunked streams). */
export interface ServerStream {
  /** Sends the status line and headers; call once before write(). */
  open(status: number, headers: Record<string, string>): void;
  /** Queues a chunk. Returns false when the stream is closed (or was just closed for overflowing maxBufferedBytes). */
  write(chunk: string): boolean;
  end(chunk?: string): void;
  /** Bytes accepted by write() but not yet handed to the socket. */
  readonly bufferedBytes: number;
  readonly closed: boolean;
  onClose(cb: () => void): void;
}

export type StreamHandler = (req: HttpRequest<undefined>, stream: ServerStream) => void | Promise<void>;

/** What a stream needs from the adapter that owns it. */
export interface StreamAppHooks {
  /** Every open stream's "end now" function (the adapter ends them all on close()). */
  openStreams: Set<() => void>;
  onResponse: ((method: string, status: number) => void) | undefined;
  errorResult: (err: unknown, req: HttpRequest<unknown>) => HttpResult;
  /** Answers the request with a plain result (a handler that failed before opening the stream). */
  send: (r: HttpResult) => void;
}

export function runStream(
res: uWS.HttpResponse,
state: InFlight,
entry: StreamEntry,
cors: Record<string, string> | undefined,
app: StreamAppHooks,
): void {
  const request = state as HttpRequest<undefined>;
  const closeCbs: Array<() => void> = [];
  const pending: string[] = [];
  let pendingBytes = 0;
  let opened = false;
  let closed = false;
  const finish = (): void => {
    if (closed) return;
    closed = true;
    state.done = true;
    app.openStreams.delete(endNow);
    for (const cb of closeCbs) cb();
  };
  const endNow = (): void => {
    if (closed) return;
    if (!state.aborted) res.cork(() => res.end());
    finish();
  };
  res.onAborted(() => {
    state.aborted = true;
    finish();
  });
  app.openStreams.add(endNow);
  // uWS keeps the bytes a write could not send and calls onWritable when the socket drains; while it
  // is backpressured we hold further chunks ourselves, bounded by maxBufferedBytes.
  let backpressured = false;
  const flush = (): boolean => {
    backpressured = false;
    while (pending.length > 0 && !backpressured) {
      const chunk = pending.shift() as string;
      pendingBytes -= Buffer.byteLength(chunk);
      res.cork(() => {
        backpressured = !res.write(chunk);
      });
    }
    return !backpressured;
  };
  res.onWritable(() => flush());
  const stream: ServerStream = {
    open: (status, headers) => {
      if (closed || opened) return;
      opened = true;
      res.cork(() => {
        res.writeStatus(statusLine(status));
        if (cors) for (const k in cors) res.writeHeader(k, cors[k] as string);
        for (const k in headers) res.writeHeader(k, headers[k] as string);
      });
      app.onResponse?.('GET', status);
    },
    write: (chunk) => {
      if (closed) return false;
      if (backpressured) {
        pending.push(chunk);
        pendingBytes += Buffer.byteLength(chunk);
        if (pendingBytes > entry.maxBufferedBytes) {
          // A stalled client: close the socket at once so its queued bytes are freed now,
          // rather than ending gracefully and holding them until it reads or times out.
          if (!state.aborted && !closed) res.close();
          finish();
          return false;
        }
        return true;
      }
      res.cork(() => {
        backpressured = !res.write(chunk);
      });
      return true;
    },
    end: (chunk) => {
      if (closed) return;
      if (chunk !== undefined && !state.aborted) res.cork(() => res.end(chunk));
      else if (!state.aborted) res.cork(() => res.end());
      finish();
    },
    get bufferedBytes() {
      return pendingBytes;
    },
    get closed() {
      return closed;
    },
    onClose: (cb) => {
      closeCbs.push(cb);
    },
  };
  try {
    const p = entry.handler(request, stream);
    if (p instanceof Promise) {
      p.catch((err: unknown) => {
        if (!opened) {
          state.done = false;
          app.send(app.errorResult(err, request as HttpRequest<unknown>));
          finish();
        } else endNow();
      });
    }
  } catch (err) {
    if (!opened) {
      app.send(app.errorResult(err, request as HttpRequest<unknown>));
      finish();
    } else endNow();
  }
}
