/**
 * WebSocket pieces of the HTTP adapter: a client handle with a bounded send queue (bytes the
 * socket has not yet taken; past the cap a message is dropped and counted, never buffered without
 * bound) and a fan-out hub that publishes one serialized message to every matching client. A hub
 * may cap its clients (admission is the service's upgrade decision) and tell a client, once its
 * queue has drained, how many messages were dropped for it. It knows nothing of event contents.
 * `wireWebSocket` holds the uWS endpoint wiring (upgrade decision, open/message/pong/drain/close),
 * so every uWS WebSocket call is in this file; app.ts only registers the endpoint.
 */
import uWS from 'uWebSockets.js';
import { HttpError } from './errors.js';
import { statusLine } from './respond.js';
import type { FailureSink } from './types.js';

export interface UpgradeInfo {
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  remoteAddress: string;
}

export type UpgradeDecision<D> =
  | { reject: { status: number; error: string }; data?: undefined }
  | { reject?: undefined; data: D };

export interface WsBehavior<D> {
  /** Decide on the upgrade: reject with a status (403 for a refused Origin, 401 ...) or accept with per-client data. */
  upgrade?: (info: UpgradeInfo) => UpgradeDecision<D> | Promise<UpgradeDecision<D>>;
  open?: (client: WsClient<D>) => void;
  message?: (client: WsClient<D>, message: string | Buffer, isBinary: boolean) => void;
  close?: (client: WsClient<D>, code: number) => void;
  pong?: (client: WsClient<D>) => void;
  drain?: (client: WsClient<D>) => void;
  /** Per-client queue cap in bytes (default 1 MiB). */
  maxQueueBytes?: number;
  maxPayloadBytes?: number;
  idleTimeoutSec?: number;
  autoPing?: boolean;
}

export type SendOutcome = 'sent' | 'queued' | 'dropped' | 'closed';

let nextClientId = 1;

export class WsClient<D> {
  readonly id = nextClientId++;
  closed = false;
  /** Messages dropped for this client since it connected (its queue was over the cap). */
  dropped = 0;
  /** Dropped messages the client has not yet been told about (see WsHub's dropNotice). */
  droppedUnreported = 0;
  lastPongAt = Date.now();

  constructor(
    private readonly ws: uWS.WebSocket<unknown>,
    readonly data: D,
    private readonly maxQueueBytes: number,
  ) {}

  /**
   * Sends a text frame unless the client's queue is over its cap (then the message is dropped and
   * counted). A frame that carries several messages (a batch) counts as `count` of them when dropped.
   */
  send(message: string | Buffer, isBinary = false, count = 1): SendOutcome {
    if (this.closed) return 'closed';
    if (this.ws.getBufferedAmount() > this.maxQueueBytes) {
      this.dropped += count;
      this.droppedUnreported += count;
      return 'dropped';
    }
    const r = this.ws.send(message, isBinary);
    if (r === 2) {
      this.dropped += count;
      this.droppedUnreported += count;
      return 'dropped';
    }
    return r === 1 ? 'sent' : 'queued';
  }

  /** Sends a control frame of the service (not an event): never counted as a drop; false when not taken. */
  sendNotice(message: string): boolean {
    if (this.closed || this.ws.getBufferedAmount() > this.maxQueueBytes) return false;
    return this.ws.send(message, false) !== 2;
  }

  /** The queue cap in bytes this client was opened with. */
  get queueBytesMax(): number {
    return this.maxQueueBytes;
  }

  bufferedAmount(): number {
    return this.closed ? 0 : this.ws.getBufferedAmount();
  }

  ping(): void {
    if (!this.closed) this.ws.ping();
  }

  close(code = 1000, reason = ''): void {
    if (this.closed) return;
    try {
      this.ws.end(code, reason);
    } catch {
      // already closed underneath
    }
  }

  /** Hard close without a close handshake. */
  terminate(): void {
    if (this.closed) return;
    try {
      this.ws.close();
    } catch {
      // already closed
    }
  }

  markClosed(): void {
    this.closed = true;
  }
}

