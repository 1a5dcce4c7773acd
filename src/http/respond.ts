/**
 * Writing answers (hono's context response helpers): the status-line table, checking and
 * serialising a result before anything is written, the write itself (HEAD, 204/304, raw and JSON
 * rules, all in one cork) and the CORS headers, preflight answer and Allow header. It does not
 * decide what to answer, and it counts or logs nothing: app.ts's `send` does the bookkeeping.
 */
import type uWS from 'uWebSockets.js';
import type { Method } from './router.js';
import type { CorsHeaders, CorsOptions, HttpResult } from './types.js';

const statusText: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  202: '202 Accepted',
  204: '204 No Content',
  301: '301 Moved Permanently',
  302: '302 Found',
  304: '304 Not Modified',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  412: '412 Precondition Failed',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  422: '422 Unprocessable Entity',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  502: '502 Bad Gateway',
  503: '503 Service Unavailable',
  504: '504 Gateway Timeout',
};

export function statusLine(status: number): string {
  return statusText[status] ?? `${status} Status`;
}

/** An answer checked and serialised before anything is written, so a bad one fails before the status line. */
export interface Serialized {
  status: number;
  /** Flat [name, value, ...]: every value a string without CR, LF or NUL. */
  headers: string[];
  hasType: boolean;
  /** The body is `raw` (octet-stream by default), not JSON. */
  raw: boolean;
  payload: string | Buffer;
}

/** The body of a 500 written when dispatch itself failed. */
export const internalError = JSON.stringify({ error: 'internal server error' });

/** What is sent instead of a result that could not be serialised. */
export const unserializableAnswer: Serialized = {
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
export function serialize(r: HttpResult): Serialized {
  if (r === null || typeof r !== 'object') {
    throw new TypeError(`handler returned ${r === null ? 'null' : typeof r}, not a result`);
  }
  const status = r.status;
  if (!Number.isInteger(status) || status < 100 || status > 599) {
    throw new TypeError(`handler returned status ${String(status)}`);
  }
  const headers: string[] = r.headers ? [] : noHeaderList;
  let hasType = false;
  if (r.headers) {
    for (const k in r.headers) {
      const v: unknown = r.headers[k];
      if (v === undefined) continue;
      if (typeof v !== 'string') throw new TypeError(`header ${k} is a ${typeof v}, not a string`);
      if (headerValueForbidden.test(v) || headerValueForbidden.test(k)) {
        throw new TypeError(`header ${k} contains CR, LF or NUL`);
      }
      if (k === 'content-type') hasType = true;
      headers.push(k, v);
    }
  }
  if (r.raw !== undefined) {
    if (typeof r.raw !== 'string' && !(r.raw instanceof Uint8Array)) {
      throw new TypeError('raw body is neither a string nor bytes');
    }
    return { status, headers, hasType, raw: true, payload: r.raw };
  }
  // JSON.stringify throws RangeError on values nested beyond the stack, TypeError on BigInt and
  // cycles; undefined (a function, a symbol) is sent as no body.
  const payload = r.body === undefined ? '' : ((JSON.stringify(r.body) as string | undefined) ?? '');
  return { status, headers, hasType, raw: false, payload };
}

/**
 * Writes a serialised answer in one cork: status, CORS headers, the answer's headers, then the body
 * by the rules (no body for 204/304; for HEAD the headers GET would send and no body; a default
 * content-type). `close` ends the connection after it. Throws when uWS refuses a write.
 */
export function writeAnswer(
  res: uWS.HttpResponse,
  out: Serialized,
  cors: CorsHeaders,
  method: string,
  close: boolean,
): void {
  res.cork(() => {
    // uWS writes `200 OK` itself when no status was written: one native call less per answer.
    if (out.status !== 200) res.writeStatus(statusLine(out.status));
    if (cors) for (const k in cors) res.writeHeader(k, cors[k] as string);
    const headers = out.headers;
    for (let i = 0; i < headers.length; i += 2) res.writeHeader(headers[i] as string, headers[i + 1] as string);
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
}

/** CORS headers of an answer to a request without an Origin (the same every time). */
const anyOriginCors: Record<string, string> = Object.freeze({ 'access-control-allow-origin': '*', vary: 'Origin' });

/** The CORS headers for a request from `origin`; undefined when CORS is off or the origin is not allowed. */
export function corsHeaders(cors: CorsOptions | false | undefined, origin: string | undefined): CorsHeaders {
  if (!cors) return undefined;
  if (cors.origins === '*') {
    return origin === undefined ? anyOriginCors : { 'access-control-allow-origin': origin, vary: 'Origin' };
  }
  if (origin && cors.origins.includes(origin)) return { 'access-control-allow-origin': origin, vary: 'Origin' };
  return undefined;
}

/** The answer to a CORS preflight: the path's methods (or every body method when none matched), cached 10 minutes. */
export function preflightResult(
  known: ReadonlyMap<Method, unknown> | undefined,
  cors: CorsHeaders,
  requestHeaders: string | undefined,
): HttpResult {
  const allow = known ? [...known.keys()] : ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
  return {
    status: 204,
    headers: {
      ...(cors ?? {}),
      'access-control-allow-methods': [...allow, 'OPTIONS'].join(', '),
      'access-control-allow-headers': requestHeaders ?? 'content-type, authorization, if-match, last-event-id',
      'access-control-max-age': '600',
    },
  };
}

/** The Allow header of a path: its methods, HEAD with GET, OPTIONS when CORS answers preflights. */
export function allowHeader(known: ReadonlyMap<Method, unknown>, corsOn: boolean): string {
  const allow: string[] = [...known.keys()];
  if (known.has('GET') && !known.has('HEAD')) allow.push('HEAD');
  if (corsOn && !known.has('OPTIONS')) allow.push('OPTIONS');
  return allow.join(', ');
}
