/**
 * One request in flight (hono's request wrapper): what handlers see as HttpRequest and the
 * adapter's own state for it (aborted, answered, matched route, span), in one object. Headers stay
 * a flat list until read and the remote address is decoded on demand. It does no I/O of its own.
 */
import type uWS from 'uWebSockets.js';
import type { SpanHandle } from '../tracing/tracing.js';
import type { RouteSeries } from './request-metrics.js';
import type { Method } from './router.js';
import type { HttpRequest } from './types.js';

/** The body of a request without one (shared, never written to). */
export const emptyBody = Buffer.alloc(0);
/** Shared by every request without a query string (handlers only read queries). */
const emptyQuery = new URLSearchParams();
const noParams: Record<string, string> = Object.freeze({}) as Record<string, string>;

/**
 * One request in flight: what handlers see (HttpRequest) and the adapter's own state for it, in
 * one object. Headers are kept as a flat [name, value, ...] list until a handler reads `headers`.
 */
export class InFlight implements HttpRequest<unknown> {
  aborted = false;
  done = false;
  span: SpanHandle | undefined = undefined;
  /** When the adapter got the request (performance.now(), ms): the start of its recorded duration. */
  readonly startMs = performance.now();
  /** The matched route's duration series (the app's unmatched series until a route matches). */
  series: RouteSeries | undefined = undefined;
  /** The matched route (`METHOD /pattern`), '' until one is chosen. */
  route = '';
  params: Record<string, string> = noParams;
  query: URLSearchParams = emptyQuery;
  body: unknown = undefined;
  rawBody: Buffer = emptyBody;
  private headerObject: Record<string, string> | undefined;
  private remote: string | undefined;

  constructor(
    private readonly res: uWS.HttpResponse,
    readonly method: Method,
    readonly path: string,
    private readonly headerList: string[],
  ) {}

  /** One header by lower-case name (the last one wins, as with the object). */
  header(name: string): string | undefined {
    const l = this.headerList;
    for (let i = l.length - 2; i >= 0; i -= 2) if (l[i] === name) return l[i + 1];
    return undefined;
  }

  get headers(): Record<string, string> {
    if (this.headerObject === undefined) {
      const h: Record<string, string> = {};
      const l = this.headerList;
      for (let i = 0; i < l.length; i += 2) h[l[i] as string] = l[i + 1] as string;
      this.headerObject = h;
    }
    return this.headerObject;
  }

  /**
   * Decoded only when a handler asks (login rate limiting), and only while the response is live
   * (uWS forbids touching it afterwards).
   */
  get remoteAddress(): string {
    if (this.remote === undefined) {
      this.remote = this.aborted || this.done ? '' : Buffer.from(this.res.getRemoteAddressAsText()).toString();
    }
    return this.remote;
  }
}
