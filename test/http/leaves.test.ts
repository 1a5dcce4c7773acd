// Unit tests for the leaves of the HTTP adapter (respond.ts, body.ts, errors.ts): the rules each
// applies on its own, without a server. The adapter as a whole stays covered by adapter.test.ts.
import t from 'tap';
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { parseBody } from '../../src/http/body.js';
import { errorResult, HttpError } from '../../src/http/errors.js';
import { allowHeader, corsHeaders, preflightResult, serialize, statusLine } from '../../src/http/respond.js';
import type { FailureSink, HttpRequest, HttpResult, RouteEntry } from '../../src/http/types.js';
import type { Method } from '../../src/http/router.js';
import { jsonNestingDepthMax } from '../../src/http/json-limits.js';
import { silentLogger } from '../../src/util/logger.js';

function sink(): FailureSink & { counted: string[] } {
  const counted: string[] = [];
  return {
    name: 'test',
    logger: silentLogger(),
    counted,
    countHandlerError: (route, kind) => void counted.push(`${kind} ${route}`),
  };
}

function request(raw: string): HttpRequest<unknown> {
  return {
    method: 'POST',
    path: '/x',
    params: {},
    query: new URLSearchParams(),
    headers: {},
    body: undefined,
    rawBody: Buffer.from(raw),
    remoteAddress: '',
  };
}

function jsonRoute(opts: { schema?: boolean; bodyOptional?: boolean; throws?: boolean } = {}): RouteEntry {
  const compiled = Compile(Type.Object({ a: Type.Number() }));
  return {
    kind: 'json',
    route: 'POST /x',
    handler: () => ({ status: 200 }),
    check: opts.throws
      ? () => {
          throw new Error('validator bug');
        }
      : opts.schema
        ? (v) => compiled.Check(v)
        : undefined,
    errors: opts.schema ? (v) => compiled.Errors(v) : undefined,
    opts: { bodyOptional: opts.bodyOptional },
  };
}

t.test('statusLine names known statuses and numbers the rest', async (t) => {
  const cases = [
    { status: 200, want: '200 OK' },
    { status: 413, want: '413 Payload Too Large' },
    { status: 503, want: '503 Service Unavailable' },
    { status: 299, want: '299 Status' },
  ];
  for (const c of cases) t.equal(statusLine(c.status), c.want, `${c.status}`);
});

t.test('serialize checks a result before anything is written', async (t) => {
  const refused: Array<{ name: string; r: unknown }> = [
    { name: 'no result', r: undefined },
    { name: 'null', r: null },
    { name: 'a status below 100', r: { status: 99 } },
    { name: 'a fractional status', r: { status: 200.5 } },
    { name: 'a header that is not a string', r: { status: 200, headers: { x: 1 } } },
    { name: 'a header value with CR/LF', r: { status: 200, headers: { x: 'a\r\nb' } } },
    { name: 'a raw body that is neither string nor bytes', r: { status: 200, raw: 5 } },
    { name: 'a BigInt in the body', r: { status: 200, body: { n: 1n } } },
  ];
  for (const c of refused) t.throws(() => serialize(c.r as HttpResult), `${c.name} is refused`);
  const accepted = [
    {
      name: 'JSON body',
      r: { status: 201, body: { a: 1 } },
      want: { status: 201, raw: false, payload: '{"a":1}', hasType: false },
    },
    { name: 'no body', r: { status: 204 }, want: { status: 204, raw: false, payload: '', hasType: false } },
    {
      name: 'raw body with its type',
      r: { status: 200, raw: 'x', headers: { 'content-type': 'text/plain' } },
      want: { status: 200, raw: true, payload: 'x', hasType: true },
    },
  ];
  for (const c of accepted) {
    const out = serialize(c.r);
    t.same({ status: out.status, raw: out.raw, payload: out.payload, hasType: out.hasType }, c.want, c.name);
  }
  t.same(
    serialize({ status: 200, headers: { a: '1', b: undefined as unknown as string } }).headers,
    ['a', '1'],
    'undefined headers are skipped',
  );
});

t.test('corsHeaders answers allowed origins only', async (t) => {
  const cases = [
    { name: 'CORS off', cors: false as const, origin: 'http://a', want: undefined },
    {
      name: 'any origin, none sent',
      cors: { origins: '*' as const },
      origin: undefined,
      want: { 'access-control-allow-origin': '*', vary: 'Origin' },
    },
    {
      name: 'any origin, one sent: echoed',
      cors: { origins: '*' as const },
      origin: 'http://a',
      want: { 'access-control-allow-origin': 'http://a', vary: 'Origin' },
    },
    {
      name: 'a listed origin',
      cors: { origins: ['http://a'] },
      origin: 'http://a',
      want: { 'access-control-allow-origin': 'http://a', vary: 'Origin' },
    },
    { name: 'an unlisted origin', cors: { origins: ['http://a'] }, origin: 'http://b', want: undefined },
  ];
  for (const c of cases) t.same(corsHeaders(c.cors, c.origin), c.want, c.name);
});

