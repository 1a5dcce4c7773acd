/**
 * The one uWebSockets.js adapter shared by every simlab service (hono-base's place): route
 * registration, listen/close, and `dispatch`, which matches a request and runs its steps in order:
 * method and CORS preflight, route match (404/405 with Allow), before hooks, body (body.ts: cap,
 * JSON limits, validation), the handler (with its deadline), and one `send` per request (respond.ts
 * writes it). Errors become answers in errors.ts; streams live in stream.ts, WebSockets in ws.ts,
 * the request object in in-flight.ts, the vocabulary in types.ts. No request can take the process
 * down: a handler's throw or rejection, or a result that cannot be serialised, fails that one
 * request with a 500, logged with its route and counted. It holds no domain logic.
 */
import uWS from 'uWebSockets.js';
import { Compile } from 'typebox/compile';
import type { Logger } from '../util/logger.js';
import { Router, type Method } from './router.js';
import { bodyLimitBytesDefault, parseBody, readBody, type BodyHost } from './body.js';
import { errorResult } from './errors.js';
import { InFlight } from './in-flight.js';
import {
  allowHeader,
  corsHeaders,
  internalError,
  preflightResult,
  serialize,
  statusLine,
  unserializableAnswer,
  writeAnswer,
  type Serialized,
} from './respond.js';
import { runStream, type StreamHandler } from './stream.js';
import {
  routedMethods,
  type Entry,
  type FailureSink,
  type Handler,
  type HandlerErrorKind,
  type HttpAppOptions,
  type HttpRequest,
  type HttpResult,
  type RouteDocs,
  type RouteEntry,
  type RouteInfo,
  type RouteOptions,
  type CorsHeaders,
} from './types.js';
import { WsClient, wireWebSocket, type WsBehavior } from './ws.js';
import { startSpan, tracing } from '../tracing/tracing.js';

// The names other modules of src/http/ (and index.ts) have always imported from here.
export { bodyLimitBytesDefault } from './body.js';
export { HttpError } from './errors.js';
export { InFlight } from './in-flight.js';
export { statusLine } from './respond.js';
export { routedMethods } from './types.js';
export type {
  CorsOptions,
  Handler,
  HandlerErrorKind,
  HttpAppOptions,
  HttpRequest,
  HttpResult,
  RouteDocs,
  RouteInfo,
  RouteOptions,
  StreamEntry,
} from './types.js';

const methods = new Set<Method>(routedMethods);
const bodyMethods = new Set<Method>(['POST', 'PUT', 'PATCH', 'DELETE']);
const noHooks: Array<(req: HttpRequest<undefined>) => HttpResult | undefined> = [];

export class HttpApp implements BodyHost, FailureSink {
  readonly uws: uWS.TemplatedApp;
  private readonly router = new Router<Entry>();
  /** Every registered route in registration order (the OpenAPI document's source; routeTable()). */
  private readonly routes: RouteInfo[] = [];
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

  /** The registered routes (JSON, stream and WebSocket), in registration order: what openapi.ts documents. */
  routeTable(): readonly RouteInfo[] {
    return this.routes;
  }

  /** Requests that failed inside the process so far (a 500 each), by route and kind. */
  handlerErrorCounts(): Array<{ route: string; kind: HandlerErrorKind; count: number }> {
    return [...this.handlerErrors.values()];
  }

