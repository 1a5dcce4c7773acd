/**
 * Request bodies (hono's body utils and validator): reading the bytes under the size cap (a
 * declared content-length over it is a 413 before anything is buffered, a stream that grows past
 * it a 413 at once), then JSON shape limits, parsing and schema validation, each failure a 400
 * naming the problem. It does not run handlers or write answers; the host (app.ts) does both.
 */
import type uWS from 'uWebSockets.js';
import { jsonShapeProblem } from './json-limits.js';
import { emptyBody, type InFlight } from './in-flight.js';
import type { CorsHeaders, HttpRequest, HttpResult, RouteEntry } from './types.js';
import { formatValidationError } from './validation.js';

/** Largest request body accepted, in bytes, unless the app sets bodyLimitBytes; past it, a 413. */
export const bodyLimitBytesDefault = 1024 * 1024;

/** What reading a body needs from the app that owns the request. */
export interface BodyHost {
  send(res: uWS.HttpResponse, state: InFlight, r: HttpResult, cors: CorsHeaders, method: string, close?: boolean): void;
  runHandler(res: uWS.HttpResponse, state: InFlight, route: RouteEntry, cors: CorsHeaders): void;
  errorResult(err: unknown, request: HttpRequest<unknown>): HttpResult;
}

function tooLarge(limitBytes: number): HttpResult {
  return { status: 413, body: { error: `request body exceeds ${limitBytes} bytes` } };
}

/**
 * Reads the body of `state` into `rawBody` (at most `limitBytes`), then hands the request to
 * `host.runHandler`; answers 413 itself when the body is too large.
 */
export function readBody(
  host: BodyHost,
  res: uWS.HttpResponse,
  state: InFlight,
  route: RouteEntry,
  cors: CorsHeaders,
  limitBytes: number,
): void {
  const method = state.method;
  const declared = state.header('content-length');
  if (declared !== undefined && Number(declared) > limitBytes) {
    // Answer at once but keep the connection and discard what the client is still sending
    // (closing now would reset the connection and the client would lose the 413).
    res.onData(() => {});
    host.send(res, state, tooLarge(limitBytes), cors, method);
    return;
  }
  let chunks: Buffer[] | undefined;
  let size = 0;
  let refused = false;
  const onChunk = (chunk: ArrayBuffer, isLast: boolean): void => {
    size += chunk.byteLength;
    if (size > limitBytes) {
      refused = true;
      host.send(res, state, tooLarge(limitBytes), cors, method);
      return;
    }
    // Copied (uWS reuses the chunk's memory after this call) into Node's pooled buffers: one copy,
    // no allocation of its own for small bodies.
    if (isLast && chunks === undefined) {
      if (chunk.byteLength > 0) state.rawBody = Buffer.from(new Uint8Array(chunk));
      host.runHandler(res, state, route, cors);
      return;
    }
    if (chunk.byteLength > 0) (chunks ??= []).push(Buffer.from(new Uint8Array(chunk)));
    if (isLast) {
      if (chunks === undefined) state.rawBody = emptyBody;
      else state.rawBody = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      host.runHandler(res, state, route, cors);
    }
  };
  res.onData((chunk, isLast) => {
    if (refused) return;
    try {
      onChunk(chunk, isLast);
    } catch (err) {
      // Thrown inside a uWS callback it would reach the process and leave this request unanswered.
      refused = true;
      host.send(res, state, host.errorResult(err, state), cors, method);
    }
  });
}

/**
 * Parses and validates the raw body of a JSON route into `request.body`. Returns the answer when it
 * is refused (a 400 naming the problem, or the error answer when the validator itself threw), else
 * undefined. Call it only for a JSON route with a schema or a non-empty body.
 */
export function parseBody(
  host: Pick<BodyHost, 'errorResult'>,
  request: HttpRequest<unknown>,
  route: RouteEntry,
): HttpResult | undefined {
  if (request.rawBody.length === 0) {
    if (route.check && !route.opts.bodyOptional) {
      return {
        status: 400,
        body: { error: route.opts.bodyErrors?.missing ?? 'request body is required (a JSON object)' },
      };
    }
    return undefined;
  }
  // Nesting and size first, on the raw bytes: JSON.parse itself copes with any depth, but
  // validation, handlers, stores and JSON.stringify recurse.
  const shape = jsonShapeProblem(request.rawBody);
  if (shape !== undefined) return { status: 400, body: { error: shape } };
  let parsed: unknown;
  try {
    parsed = JSON.parse(request.rawBody.toString('utf8'));
  } catch (err) {
    return { status: 400, body: { error: `malformed JSON: ${(err as Error).message}` } };
  }
  let valid = true;
  let message = '';
  try {
    if (route.check && !route.check(parsed)) {
      valid = false;
      message = (route.opts.bodyErrors?.format ?? formatValidationError)(route.errors ? route.errors(parsed) : []);
    }
  } catch (err) {
    return host.errorResult(err, request);
  }
  if (!valid) return { status: 400, body: { error: message } };
  request.body = parsed;
  return undefined;
}
