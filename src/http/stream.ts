/**
 * Long-lived streaming responses (server-sent events) on uWebSockets.js: status and headers once,
 * then chunks written with back-pressure from the first byte, a bounded per-client buffer, a drain
 * deadline, and close callbacks that say why the stream closed. The adapter (app.ts) routes a
 * request here; this module owns the stream's socket from then on. It holds no domain logic (what
 * an event says is the service's business).
 *
 * Memory per client. Every chunk, however large (a multi-megabyte SSE `put`), is handed to uWS in
 * slices of `sliceBytes` and only while the socket takes them: uWS copies a slice only when the
 * kernel refuses part of it, so uWS holds at most one slice per stalled client. Chunks are kept by
 * reference (a Buffer shared by every client, serialised once by the caller), so a put costs a
 * client nothing but its position in it. What a client makes the process hold on its own (chunks
 * queued behind the one being sent) is bounded by `maxBufferedBytes`: past it the client is cut off
 * at once, as slow. A client whose socket stays unwritable for `drainTimeoutMs` (it stopped
 * reading) is cut off too, as slow, which also frees what the kernel had taken for it.
 *
 * The kernel's share is not under this module's control: uWS exposes no file descriptor, socket
 * option or remote port, so neither SO_SNDBUF nor the socket's unacknowledged bytes (tx_queue in
 * /proc/net/tcp) can be used. A non-reading client holds what its socket accepted before the first
 * refused write (about 4 MB on Linux loopback with default tcp_wmem/tcp_rmem) until the drain
 * deadline; `sysctl net.ipv4.tcp_wmem` bounds the server side.
 */
import type uWS from 'uWebSockets.js';
import { statusLine } from './respond.js';
import type { InFlight } from './in-flight.js';
import type { HttpRequest, HttpResult, StreamEntry } from './types.js';

/** Bytes handed to uWS per write() call: the most uWS ever copies for one stalled client. */
export const streamSliceBytes = 64 * 1024;
/** Default time a stream may stay unwritable (its client not reading) before it is cut off as slow. */
export const streamDrainTimeoutMsDefault = 10_000;

/** Why a stream closed: its client went away, it was cut off as slow, or the server ended it. */
export type StreamCloseReason = 'client' | 'slow' | 'server';

/** A long-lived response (server-sent events, chunked streams). */
export interface ServerStream {
  /** Sends the status line and headers; call once before write(). */
  open(status: number, headers: Record<string, string>): void;
  /**
   * Queues a chunk, kept by reference: share one Buffer between clients. A list of Buffers is one
   * chunk sent part after part (a replay of shared event frames, without copying them into one).
   * Returns false when the stream is closed (or was just closed as slow: its own queue exceeded
   * maxBufferedBytes).
   */
  write(chunk: string | Buffer | readonly Buffer[]): boolean;
  end(chunk?: string): void;
  /** Bytes queued behind the chunk being sent (what this client makes the process hold). */
  readonly bufferedBytes: number;
  readonly closed: boolean;
  /** How long the socket may stay unwritable before the stream is cut off as slow (ms). */
  drainTimeoutMs: number;
  onClose(cb: (reason: StreamCloseReason) => void): void;
}

export type StreamHandler = (req: HttpRequest<undefined>, stream: ServerStream) => void | Promise<void>;

