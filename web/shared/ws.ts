/**
 * The page's one WebSocket to its service: same host and port as the page (location.host, never a
 * hard-coded port), reconnecting with capped backoff, its connection state and (re)connect count
 * exposed as signals, every parsed frame handed to the subscribers (each element of an array frame,
 * in order). It does not interpret frames: each page's model does, and resynchronises when `opened`
 * changes.
 */
import { signal, type Signal } from '@preact/signals';

export type SocketStatus = 'connecting' | 'open' | 'closed';

/** First reconnect delay; it doubles after each failed attempt up to the max. */
export const reconnectDelayMsMin = 250;
export const reconnectDelayMsMax = 5_000;

export type FrameHandler = (frame: unknown) => void;

export class EventSocket {
  /** Where the connection is now. */
  readonly status: Signal<SocketStatus> = signal('connecting');
  /** +1 on every successful open: a page resynchronises its model when it changes. */
  readonly opened: Signal<number> = signal(0);
  /** Frames that could not be parsed as JSON (shown, not thrown). */
  readonly badFrames: Signal<number> = signal(0);
  private ws: WebSocket | undefined;
  private handlers = new Set<FrameHandler>();
  private delayMs = reconnectDelayMsMin;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(private readonly path: string) {}

  /** The socket URL for `path` on the page's own origin. */
  static urlFor(path: string, loc: { protocol: string; host: string } = location): string {
    return `${loc.protocol === 'https:' ? 'wss' : 'ws'}://${loc.host}${path}`;
  }

  subscribe(h: FrameHandler): () => void {
    this.handlers.add(h);
    return () => this.handlers.delete(h);
  }

  start(): void {
    this.stopped = false;
    this.connect();
  }

  /** Sends a text frame when the socket is open; false when it is not (the caller resends on `opened`). */
  send(text: string): boolean {
    if (this.ws === undefined || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(text);
    return true;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.ws?.close(1000, 'page closed');
    this.ws = undefined;
    this.status.value = 'closed';
  }

  private connect(): void {
    this.status.value = 'connecting';
    const ws = new WebSocket(EventSocket.urlFor(this.path));
    this.ws = ws;
    ws.onopen = () => {
      this.delayMs = reconnectDelayMsMin;
      this.status.value = 'open';
      this.opened.value++;
    };
    ws.onmessage = (ev: MessageEvent) => {
      if (typeof ev.data !== 'string') return;
      let frame: unknown;
      try {
        frame = JSON.parse(ev.data);
      } catch {
        this.badFrames.value++;
        return;
      }
      // A batched stream (the replication service's `?batch_ms=`) sends an array of frames at once.
      if (Array.isArray(frame)) {
        for (const f of frame) for (const h of this.handlers) h(f);
      } else for (const h of this.handlers) h(frame);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      this.status.value = 'closed';
      if (this.stopped) return;
      this.timer = setTimeout(() => this.connect(), this.delayMs);
      this.delayMs = Math.min(this.delayMs * 2, reconnectDelayMsMax);
    };
  }
}