export interface WsHubOptions<D> {
  /** Most clients at once; `hasRoom()` says whether one more may be admitted. Default: no cap. */
  clientsMax?: number;
  /**
   * Builds the frame that tells a client `count` messages were dropped for it. Sent once the
   * client's queue is back under half its cap (on drain, or before the next message published to
   * it), so a client learns it missed something and can resynchronise. Default: no notice.
   */
  dropNotice?: (client: WsClient<D>, count: number) => string;
}

/** Fan-out to a set of clients; each client's queue is bounded, losses are counted per hub. */
export class WsHub<D> {
  readonly clients = new Set<WsClient<D>>();
  droppedTotal = 0;
  sentTotal = 0;
  /** Drop notices delivered (each covers one or more dropped messages of one client). */
  noticesSent = 0;
  readonly clientsMax: number;

  constructor(private readonly opts: WsHubOptions<D> = {}) {
    this.clientsMax = opts.clientsMax ?? Infinity;
  }

  /** True while one more client fits under the cap (ask in the upgrade; refuse the upgrade otherwise). */
  hasRoom(): boolean {
    return this.clients.size < this.clientsMax;
  }

  /** Adds a client; past the cap (an upgrade that raced another) it is closed with 1013 and false returned. */
  add(c: WsClient<D>): boolean {
    if (!this.hasRoom()) {
      c.close(1013, 'too many clients');
      return false;
    }
    this.clients.add(c);
    return true;
  }

  /** Call from the endpoint's drain handler: delivers a pending drop notice once the queue is low. */
  drained(c: WsClient<D>): void {
    this.flushDropNotice(c);
  }

  /** Sends the client its drop notice if it has unreported drops and room in its queue. */
  private flushDropNotice(c: WsClient<D>): void {
    const notice = this.opts.dropNotice;
    if (!notice || c.droppedUnreported === 0 || c.closed) return;
    if (c.bufferedAmount() > c.queueBytesMax / 2) return;
    const count = c.droppedUnreported;
    if (c.sendNotice(notice(c, count))) {
      c.droppedUnreported -= count;
      this.noticesSent++;
    }
  }

  remove(c: WsClient<D>): void {
    this.clients.delete(c);
  }

  get size(): number {
    return this.clients.size;
  }

  /**
   * Sends one client a frame standing for `count` messages (a batch of them, or 1): its drop notice
   * first when one is due; sent or dropped, it counts as `count` messages in the hub's totals.
   */
  sendTo(c: WsClient<D>, message: string, count = 1): SendOutcome {
    if (c.droppedUnreported > 0) this.flushDropNotice(c);
    const r = c.send(message, false, count);
    if (r === 'dropped') this.droppedTotal += count;
    else if (r !== 'closed') this.sentTotal += count;
    return r;
  }

  /** Sends `message` to every client for which `filter` (if given) is true. Returns how many got it. */
  publish(message: string, filter?: (c: WsClient<D>) => boolean): number {
    let n = 0;
    for (const c of this.clients) {
      if (filter && !filter(c)) continue;
      if (c.droppedUnreported > 0) this.flushDropNotice(c);
      const r = c.send(message);
      if (r === 'dropped') this.droppedTotal++;
      else if (r !== 'closed') {
        n++;
        this.sentTotal++;
      }
    }
    return n;
  }
}

/** Default per-client send-queue cap in bytes (WsBehavior.maxQueueBytes); past it messages are dropped. */
export const wsQueueBytesMaxDefault = 1024 * 1024;
/** Default largest incoming message in bytes (WsBehavior.maxPayloadBytes); uWS closes the socket past it. */
export const wsPayloadBytesMaxDefault = 64 * 1024;

/**
 * Registers a WebSocket endpoint on `uws`: runs the service's upgrade decision (sync or async; a
 * throw or rejection is a 500, an HttpError its own status), then tracks each open client in
 * `clients` and calls the service's callbacks. A callback that throws fails its own event (logged
 * and counted on `sink`), never the process.
 */
