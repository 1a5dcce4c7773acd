/**
 * WebSocket pieces of the HTTP adapter: a client handle with a bounded send queue (bytes the
 * socket has not yet taken; past the cap a message is dropped and counted, never buffered without
 * bound) and a fan-out hub that publishes one serialized message to every matching client.
 */
import type uWS from 'uWebSockets.js';

export interface UpgradeInfo {
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  remoteAddress: string;
}

export type UpgradeDecision<D> = { reject: { status: number; error: string }; data?: undefined } | { reject?: undefined; data: D };

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
  dropped = 0;
  lastPongAt = Date.now();

  constructor(
    private readonly ws: uWS.WebSocket<unknown>,
    readonly data: D,
    private readonly maxQueueBytes: number,
  ) {}

  /** Sends a text frame unless the client's queue is over its cap (then the message is dropped and counted). */
  send(message: string | Buffer, isBinary = false): SendOutcome {
    if (this.closed) return 'closed';
    if (this.ws.getBufferedAmount() > this.maxQueueBytes) {
      this.dropped++;
      return 'dropped';
    }
    const r = this.ws.send(message, isBinary);
    if (r === 2) {
      this.dropped++;
      return 'dropped';
    }
    return r === 1 ? 'sent' : 'queued';
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

/** Fan-out to a set of clients; each client's queue is bounded, losses are counted per hub. */
export class WsHub<D> {
  readonly clients = new Set<WsClient<D>>();
  droppedTotal = 0;
  sentTotal = 0;

  add(c: WsClient<D>): void {
    this.clients.add(c);
  }

  remove(c: WsClient<D>): void {
    this.clients.delete(c);
  }

  get size(): number {
    return this.clients.size;
  }

  /** Sends `message` to every client for which `filter` (if given) is true. Returns how many got it. */
  publish(message: string, filter?: (c: WsClient<D>) => boolean): number {
    let n = 0;
    for (const c of this.clients) {
      if (filter && !filter(c)) continue;
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