/** What a stream needs from the adapter that owns it. */
export interface StreamAppHooks {
  /** Every open stream's "end now" function (the adapter ends them all on close()). */
  openStreams: Set<() => void>;
  /** The stream sent its status line (metrics, the span's status). */
  opened: (status: number) => void;
  /** The stream closed, for whatever reason (its span ends). */
  closed: () => void;
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
  const closeCbs: Array<(reason: StreamCloseReason) => void> = [];
  // The chunk being sent is queue[0], from its part `part` at byte `offset`; the rest wait whole.
  const queue: Array<{ parts: readonly Buffer[]; bytes: number }> = [];
  let part = 0;
  let offset = 0;
  /** Bytes of queue[1..] (the head's remainder is not counted: it may be a shared put). */
  let behindBytes = 0;
  let opened = false;
  let closed = false;
  let backpressured = false;
  let drainTimer: NodeJS.Timeout | undefined;
  const finish = (reason: StreamCloseReason): void => {
    if (closed) return;
    closed = true;
    state.done = true;
    if (drainTimer) clearTimeout(drainTimer);
    drainTimer = undefined;
    queue.length = 0;
    behindBytes = 0;
    app.openStreams.delete(endNow);
    for (const cb of closeCbs) cb(reason);
    app.closed();
  };
  const endNow = (): void => {
    if (closed) return;
    if (!state.aborted) res.cork(() => res.end());
    finish('server');
  };
  /** Cut off a slow client: close the socket at once so uWS and the kernel free its bytes now. */
  const cutOff = (): void => {
    if (closed) return;
    const wasAborted = state.aborted;
    state.aborted = true;
    finish('slow');
    if (!wasAborted) res.close();
  };
  res.onAborted(() => {
    state.aborted = true;
    finish('client');
  });
  app.openStreams.add(endNow);
  /** Hands slices to uWS while it takes them whole; stops at the first refusal (uWS keeps that slice). */
  const pump = (): void => {
    if (closed || state.aborted) return;
    res.cork(() => {
      while (queue.length > 0 && !backpressured) {
        const head = queue[0] as { parts: readonly Buffer[]; bytes: number };
        const piece = head.parts[part] as Buffer;
        const end = Math.min(offset + streamSliceBytes, piece.length);
        if (end > offset) backpressured = !res.write(piece.subarray(offset, end));
        offset = end;
        if (offset < piece.length) continue;
        offset = 0;
        part++;
        if (part < head.parts.length) continue;
        part = 0;
        queue.shift();
        if (queue.length > 0) behindBytes -= (queue[0] as { bytes: number }).bytes;
      }
    });
    if (backpressured && !drainTimer) {
      drainTimer = setTimeout(() => {
        drainTimer = undefined;
        if (backpressured) cutOff();
      }, stream.drainTimeoutMs);
      drainTimer.unref();
    }
  };
  res.onWritable(() => {
    backpressured = false;
    if (drainTimer) clearTimeout(drainTimer);
    drainTimer = undefined;
    pump();
    return !backpressured;
  });
  const stream: ServerStream = {
    drainTimeoutMs: streamDrainTimeoutMsDefault,
    open: (status, headers) => {
      if (closed || opened) return;
      opened = true;
      res.cork(() => {
        res.writeStatus(statusLine(status));
        if (cors) for (const k in cors) res.writeHeader(k, cors[k] as string);
        for (const k in headers) res.writeHeader(k, headers[k] as string);
      });
      app.opened(status);
    },
    write: (chunk) => {
      if (closed) return false;
      const parts = typeof chunk === 'string' ? [Buffer.from(chunk)] : Buffer.isBuffer(chunk) ? [chunk] : chunk;
      let bytes = 0;
      for (const p of parts) bytes += p.length;
      if (bytes === 0) return true;
      queue.push({ parts, bytes });
      if (queue.length > 1) {
        behindBytes += bytes;
        if (behindBytes > entry.maxBufferedBytes) {
          cutOff();
          return false;
        }
      }
      if (!backpressured) pump();
      return !closed;
    },
    end: (chunk) => {
      if (closed) return;
      // Whatever is still queued is dropped: ending is the server's decision, not a slow client's.
      if (chunk !== undefined && !state.aborted) res.cork(() => res.end(chunk));
      else if (!state.aborted) res.cork(() => res.end());
      finish('server');
    },
    get bufferedBytes() {
      return behindBytes;
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
          finish('server');
        } else endNow();
      });
    }
  } catch (err) {
    if (!opened) {
      app.send(app.errorResult(err, request as HttpRequest<unknown>));
      finish('server');
    } else endNow();
  }
}