export function wireWebSocket<D>(
  uws: uWS.TemplatedApp,
  pattern: string,
  behavior: WsBehavior<D>,
  clients: Set<WsClient<unknown>>,
  sink: FailureSink,
): void {
  const maxQueueBytes = behavior.maxQueueBytes ?? wsQueueBytesMaxDefault;
  const route = `WS ${pattern}`;
  /** A service callback that throws fails its own WebSocket event (logged, counted), never the process. */
  const guard = (what: string, fn: () => void): void => {
    try {
      fn();
    } catch (err) {
      sink.countHandlerError(route, 'threw');
      sink.logger.error({ err, route }, `${sink.name}: WebSocket ${what} handler failed`);
    }
  };
  const failed = (err: unknown): { reject: { status: number; error: string } } => {
    if (err instanceof HttpError) return { reject: { status: err.status, error: err.message } };
    sink.countHandlerError(route, 'threw');
    sink.logger.error({ err, route }, `${sink.name}: WebSocket upgrade handler failed`);
    return { reject: { status: 500, error: 'internal server error' } };
  };
  uws.ws<{ client?: WsClient<D>; data: D }>(pattern, {
    compression: uWS.DISABLED,
    maxPayloadLength: behavior.maxPayloadBytes ?? wsPayloadBytesMaxDefault,
    idleTimeout: behavior.idleTimeoutSec ?? 0,
    maxBackpressure: maxQueueBytes,
    closeOnBackpressureLimit: 0,
    sendPingsAutomatically: behavior.autoPing ?? false,
    upgrade: (res, req, context) => {
      let aborted = false;
      res.onAborted(() => {
        aborted = true;
      });
      const headers: Record<string, string> = {};
      req.forEach((k, v) => {
        headers[k] = v;
      });
      const info = {
        path: req.getUrl(),
        query: new URLSearchParams(req.getQuery() ?? ''),
        headers,
        remoteAddress: Buffer.from(res.getRemoteAddressAsText()).toString(),
      };
      const key = headers['sec-websocket-key'] ?? '';
      const protocol = headers['sec-websocket-protocol'] ?? '';
      const extensions = headers['sec-websocket-extensions'] ?? '';
      const finish = (decision: { reject?: { status: number; error: string }; data?: D }): void => {
        if (aborted) return;
        try {
          res.cork(() => {
            if (decision.reject) {
              res
                .writeStatus(statusLine(decision.reject.status))
                .writeHeader('content-type', 'application/json')
                .end(JSON.stringify({ error: String(decision.reject.error) }));
              return;
            }
            res.upgrade({ data: decision.data as D }, key, protocol, extensions, context);
          });
        } catch (err) {
          // A decision that is not one (undefined, a bad status): this upgrade fails, nothing else.
          failed(err);
          aborted = true;
          try {
            res.close();
          } catch {
            // already answered or gone
          }
        }
      };
      if (!behavior.upgrade) {
        finish({ data: undefined as D });
        return;
      }
      try {
        const d = behavior.upgrade(info);
        if (d instanceof Promise) d.then(finish, (err: unknown) => finish(failed(err)));
        else finish(d);
      } catch (err) {
        finish(failed(err));
      }
    },
    open: (ws) => {
      const ud = ws.getUserData();
      const client = new WsClient<D>(ws as unknown as uWS.WebSocket<unknown>, ud.data, maxQueueBytes);
      ud.client = client;
      clients.add(client as WsClient<unknown>);
      if (behavior.open) guard('open', () => behavior.open?.(client));
    },
    message: (ws, message, isBinary) => {
      const client = ws.getUserData().client;
      if (!client || !behavior.message) return;
      const payload = isBinary ? Buffer.from(message.slice(0)) : Buffer.from(message).toString('utf8');
      guard('message', () => behavior.message?.(client, payload, isBinary));
    },
    pong: (ws) => {
      const client = ws.getUserData().client;
      if (client) {
        client.lastPongAt = Date.now();
        if (behavior.pong) guard('pong', () => behavior.pong?.(client));
      }
    },
    drain: (ws) => {
      const client = ws.getUserData().client;
      if (client && behavior.drain) guard('drain', () => behavior.drain?.(client));
    },
    close: (ws, code) => {
      const client = ws.getUserData().client;
      if (!client) return;
      client.markClosed();
      clients.delete(client as WsClient<unknown>);
      if (behavior.close) guard('close', () => behavior.close?.(client, code));
    },
  });
}