t.test('allowHeader and preflightResult list what a path allows', async (t) => {
  const known = new Map<Method, unknown>([
    ['GET', 1],
    ['POST', 1],
  ]);
  const cases = [
    { name: 'GET brings HEAD; CORS brings OPTIONS', got: allowHeader(known, true), want: 'GET, POST, HEAD, OPTIONS' },
    { name: 'without CORS no OPTIONS', got: allowHeader(known, false), want: 'GET, POST, HEAD' },
    { name: 'no GET, no HEAD', got: allowHeader(new Map<Method, unknown>([['PUT', 1]]), false), want: 'PUT' },
  ];
  for (const c of cases) t.equal(c.got, c.want, c.name);
  const pre = preflightResult(known, { 'access-control-allow-origin': '*' }, undefined);
  t.equal(pre.status, 204, 'a preflight is a 204');
  t.equal(pre.headers?.['access-control-allow-methods'], 'GET, POST, OPTIONS', 'it lists the path methods and OPTIONS');
  t.equal(pre.headers?.['access-control-allow-origin'], '*', 'with the CORS headers');
  t.equal(
    preflightResult(undefined, undefined, 'x-a').headers?.['access-control-allow-headers'],
    'x-a',
    'it echoes the requested headers',
  );
});

t.test('parseBody turns a raw body into the request body or a 400', async (t) => {
  const deep = '['.repeat(jsonNestingDepthMax + 1) + ']'.repeat(jsonNestingDepthMax + 1);
  const cases: Array<{
    name: string;
    raw: string;
    route: RouteEntry;
    status?: number;
    error?: RegExp;
    body?: unknown;
  }> = [
    {
      name: 'an empty body with a schema is required',
      raw: '',
      route: jsonRoute({ schema: true }),
      status: 400,
      error: /required/,
    },
    {
      name: 'an empty body may be optional',
      raw: '',
      route: jsonRoute({ schema: true, bodyOptional: true }),
      body: undefined,
    },
    { name: 'malformed JSON is a 400', raw: '{', route: jsonRoute(), status: 400, error: /^malformed JSON/ },
    {
      name: `nesting past ${jsonNestingDepthMax} is a 400 before parsing`,
      raw: deep,
      route: jsonRoute(),
      status: 400,
      error: /nest/,
    },
    {
      name: 'a body failing the schema is a 400 naming the field',
      raw: '{"a":"x"}',
      route: jsonRoute({ schema: true }),
      status: 400,
      error: /a/,
    },
    {
      name: 'a valid body becomes the request body',
      raw: '{"a":1}',
      route: jsonRoute({ schema: true }),
      body: { a: 1 },
    },
    { name: 'without a schema any JSON is taken', raw: '[1,2]', route: jsonRoute(), body: [1, 2] },
    {
      name: 'a validator that throws is a 500',
      raw: '{"a":1}',
      route: jsonRoute({ throws: true }),
      status: 500,
      error: /internal/,
    },
  ];
  for (const c of cases) {
    const req = request(c.raw);
    const refused = parseBody({ errorResult: (err, r) => errorResult(sink(), err, r) }, req, c.route);
    if (c.status === undefined) {
      t.equal(refused, undefined, `${c.name}: accepted`);
      t.same(req.body, c.body, `${c.name}: body`);
    } else {
      t.equal(refused?.status, c.status, `${c.name}: status`);
      t.match((refused?.body as { error: string }).error, c.error as RegExp, `${c.name}: error`);
    }
  }
});

t.test('errorResult: an HttpError keeps its status, anything else is a counted 500', async (t) => {
  const s = sink();
  const withHeaders = errorResult(s, new HttpError(429, 'slow down', { 'retry-after': '1' }), request(''));
  t.same(
    withHeaders,
    { status: 429, body: { error: 'slow down' }, headers: { 'retry-after': '1' } },
    'HttpError: status, message, headers',
  );
  t.same(s.counted, [], 'an HttpError is not a failure');
  const bug = errorResult(s, new TypeError('oops'), request(''));
  t.same(bug, { status: 500, body: { error: 'internal server error' } }, 'a bug is a 500 without details');
  t.same(s.counted, ['threw POST (no route)'], 'counted once, under the method when no route matched');
});
