/**
 * The one place a thrown value becomes an HTTP answer (hono's HTTPException plus its error
 * handler): an HttpError carries its own status and message; anything else is a bug in a handler,
 * answered 500 for that request only, logged with its route and counted. It does not write the
 * answer (app.ts does) and decides no status for domain outcomes (services do).
 */
import { InFlight } from './in-flight.js';
import type { FailureSink, HttpRequest, HttpResult } from './types.js';

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

/**
 * The answer to a handler's throw or rejection: an HttpError's own status, else a 500 for this
 * request only, logged with the method and route pattern and counted (http_handler_errors_total).
 */
export function errorResult(sink: FailureSink, err: unknown, request: HttpRequest<unknown>): HttpResult {
  if (err instanceof HttpError) {
    const r: HttpResult = { status: err.status, body: { error: err.message } };
    if (err.headers) r.headers = err.headers;
    return r;
  }
  const route = request instanceof InFlight && request.route !== '' ? request.route : `${request.method} (no route)`;
  sink.countHandlerError(route, 'threw');
  sink.logger.error({ err, method: request.method, route, path: request.path }, `${sink.name}: handler failed`);
  return { status: 500, body: { error: 'internal server error' } };
}
