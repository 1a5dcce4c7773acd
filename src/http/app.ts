/**
 * The one uWebSockets.js adapter shared by every simlab service. Services register routes with
 * TypeBox schemas and plain handlers; this module owns everything uWS: routing with path
 * parameters, query parsing, body reading with a size cap (413 before buffering more), JSON parsing,
 * validation at the edge (400 naming the field and the rule, JSON nesting and size limits before
 * parsing), `{error}` bodies, aborted requests, corked writes, CORS, streaming responses (SSE) and
 * WebSockets. No request can take the process down: a handler's throw or rejection, or a result
 * that cannot be serialised, fails that one request with a 500, logged with its route and counted.
 * It holds no domain logic.
 */
import uWS from 'uWebSockets.js';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import type { Logger } from '../util/logger.js';
import { Router, type Method } from './router.js';
import { formatValidationError } from './validation.js';
import { jsonShapeProblem } from './json-limits.js';
import { WsClient, type WsBehavior } from './ws.js';
import { runStream, type StreamHandler } from './stream.js';
import { startSpan, tracing, type SpanHandle } from '../tracing/tracing.js';

export const bodyLimitBytesDefault = 1024 * 1024;

/** A request as handlers see it: everything copied out of uWS (whose request object dies after the first await). */
export interface HttpRequest<B = unknown> {
  method: Method;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  body: B;
  /** The raw body bytes (empty when none was sent). */
  rawBody: Buffer;
  remoteAddress: string;
}

export interface HttpResult {
  status: number;
  /** Serialized as JSON unless `raw` is given. Omitted for 204. */
  body?: unknown;
  /** A pre-serialized body (with its own content-type header). */
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

/** Throw from a handler to answer `{error: message}` with this status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export type Handler<B> = (req: HttpRequest<B>) => HttpResult | Promise<HttpResult>;

export interface RouteOptions {
  /** TypeBox schema for a JSON body; a body that fails it is a 400 naming the field. */
  body?: TSchema;
  /** Accept an empty body (then `body` is undefined) even though a schema is given. */
  bodyOptional?: boolean;
  /** Read the body but do not parse it as JSON (proxies). */
  rawBody?: boolean;
  /**
   * Runs before the body is parsed and validated (authentication): a result answers at once, so
   * a request without a valid token gets 401, not a 400 about its body.
   */
  before?: (req: HttpRequest<undefined>) => HttpResult | undefined;
  /** Overrides the app's handlerDeadlineMs for this route (e.g. a long scenario run). */
  deadlineMs?: number;
}

interface RouteEntry {
  kind: 'json';
  /** `METHOD /pattern` as registered (logs and metric labels: bounded, unlike paths). */
  route: string;
  handler: Handler<unknown>;
  check: ((v: unknown) => boolean) | undefined;
  errors: ((v: unknown) => Iterable<unknown>) | undefined;
  opts: RouteOptions;
}

export interface StreamEntry {
  kind: 'stream';
  route: string;
  handler: StreamHandler;
  maxBufferedBytes: number;
}

type Entry = RouteEntry | StreamEntry;

export interface CorsOptions {
  /** Allowed origins; '*' allows any. */
  origins: string[] | '*';
}

export interface HttpAppOptions {
  name: string;
  logger: Logger;
  cors?: CorsOptions | false;
  bodyLimitBytes?: number;
  /** Runs before every route's own `before` hook and body parsing (e.g. service-wide auth). */
  before?: (req: HttpRequest<undefined>) => HttpResult | undefined;
  /** Called after every request with its status (metrics). Keep it cheap. */
  onResponse?: (method: string, status: number) => void;
  /**
   * Longest an async handler may take before the request is answered 503 `{error}` (counted as
   * kind="timeout"; the handler's late result is dropped). Off when undefined.
   */
  handlerDeadlineMs?: number;
}

