/**
 * The vocabulary of the HTTP adapter: the request a handler sees, the result it returns, route and
 * app options, and the route table's entries. Types and the routed-method list only; no behaviour
 * (app.ts dispatches, the other modules of src/http/ each do one step of it).
 */
import type { TSchema } from 'typebox';
import type { Logger } from '../util/logger.js';
import type { RouteSeries } from './request-metrics.js';
import type { Method } from './router.js';
import type { StreamHandler } from './stream.js';

/** A request as handlers see it: everything copied out of uWS (whose request object dies after the first await). */
export interface HttpRequest<B = unknown> {
  method: Method;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** One header by lower-case name without building `headers` (the adapter's requests have it). */
  header?(name: string): string | undefined;
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

export type Handler<B> = (req: HttpRequest<B>) => HttpResult | Promise<HttpResult>;

export interface RouteOptions extends RouteDocs {
  /** TypeBox schema for a JSON body; a body that fails it is a 400 naming the field. */
  body?: TSchema;
  /** Accept an empty body (then `body` is undefined) even though a schema is given. */
  bodyOptional?: boolean;
  /**
   * The service's own wording for a refused body (default: formatValidationError, and "request body
   * is required (a JSON object)" for an empty one), so a route moving onto `body` keeps its messages.
   */
  bodyErrors?: { missing?: string; format?: (errors: Iterable<unknown>) => string };
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

/**
 * What the OpenAPI document (openapi.ts) says about a route beyond its method, path and `body`
 * schema. Documentation only: nothing here changes how a request is answered.
 */
export interface RouteDocs {
  /** One line for the reference page and the document's `summary`. */
  summary?: string;
  description?: string;
  /** Groups on the reference page; default: the first path segment after /api/v1. */
  tags?: string[];
  /** An object schema whose properties are the query parameters (each a string on the wire). */
  query?: TSchema;
  /**
   * The body the handler decodes itself (after authentication, with its own messages): documented
   * as the request body, but not validated by the adapter (unlike `body`).
   */
  documentedBody?: TSchema;
  /** The success answer's JSON schema (default: any JSON value). */
  response?: TSchema;
  /** The success status (default 200; 204 means no body). */
  successStatus?: number;
  /** The success answer's media type when it is not JSON (e.g. text/html, text/event-stream). */
  responseType?: string;
  /** Security scheme names (the service's components.securitySchemes) the route needs; [] = none. */
  security?: readonly string[];
  /** The security is optional (e.g. only when tokens are configured). */
  securityOptional?: boolean;
}

export interface RouteEntry {
  kind: 'json';
  /** `METHOD /pattern` as registered (logs and metric labels: bounded, unlike paths). */
  route: string;
  handler: Handler<unknown>;
  check: ((v: unknown) => boolean) | undefined;
  errors: ((v: unknown) => Iterable<unknown>) | undefined;
  opts: RouteOptions;
  /** The route's template (http_route, span names) and its request-duration series. */
  series: RouteSeries;
}

export interface StreamEntry {
  kind: 'stream';
  route: string;
  handler: StreamHandler;
  maxBufferedBytes: number;
  docs?: RouteDocs;
  series: RouteSeries;
}

/** One registered route as the OpenAPI generator sees it (HttpApp.routeTable()). */
export interface RouteInfo {
  method: Method;
  /** As registered, `:param` spelling. */
  pattern: string;
  kind: 'json' | 'stream' | 'ws';
  /** The adapter-validated body schema, when the route has one. */
  body?: TSchema;
  bodyOptional?: boolean;
  docs: RouteDocs;
}

export type Entry = RouteEntry | StreamEntry;

export interface CorsOptions {
  /** Allowed origins; '*' allows any. */
  origins: string[] | '*';
}

export interface HttpAppOptions {
  name: string;
  /**
   * The OpenTelemetry `service.name` of this app's spans (default `simlab-<name>`); apps of one
   * service (a service and its proxy) share it.
   */
  serviceName?: string;
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

/** The CORS headers an answer carries; undefined when CORS is off or the origin is not allowed. */
export type CorsHeaders = Record<string, string> | undefined;

/** Where a failure inside the process is counted and logged (the app; http_handler_errors_total). */
export interface FailureSink {
  readonly name: string;
  readonly logger: Logger;
  countHandlerError(route: string, kind: HandlerErrorKind): void;
}