  /** @internal Counts one request failed inside the process (FailureSink). */
  countHandlerError(route: string, kind: HandlerErrorKind): void {
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
    const route = `${method} ${pattern}`;
    const entry: RouteEntry = { kind: 'json', route, handler: handler as Handler<unknown>, check, errors, opts };
    this.router.add(method, pattern, entry);
    const info: RouteInfo = { method, pattern, kind: 'json', docs: opts };
    if (opts.body) info.body = opts.body;
    if (opts.bodyOptional) info.bodyOptional = true;
    this.routes.push(info);
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
  stream(pattern: string, handler: StreamHandler, maxBufferedBytes = 256 * 1024, docs: RouteDocs = {}): this {
    this.router.add('GET', pattern, { kind: 'stream', route: `GET ${pattern}`, handler, maxBufferedBytes, docs });
    this.routes.push({ method: 'GET', pattern, kind: 'stream', docs });
    return this;
  }

  /** Handles every request no route matched (a proxy); without it, such requests get 404/405. */
  fallback(handler: Handler<undefined>): this {
    this.fallbackEntry = {
      kind: 'json',
      route: 'fallback',
      handler: handler as Handler<unknown>,
      check: undefined,
      errors: undefined,
      opts: { rawBody: true },
    };
    return this;
  }

  /** A WebSocket endpoint (wired in ws.ts). */
  ws<D>(pattern: string, behavior: WsBehavior<D>, docs: RouteDocs = {}): this {
    wireWebSocket(this.uws, pattern, behavior, this.wsClients, this);
    this.routes.push({ method: 'GET', pattern, kind: 'ws', docs });
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
          res.cork(() =>
            res.writeStatus(statusLine(500)).writeHeader('content-type', 'application/json').end(internalError, true),
          );
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
    const cors = corsHeaders(this.opts.cors, state.header('origin'));

    if (!methods.has(rawMethod)) {
      // TRACE and CONNECT (the only other methods uWS passes on): 405 with what the path allows.
      const known = this.router.match('GET', path).methods;
      const allow = known ? allowHeader(known, Boolean(this.opts.cors)) : routedMethods.join(', ');
      const error = `method ${rawMethod} not allowed; allowed: ${allow}`;
      this.send(res, state, { status: 405, body: { error }, headers: { allow } }, cors, rawMethod);
      return;
    }
    const method = rawMethod;
    if (method === 'OPTIONS' && this.opts.cors) {
      const known = this.router.match('GET', path).methods;
      const preflight = preflightResult(known, cors, state.header('access-control-request-headers'));
      this.send(res, state, preflight, undefined, method);
      return;
    }

    const m = this.router.match(method, path);
    let entry: Entry | undefined = m.route;
    if (!entry) {
      if (this.fallbackEntry) entry = this.fallbackEntry;
      else if (m.methods) {
        const allow = allowHeader(m.methods, Boolean(this.opts.cors));
        const error = `method ${method} not allowed on ${path}; allowed: ${allow}`;
        this.send(res, state, { status: 405, body: { error }, headers: { allow } }, cors, method);
        return;
      } else {
        this.send(res, state, { status: 404, body: { error: `no route for ${method} ${path}` } }, cors, method);
        return;
      }
    }
    state.route = entry.route;
    // A root span per request, only when tracing is on (otherwise this is one property test).
    if (tracing.on) {
      state.span = startSpan(`${method} ${path}`, undefined, { 'http.method': method, 'http.target': path });
    }
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
    const hooks = route.opts.before
      ? this.opts.before
        ? [this.opts.before, route.opts.before]
        : [route.opts.before]
      : this.opts.before
        ? [this.opts.before]
        : noHooks;
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
    readBody(this, res, state, route, cors, this.bodyLimit);
  }

  /** @internal Parses the body if the route wants it, then runs the handler and sends its answer (BodyHost). */
  runHandler(res: uWS.HttpResponse, state: InFlight, route: RouteEntry, cors: CorsHeaders): void {
    const request: HttpRequest<unknown> = state;
    if (!route.opts.rawBody && (route.check || request.rawBody.length > 0)) {
      const refused = parseBody(this, request, route);
      if (refused) {
        this.send(res, state, refused, cors, request.method);
        return;
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
      const timer =
        deadlineMs === undefined
          ? undefined
          : setTimeout(() => {
              if (state.done || state.aborted) return;
              this.countHandlerError(route.route, 'timeout');
              this.opts.logger.error(
                { method: request.method, route: route.route, path: request.path, deadlineMs },
                `${this.opts.name}: handler missed its deadline; answered 503`,
              );
              const error =
                `no answer within ${deadlineMs} ms (the handler deadline); ` + 'the operation may still complete';
              this.send(res, state, { status: 503, body: { error } }, cors, request.method);
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

  /** @internal The answer to a thrown value (errors.ts). */
  errorResult(err: unknown, request: HttpRequest<unknown>): HttpResult {
    return errorResult(this, err, request);
  }

  /**
   * @internal Writes one answer. Never throws: a result that cannot be serialised or written (a
   * value too deep for JSON.stringify, a BigInt, a cycle, a header value with CR/LF, no result at
   * all) is replaced by a 500 `{error}` for this request, logged with its route and counted.
   */
  send(res: uWS.HttpResponse, state: InFlight, r: HttpResult, cors: CorsHeaders, method: string, close = false): void {
    if (state.aborted || state.done) return;
    state.done = true;
    let out: Serialized;
    try {
      out = serialize(r);
    } catch (err) {
      const route = state.route !== '' ? state.route : `${state.method} (no route)`;
      this.countHandlerError(route, 'unserializable');
      this.opts.logger.error(
        { err, method: state.method, route, path: state.path },
        `${this.opts.name}: the result could not be serialised; answered 500`,
      );
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
      writeAnswer(res, out, cors, method, close);
    } catch (err) {
      // uWS refused a write (it should not, after serialize): drop the connection, keep the process.
      this.countHandlerError(state.route !== '' ? state.route : `${state.method} (no route)`, 'unserializable');
      this.opts.logger.error(
        { err, method: state.method, route: state.route, path: state.path },
        `${this.opts.name}: writing the answer failed; connection closed`,
      );
      try {
        res.close();
      } catch {
        // already gone
      }
    }
  }
}