/**
 * How a request failed inside the process (each a 500 for that request only): its handler (or a
 * before hook, or a stream handler) threw or rejected, or its result could not be serialised or
 * written (JSON.stringify's RangeError on deep values, TypeError on BigInt or cycles, a header
 * value with CR/LF), or it missed the handler deadline (handlerDeadlineMs, a 503).
 */
export type HandlerErrorKind = 'threw' | 'unserializable' | 'timeout';

/** Methods the adapter routes; uWS itself closes the connection on any method outside these plus TRACE and CONNECT. */
export const routedMethods: readonly Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];

const statusText: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 202: '202 Accepted', 204: '204 No Content', 301: '301 Moved Permanently',
  302: '302 Found', 304: '304 Not Modified', 400: '400 Bad Request', 401: '401 Unauthorized', 403: '403 Forbidden',
  404: '404 Not Found', 405: '405 Method Not Allowed', 409: '409 Conflict', 412: '412 Precondition Failed',
  413: '413 Payload Too Large', 415: '415 Unsupported Media Type', 422: '422 Unprocessable Entity',
  429: '429 Too Many Requests', 500: '500 Internal Server Error', 502: '502 Bad Gateway',
  503: '503 Service Unavailable', 504: '504 Gateway Timeout',
};

export function statusLine(status: number): string {
  return statusText[status] ?? `${status} Status`;
}

const methods = new Set<Method>(routedMethods);
const bodyMethods = new Set<Method>(['POST', 'PUT', 'PATCH', 'DELETE']);

export class HttpApp {
  readonly uws: uWS.TemplatedApp;
  private readonly router = new Router<Entry>();
  private fallbackEntry: RouteEntry | undefined;
  private listenSocket: uWS.us_listen_socket | undefined;
  private readonly bodyLimit: number;
  private readonly wsClients = new Set<WsClient<unknown>>();
  private readonly openStreams = new Set<() => void>();
  /** Requests failed inside the process, by route and kind (http_handler_errors_total). */
  private readonly handlerErrors = new Map<string, { route: string; kind: HandlerErrorKind; count: number }>();

  constructor(private readonly opts: HttpAppOptions) {
    this.bodyLimit = opts.bodyLimitBytes ?? bodyLimitBytesDefault;
    this.uws = uWS.App();
  }

  get logger(): Logger {
    return this.opts.logger;
  }

  get name(): string {
    return this.opts.name;
  }

  /** Requests that failed inside the process so far (a 500 each), by route and kind. */
  handlerErrorCounts(): Array<{ route: string; kind: HandlerErrorKind; count: number }> {
    return [...this.handlerErrors.values()];
  }

  private countHandlerError(route: string, kind: HandlerErrorKind): void {
    const key = `${kind} ${route}`;
    const e = this.handlerErrors.get(key);
    if (e) e.count++;
    else this.handlerErrors.set(key, { route, kind, count: 1 });
  }

  route<B = unknown>(method: Method, pattern: string, handler: Handler<B>, opts: RouteOptions = {}): this {
    let check: RouteEntry['check'];
    let errors: RouteEntry['errors'];
    if (opts.body) {
      const compiled = Compile(opts.body);
      check = (v) => compiled.Check(v);
      errors = (v) => compiled.Errors(v);
    }
    this.router.add(method, pattern, { kind: 'json', route: `${method} ${pattern}`, handler: handler as Handler<unknown>, check, errors, opts });
    return this;
  }

  get<B = undefined>(pattern: string, handler: Handler<B>, opts?: RouteOptions): this {
    return this.route('GET', pattern, handler, opts);
  }
  post<B = unknown>(pattern: string, handler: Handler<B>, opts?: RouteOptions): this {
    return this.route('POST', pattern, handler, opts);
  }
  put<B = unknown>(pattern: string, handler: Handler<B>, opts?: RouteOptions): this {
    return this.route('PUT', pattern, handler, opts);
  }
  patch<B = unknown>(pattern: string, handler: Handler<B>, opts?: RouteOptions): this {
    return this.route('PATCH', pattern, handler, opts);
  }
  delete<B = undefined>(pattern: string, handler: Handler<B>, opts?: RouteOptions): this {
    return this.route('DELETE', pattern, handler, opts);
  }

