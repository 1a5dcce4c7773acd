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
import type { Registry } from '../util/metrics.js';
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
import { createRequestDurations, RouteSeries, semconvMethod, type RequestDurations } from './request-metrics.js';
import {
  initTracing,
  serviceTracer,
  startServerSpan,
  tracingRequested,
  type ServiceTracer,
} from '../tracing/tracing.js';

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
  /** http_server_request_duration_seconds, once measureRequests() gave the app a registry. */
  private durations: RequestDurations | undefined;
  /** The series of requests no route matched (http_route=""). */
  private readonly unmatched = new RouteSeries(undefined);
  /** This service's tracer while tracing is on (set by listen()); undefined costs one test per request. */
  private serverTracer: ServiceTracer | undefined;

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

  /** The OpenTelemetry service.name of this app's spans. */
  get serviceName(): string {
    return this.opts.serviceName ?? `simlab-${this.opts.name}`;
  }

  /**
   * Records every answered request of this app in http_server_request_duration_seconds on
   * `registry` (healthRoutes calls it with the service's registry; once per app).
   */
  measureRequests(registry: Registry): void {
    if (this.durations) throw new Error(`${this.opts.name}: request durations are already measured`);
    this.durations = createRequestDurations(registry);
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
    const entry: RouteEntry = {
      kind: 'json',
      route,
      handler: handler as Handler<unknown>,
      check,
      errors,
      opts,
      series: new RouteSeries(pattern),
    };
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
    const series = new RouteSeries(pattern);
    this.router.add('GET', pattern, {
      kind: 'stream',
      route: `GET ${pattern}`,
      handler,
      maxBufferedBytes,
      docs,
      series,
    });
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
      series: this.unmatched,
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
    // Tracing (TRACING_ENABLED=true) starts here for whichever service listens first, so every
    // service traces however it was started; each app then takes its own service's tracer.
    if (tracingRequested() && (await initTracing(this.serviceName)))
      this.serverTracer = serviceTracer(this.serviceName);
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
    state.series = this.unmatched;
    // A SERVER span per request, only when tracing is on (otherwise this is one property test),
    // continuing the caller's trace when the request carries a W3C traceparent.
    if (this.serverTracer !== undefined) state.span = this.startRequestSpan(this.serverTracer, res, state, queryString);
    res.onAborted(() => {
      state.aborted = true;
      endSpan(state);
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
    state.series = entry.series;
    if (state.span && entry !== this.fallbackEntry) {
      state.span.updateName(`${method} ${entry.series.template}`);
      state.span.setAttribute('http.route', entry.series.template);
    }
    state.params = m.params;
    if (queryString !== '') state.query = new URLSearchParams(queryString);
    const request: HttpRequest<unknown> = state;

    if (entry.kind === 'stream') {
      const hooks = {
        openStreams: this.openStreams,
        opened: (status: number) => {
          this.answered(state, status);
          this.opts.onResponse?.('GET', status);
        },
        closed: () => endSpan(state),
        errorResult: (err: unknown, req: HttpRequest<unknown>) => this.errorResult(err, req),
        send: (r: HttpResult) => this.send(res, state, r, cors, 'GET'),
      };
      // The stream's handler runs in the request's span too (its log lines carry the trace).
      if (state.span) state.span.run(() => runStream(res, state, entry, cors, hooks));
      else runStream(res, state, entry, cors, hooks);
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

  /**
   * The request's SERVER span, named and attributed as OpenTelemetry's HTTP semantic conventions
   * say (the name becomes `METHOD /route/{template}` once a route matches).
   */
  private startRequestSpan(st: ServiceTracer, res: uWS.HttpResponse, state: InFlight, query: string) {
    const method = semconvMethod(state.method);
    const attributes: Record<string, string | number | boolean> = {
      'http.request.method': method,
      'url.path': state.path,
      'url.scheme': 'http',
      'network.protocol.version': '1.1',
    };
    if (method !== state.method) attributes['http.request.method_original'] = state.method;
    if (query !== '') attributes['url.query'] = query;
    const host = state.header('host');
    if (host !== undefined) {
      const colon = host.lastIndexOf(':');
      const bracket = host.lastIndexOf(']');
      if (colon > bracket && colon > 0) {
        attributes['server.address'] = host.slice(0, colon);
        const port = Number(host.slice(colon + 1));
        if (Number.isInteger(port)) attributes['server.port'] = port;
      } else attributes['server.address'] = host;
    }
    const agent = state.header('user-agent');
    if (agent !== undefined) attributes['user_agent.original'] = agent;
    const peer = Buffer.from(res.getRemoteAddressAsText()).toString();
    if (peer !== '') {
      attributes['client.address'] = peer;
      attributes['network.peer.address'] = peer;
    }
    return startServerSpan(st, method === '_OTHER' ? 'HTTP' : method, state, attributes);
  }

  /** Bookkeeping of one answered request: its duration and its span's status (once per request). */
  private answered(state: InFlight, status: number): void {
    if (this.durations !== undefined) {
      (state.series ?? this.unmatched).record(
        this.durations,
        state.method,
        status,
        (performance.now() - state.startMs) / 1000,
      );
    }
    const span = state.span;
    if (span) {
      span.setAttribute('http.response.status_code', status);
      // Server spans: only a 5xx is an error (a 4xx is the caller's).
      if (status >= 500) span.fail(String(status));
    }
  }

  /** @internal Parses the body if the route wants it, then runs the handler and sends its answer (BodyHost). */
  runHandler(res: uWS.HttpResponse, state: InFlight, route: RouteEntry, cors: CorsHeaders): void {
    // Inside the request's span, so the handler's spans and log lines (and the adapter's own, in
    // the callbacks registered here) carry its trace.
    if (state.span) state.span.run(() => this.invokeHandler(res, state, route, cors));
    else this.invokeHandler(res, state, route, cors);
  }

  private invokeHandler(res: uWS.HttpResponse, state: InFlight, route: RouteEntry, cors: CorsHeaders): void {
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
      result = route.handler(request);
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
    this.answered(state, out.status);
    endSpan(state);
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

/** Ends the request's span once, whichever of answer, abort or stream close comes first. */
function endSpan(state: InFlight): void {
  const span = state.span;
  if (span === undefined) return;
  state.span = undefined;
  span.end();
}