  /** A streaming (SSE) GET route. A client whose unsent bytes exceed maxBufferedBytes is disconnected. */
  stream(pattern: string, handler: StreamHandler, maxBufferedBytes = 256 * 1024): this {
    this.router.add('GET', pattern, { kind: 'stream', route: `GET ${pattern}`, handler, maxBufferedBytes });
    return this;
  }

  /** Handles every request no route matched (a proxy); without it, such requests get 404/405. */
  fallback(handler: Handler<undefined>): this {
    this.fallbackEntry = { kind: 'json', route: 'fallback', handler: handler as Handler<unknown>, check: undefined, errors: undefined, opts: { rawBody: true } };
    return this;
  }

  /** A WebSocket endpoint. */
  ws<D>(pattern: string, behavior: WsBehavior<D>): this {
    const maxQueueBytes = behavior.maxQueueBytes ?? 1024 * 1024;
    const clients = this.wsClients;
    const route = `WS ${pattern}`;
    /** A service callback that throws fails its own WebSocket event (logged, counted), never the process. */
    const guard = (what: string, fn: () => void): void => {
      try {
        fn();
      } catch (err) {
        this.countHandlerError(route, 'threw');
        this.opts.logger.error({ err, route }, `${this.opts.name}: WebSocket ${what} handler failed`);
      }
    };
    const failed = (err: unknown): { reject: { status: number; error: string } } => {
      if (err instanceof HttpError) return { reject: { status: err.status, error: err.message } };
      this.countHandlerError(route, 'threw');
      this.opts.logger.error({ err, route }, `${this.opts.name}: WebSocket upgrade handler failed`);
      return { reject: { status: 500, error: 'internal server error' } };
    };
    this.uws.ws<{ client?: WsClient<D>; data: D }>(pattern, {
      compression: uWS.DISABLED,
      maxPayloadLength: behavior.maxPayloadBytes ?? 64 * 1024,
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
                res.writeStatus(statusLine(decision.reject.status)).writeHeader('content-type', 'application/json')
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
    return this;
  }

  async listen(port: number, host = '0.0.0.0'): Promise<number> {
    this.uws.any('/*', (res, req) => {
      try {
        this.dispatch(res, req);
      } catch (err) {
        // A bug in the adapter itself: fail this request, never the process.
        this.countHandlerError('dispatch', 'threw');
        this.opts.logger.error({ err }, `${this.opts.name}: dispatching a request failed`);
        try {
          res.cork(() => res.writeStatus(statusLine(500)).writeHeader('content-type', 'application/json').end(internalError, true));
        } catch {
          // already answered or aborted: nothing left to do
        }
      }
    });
    return new Promise((resolve, reject) => {
      this.uws.listen(host, port, (sock) => {
        if (!sock) {
          reject(new Error(`${this.opts.name}: cannot listen on ${host}:${port}`));
          return;
        }
        this.listenSocket = sock;
        resolve(uWS.us_socket_local_port(sock));
      });
    });
  }

  /** Stops listening and closes every connection (HTTP keep-alive, streams, WebSockets). */
  close(): void {
    for (const end of [...this.openStreams]) end();
    for (const c of [...this.wsClients]) c.close(1001, 'server shutting down');
    if (this.listenSocket) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = undefined;
    (this.uws as unknown as { close?: () => void }).close?.();
  }

  private corsHeaders(origin: string | undefined): Record<string, string> | undefined {
    const cors = this.opts.cors;
    if (!cors) return undefined;
    if (cors.origins === '*') return origin === undefined ? anyOriginCors : { 'access-control-allow-origin': origin, vary: 'Origin' };
    if (origin && cors.origins.includes(origin)) return { 'access-control-allow-origin': origin, vary: 'Origin' };
    return undefined;
  }

  private dispatch(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
    const rawMethod = req.getCaseSensitiveMethod().toUpperCase() as Method;
    const path = req.getUrl();
    const queryString = req.getQuery() ?? '';
    // Header names and values, copied now (uWS's request dies when this function returns). A flat
    // list, not an object: storing fresh strings as object keys costs a string-table lookup each,
    // and most routes never read a header; the object is built on first use.
    const headerList: string[] = [];
    req.forEach((k, v) => {
      headerList.push(k, v);
    });
    const state = new InFlight(res, rawMethod, path, headerList);
    res.onAborted(() => {
      state.aborted = true;
      state.span?.end();
    });
    const cors = this.corsHeaders(state.header('origin'));

    if (!methods.has(rawMethod)) {
      // TRACE and CONNECT (the only other methods uWS passes on): 405 with what the path allows.
      const known = this.router.match('GET', path).methods;
      const allow = known ? this.allowHeader(known) : routedMethods.join(', ');
      this.send(res, state, { status: 405, body: { error: `method ${rawMethod} not allowed; allowed: ${allow}` }, headers: { allow } }, cors, rawMethod);
      return;
    }
    const method = rawMethod;
    if (method === 'OPTIONS' && this.opts.cors) {
      const m = this.router.match('GET', path);
      const allow = m.methods ? [...m.methods.keys()] : ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
      this.send(res, state, {
        status: 204,
        headers: {
          ...(cors ?? {}),
          'access-control-allow-methods': [...allow, 'OPTIONS'].join(', '),
          'access-control-allow-headers': state.header('access-control-request-headers') ?? 'content-type, authorization, if-match, last-event-id',
          'access-control-max-age': '600',
        },
      }, undefined, method);
      return;
    }

    const m = this.router.match(method, path);
    let entry: Entry | undefined = m.route;
    if (!entry) {
      if (this.fallbackEntry) entry = this.fallbackEntry;
      else if (m.methods) {
        const allow = this.allowHeader(m.methods);
        this.send(res, state, { status: 405, body: { error: `method ${method} not allowed on ${path}; allowed: ${allow}` }, headers: { allow } }, cors, method);
        return;
      } else {
        this.send(res, state, { status: 404, body: { error: `no route for ${method} ${path}` } }, cors, method);
        return;
      }
    }
    state.route = entry.route;
    // A root span per request, only when tracing is on (otherwise this is one property test).
    if (tracing.on) state.span = startSpan(`${method} ${path}`, undefined, { 'http.method': method, 'http.target': path });
    state.params = m.params;
    if (queryString !== '') state.query = new URLSearchParams(queryString);
    const request: HttpRequest<unknown> = state;

    if (entry.kind === 'stream') {
      runStream(res, state, entry, cors, {
        openStreams: this.openStreams,
        onResponse: this.opts.onResponse,
        errorResult: (err, req) => this.errorResult(err, req),
        send: (r) => this.send(res, state, r, cors, 'GET'),
      });
      return;
    }
    const route = entry;
    const hooks = route.opts.before ? (this.opts.before ? [this.opts.before, route.opts.before] : [route.opts.before]) : this.opts.before ? [this.opts.before] : noHooks;
    for (const hook of hooks) {
      let early: HttpResult | undefined;
      try {
        early = hook(request as HttpRequest<undefined>);
      } catch (err) {
        early = this.errorResult(err, request);
      }
      if (early) {
        this.send(res, state, early, cors, method, bodyMethods.has(method) && state.header('content-length') !== '0');
        return;
      }
    }
    if (!bodyMethods.has(method)) {
      this.runHandler(res, state, route, cors);
      return;
    }
    const declared = state.header('content-length');
    if (declared !== undefined && Number(declared) > this.bodyLimit) {
      // Answer at once but keep the connection and discard what the client is still sending
      // (closing now would reset the connection and the client would lose the 413).
      res.onData(() => {});
      this.send(res, state, { status: 413, body: { error: `request body exceeds ${this.bodyLimit} bytes` } }, cors, method);
      return;
    }
    let chunks: Buffer[] | undefined;
    let size = 0;
    let refused = false;
    const onChunk = (chunk: ArrayBuffer, isLast: boolean): void => {
      size += chunk.byteLength;
      if (size > this.bodyLimit) {
        refused = true;
        this.send(res, state, { status: 413, body: { error: `request body exceeds ${this.bodyLimit} bytes` } }, cors, method);
        return;
      }
      // Copied (uWS reuses the chunk's memory after this call) into Node's pooled buffers: one copy,
      // no allocation of its own for small bodies.
      if (isLast && chunks === undefined) {
        if (chunk.byteLength > 0) request.rawBody = Buffer.from(new Uint8Array(chunk));
        this.runHandler(res, state, route, cors);
        return;
      }
      if (chunk.byteLength > 0) (chunks ??= []).push(Buffer.from(new Uint8Array(chunk)));
      if (isLast) {
        request.rawBody = chunks === undefined ? emptyBody : chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
        this.runHandler(res, state, route, cors);
      }
    };
    res.onData((chunk, isLast) => {
      if (refused) return;
      try {
        onChunk(chunk, isLast);
      } catch (err) {
        // Thrown inside a uWS callback it would reach the process and leave this request unanswered.
        refused = true;
        this.send(res, state, this.errorResult(err, request), cors, method);
      }
    });
  }

  private runHandler(res: uWS.HttpResponse, state: InFlight, route: RouteEntry, cors: Record<string, string> | undefined): void {
    const request: HttpRequest<unknown> = state;
    if (!route.opts.rawBody && (route.check || request.rawBody.length > 0)) {
      if (request.rawBody.length === 0) {
        if (route.check && !route.opts.bodyOptional) {
          this.send(res, state, { status: 400, body: { error: 'request body is required (a JSON object)' } }, cors, request.method);
          return;
        }
      } else {
        // Nesting and size first, on the raw bytes: JSON.parse itself copes with any depth, but
        // validation, handlers, stores and JSON.stringify recurse.
        const shape = jsonShapeProblem(request.rawBody);
        if (shape !== undefined) {
          this.send(res, state, { status: 400, body: { error: shape } }, cors, request.method);
          return;
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(request.rawBody.toString('utf8'));
        } catch (err) {
          this.send(res, state, { status: 400, body: { error: `malformed JSON: ${(err as Error).message}` } }, cors, request.method);
          return;
        }
        let valid = true;
        let message = '';
        try {
          if (route.check && !route.check(parsed)) {
            valid = false;
            message = formatValidationError(route.errors ? route.errors(parsed) : []);
          }
        } catch (err) {
          this.send(res, state, this.errorResult(err, request), cors, request.method);
          return;
        }
        if (!valid) {
          this.send(res, state, { status: 400, body: { error: message } }, cors, request.method);
          return;
        }
        request.body = parsed;
      }
    }
    let result: HttpResult | Promise<HttpResult>;
    try {
      result = state.span ? state.span.run(() => route.handler(request)) : route.handler(request);
    } catch (err) {
      this.send(res, state, this.errorResult(err, request), cors, request.method);
      return;
    }
    if (result instanceof Promise) {
      const deadlineMs = route.opts.deadlineMs ?? this.opts.handlerDeadlineMs;
      const timer = deadlineMs === undefined ? undefined : setTimeout(() => {
        if (state.done || state.aborted) return;
        this.countHandlerError(route.route, 'timeout');
        this.opts.logger.error({ method: request.method, route: route.route, path: request.path, deadlineMs }, `${this.opts.name}: handler missed its deadline; answered 503`);
        this.send(res, state, { status: 503, body: { error: `no answer within ${deadlineMs} ms (the handler deadline); the operation may still complete` } }, cors, request.method);
      }, deadlineMs);
      result.then(
        (r) => {
          clearTimeout(timer);
          this.send(res, state, r, cors, request.method);
        },
        (err: unknown) => {
          clearTimeout(timer);
          this.send(res, state, this.errorResult(err, request), cors, request.method);
        },
      );
    } else {
      this.send(res, state, result, cors, request.method);
    }
  }

  /** The Allow header of a path: its methods, HEAD with GET, OPTIONS when CORS answers preflights. */
  private allowHeader(known: ReadonlyMap<Method, unknown>): string {
    const allow: string[] = [...known.keys()];
    if (known.has('GET') && !known.has('HEAD')) allow.push('HEAD');
    if (this.opts.cors && !known.has('OPTIONS')) allow.push('OPTIONS');
    return allow.join(', ');
  }

  /**
   * The answer to a handler's throw or rejection: an HttpError's own status, else a 500 for this
   * request only, logged with the method and route pattern and counted (http_handler_errors_total).
   */
  private errorResult(err: unknown, request: HttpRequest<unknown>): HttpResult {
    if (err instanceof HttpError) {
      const r: HttpResult = { status: err.status, body: { error: err.message } };
      if (err.headers) r.headers = err.headers;
      return r;
    }
    const route = request instanceof InFlight && request.route !== '' ? request.route : `${request.method} (no route)`;
    this.countHandlerError(route, 'threw');
    this.opts.logger.error({ err, method: request.method, route, path: request.path }, `${this.opts.name}: handler failed`);
    return { status: 500, body: { error: 'internal server error' } };
  }

  /**
   * Writes one answer. Never throws: a result that cannot be serialised or written (a value too
   * deep for JSON.stringify, a BigInt, a cycle, a header value with CR/LF, no result at all) is
   * replaced by a 500 `{error}` for this request, logged with its route and counted.
   */
  private send(res: uWS.HttpResponse, state: InFlight, r: HttpResult, cors: Record<string, string> | undefined, method: string, close = false): void {
    if (state.aborted || state.done) return;
    state.done = true;
    let out: Serialized;
    try {
      out = serialize(r);
    } catch (err) {
      const route = state.route !== '' ? state.route : `${state.method} (no route)`;
      this.countHandlerError(route, 'unserializable');
      this.opts.logger.error({ err, method: state.method, route, path: state.path }, `${this.opts.name}: the result could not be serialised; answered 500`);
      out = unserializableAnswer;
    }
    if (state.span) {
      state.span.setAttribute('http.status_code', out.status);
      state.span.end();
    }
    try {
      this.opts.onResponse?.(method, out.status);
    } catch (err) {
      this.opts.logger.error({ err }, `${this.opts.name}: onResponse hook failed`);
    }
    try {
      res.cork(() => {
        res.writeStatus(statusLine(out.status));
        if (cors) for (const k in cors) res.writeHeader(k, cors[k] as string);
        for (let i = 0; i < out.headers.length; i += 2) res.writeHeader(out.headers[i] as string, out.headers[i + 1] as string);
        if (out.status === 204 || out.status === 304) {
          res.end('', close);
          return;
        }
        if (!out.hasType) res.writeHeader('content-type', out.raw ? 'application/octet-stream' : 'application/json');
        if (method === 'HEAD') {
          // HEAD: the headers GET would send, no body (a body would corrupt the next answer on the connection).
          // uWS cannot keep a connection alive after a body-less answer with a length; close it cleanly.
          res.endWithoutBody(Buffer.byteLength(out.payload), true);
          return;
        }
        res.end(out.payload, close);
      });
    } catch (err) {
      // uWS refused a write (it should not, after serialize): drop the connection, keep the process.
      this.countHandlerError(state.route !== '' ? state.route : `${state.method} (no route)`, 'unserializable');
      this.opts.logger.error({ err, method: state.method, route: state.route, path: state.path }, `${this.opts.name}: writing the answer failed; connection closed`);
      try {
        res.close();
      } catch {
        // already gone
      }
    }
  }
}

/** An answer checked and serialised before anything is written, so a bad one fails before the status line. */
interface Serialized {
  status: number;
  /** Flat [name, value, ...]: every value a string without CR, LF or NUL. */
  headers: string[];
  hasType: boolean;
  /** The body is `raw` (octet-stream by default), not JSON. */
  raw: boolean;
  payload: string | Buffer;
}

const internalError = JSON.stringify({ error: 'internal server error' });
const unserializableAnswer: Serialized = {
  status: 500,
  headers: [],
  hasType: false,
  raw: false,
  payload: JSON.stringify({ error: 'internal server error: the result could not be serialised' }),
};
const headerValueForbidden = /[\r\n\0]/;
/** Shared by every answer without headers of its own (never written to). */
const noHeaderList: string[] = [];

/** Checks and serialises a handler's result; throws (TypeError, RangeError) when it cannot be sent. */
function serialize(r: HttpResult): Serialized {
  if (r === null || typeof r !== 'object') throw new TypeError(`handler returned ${r === null ? 'null' : typeof r}, not a result`);
  const status = r.status;
  if (!Number.isInteger(status) || status < 100 || status > 599) throw new TypeError(`handler returned status ${String(status)}`);
  const headers: string[] = r.headers ? [] : noHeaderList;
  let hasType = false;
  if (r.headers) {
    for (const k in r.headers) {
      const v: unknown = r.headers[k];
      if (v === undefined) continue;
      if (typeof v !== 'string') throw new TypeError(`header ${k} is a ${typeof v}, not a string`);
      if (headerValueForbidden.test(v) || headerValueForbidden.test(k)) throw new TypeError(`header ${k} contains CR, LF or NUL`);
      if (k === 'content-type') hasType = true;
      headers.push(k, v);
    }
  }
  if (r.raw !== undefined) {
    if (typeof r.raw !== 'string' && !(r.raw instanceof Uint8Array)) throw new TypeError('raw body is neither a string nor bytes');
    return { status, headers, hasType, raw: true, payload: r.raw };
  }
  // JSON.stringify throws RangeError on values nested beyond the stack, TypeError on BigInt and
  // cycles; undefined (a function, a symbol) is sent as no body.
  const payload = r.body === undefined ? '' : (JSON.stringify(r.body) as string | undefined) ?? '';
  return { status, headers, hasType, raw: false, payload };
}

const emptyBody = Buffer.alloc(0);
/** Shared by every request without a query string (handlers only read queries). */
const emptyQuery = new URLSearchParams();

/** CORS headers of an answer to a request without an Origin (the same every time). */
const anyOriginCors: Record<string, string> = Object.freeze({ 'access-control-allow-origin': '*', vary: 'Origin' });
const noParams: Record<string, string> = Object.freeze({}) as Record<string, string>;
const noHooks: Array<(req: HttpRequest<undefined>) => HttpResult | undefined> = [];

/**
 * One request in flight: what handlers see (HttpRequest) and the adapter's own state for it, in
 * one object. Headers are kept as a flat [name, value, ...] list until a handler reads `headers`.
 */
export class InFlight implements HttpRequest<unknown> {
  aborted = false;
  done = false;
  span: SpanHandle | undefined = undefined;
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

  /** Decoded only when a handler asks (login rate limiting), and only while the response is live (uWS forbids touching it afterwards). */
  get remoteAddress(): string {
    if (this.remote === undefined) this.remote = this.aborted || this.done ? '' : Buffer.from(this.res.getRemoteAddressAsText()).toString();
    return this.remote;
  }
}

