/**
 * Regression tests of issue 16 for the shared HTTP edge (src/http/app.ts, json-limits.ts,
 * src/util/process-safety.ts), black box over real sockets: no request can kill or wedge the
 * process (unserialisable results, throws and rejections are a 500 for that request, logged and
 * counted); JSON nesting and element limits at and past the limit; what uWS answers, and what it
 * closes by itself, for unknown methods and malformed requests; the process-level safety net.
 */
import t from 'tap';
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import Type from 'typebox';
import {
  HttpApp,
  HttpError,
  faultMetrics,
  healthRoutes,
  jsonNestingDepthMax,
  jsonValuesMax,
  jsonShapeProblem,
} from '../../src/http/index.js';
import { Registry } from '../../src/util/metrics.js';
import { silentLogger } from '../../src/util/logger.js';
import { api, request, sleep, eventually, wsCollect } from '../helpers/http.js';

/** An object nested `levels` deep, built without recursion: {a:{a:...{a:1}}}. */
function deepObject(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = { a: 1 };
  for (let i = 1; i < levels; i++) v = { a: v };
  return v;
}

interface RawReply {
  /** Everything received, latin1. */
  text: string;
  /** The server closed the connection within the wait. */
  closed: boolean;
}

/** Writes raw bytes on a fresh connection and collects what comes back for up to `waitMs`. */
function raw(port: number, bytes: string, waitMs = 700): Promise<RawReply> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1', () => sock.write(Buffer.from(bytes, 'latin1')));
    let text = '';
    let closed = false;
    const done = (): void => {
      clearTimeout(timer);
      sock.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(done, waitMs);
    sock.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      // A complete answer with a length: no need to wait for the keep-alive connection.
      const end = text.indexOf('\r\n\r\n');
      const len = /content-length: (\d+)/i.exec(text);
      if (end >= 0 && len && text.length >= end + 4 + Number(len[1])) done();
    });
    sock.on('close', () => {
      closed = true;
      done();
    });
    sock.on('error', () => undefined);
  });
}

const statusOf = (r: RawReply): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(r.text)?.[1] ?? 0);
const headerOf = (r: RawReply, name: string): string | undefined =>
  new RegExp(`^${name}: ([^\\r]*)`, 'im').exec(r.text)?.[1];
const bodyOf = (r: RawReply): string => r.text.slice(r.text.indexOf('\r\n\r\n') + 4);

t.test(
  'no handler result or failure can take the server down: each is a 500 {error} for that request, logged and counted',
  async (t) => {
    const registry = new Registry();
    const app = new HttpApp({ name: 'edge', logger: silentLogger() });
    healthRoutes(app, registry);
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic['self'] = cyclic;
    app.get('/deep', () => ({ status: 200, body: deepObject(20_000) }));
    app.get('/very-deep', () => ({ status: 200, body: deepObject(100_000) }));
    app.get('/bigint', () => ({ status: 200, body: { n: 10n } }));
    app.get('/cycle', () => ({ status: 200, body: cyclic }));
    app.get('/head-deep', () => ({ status: 200, body: deepObject(100_000) }));
    app.get('/throws', () => {
      throw new Error('kaboom');
    });
    app.get('/rejects', () => Promise.reject(new Error('async kaboom')));
    app.get('/rejects-later', async () => {
      await sleep(5);
      throw new TypeError('later');
    });
    app.get('/no-result', () => undefined as unknown as { status: number });
    app.get('/bad-status', () => ({ status: 1000, body: {} }));
    app.get('/header-injection', () => ({ status: 200, body: {}, headers: { 'x-echo': 'a\r\nset-cookie: pwned=1' } }));
    app.get('/header-number', () => ({ status: 200, body: {}, headers: { 'x-n': 7 as unknown as string } }));
    app.get('/raw-object', () => ({ status: 200, raw: {} as unknown as string }));
    app.get('/http-error', () => {
      throw new HttpError(409, 'conflict stays a 409');
    });
    app.get('/ok', () => ({ status: 200, body: { ok: true } }));
    const port = await app.listen(0, '127.0.0.1');
    t.teardown(() => app.close());
    const base = `http://127.0.0.1:${port}`;
    const c = api(base);

    const cases: Array<{ name: string; path: string; status: number; error: RegExp }> = [
      {
        name: 'a 20,000-level result (JSON.stringify RangeError)',
        path: '/deep',
        status: 500,
        error: /could not be serialised/,
      },
      { name: 'a 100,000-level result', path: '/very-deep', status: 500, error: /could not be serialised/ },
      { name: 'a BigInt in the result (TypeError)', path: '/bigint', status: 500, error: /could not be serialised/ },
      { name: 'a cycle in the result', path: '/cycle', status: 500, error: /could not be serialised/ },
      { name: 'a synchronous throw', path: '/throws', status: 500, error: /^internal server error$/ },
      { name: 'a rejected promise', path: '/rejects', status: 500, error: /^internal server error$/ },
      { name: 'a rejection after an await', path: '/rejects-later', status: 500, error: /^internal server error$/ },
      { name: 'no result at all', path: '/no-result', status: 500, error: /could not be serialised/ },
      { name: 'a status outside 100-599', path: '/bad-status', status: 500, error: /could not be serialised/ },
      {
        name: 'a header value with CR LF (response splitting)',
        path: '/header-injection',
        status: 500,
        error: /could not be serialised/,
      },
      {
        name: 'a header value that is not a string',
        path: '/header-number',
        status: 500,
        error: /could not be serialised/,
      },
      {
        name: 'a raw body that is neither string nor Buffer',
        path: '/raw-object',
        status: 500,
        error: /could not be serialised/,
      },
      { name: 'an HttpError keeps its own status', path: '/http-error', status: 409, error: /conflict stays a 409/ },
    ];
    for (const tc of cases) {
      const r = await c.get(tc.path);
      t.equal(r.status, tc.status, `${tc.name}: status ${tc.status}`);
      t.match(String(r.headers['content-type']), /application\/json/, `${tc.name}: a JSON body`);
      t.match(r.body?.error, tc.error, `${tc.name}: {error}`);
      t.notOk(r.headers['set-cookie'], `${tc.name}: no injected header`);
      const next = await c.get('/ok');
      t.equal(next.status, 200, `${tc.name}: the next request on the connection is served`);
    }
    const head = await request(base, 'HEAD', '/head-deep');
    t.equal(head.status, 500, 'HEAD of an unserialisable result is a 500 too');
    t.equal((await c.get('/ok')).status, 200, 'and the server still serves');

    const counts = Object.fromEntries(app.handlerErrorCounts().map((e) => [`${e.kind} ${e.route}`, e.count]));
    t.same(
      counts,
      {
        'unserializable GET /deep': 1,
        'unserializable GET /very-deep': 1,
        'unserializable GET /bigint': 1,
        'unserializable GET /cycle': 1,
        'threw GET /throws': 1,
        'threw GET /rejects': 1,
        'threw GET /rejects-later': 1,
        'unserializable GET /no-result': 1,
        'unserializable GET /bad-status': 1,
        'unserializable GET /header-injection': 1,
        'unserializable GET /header-number': 1,
        'unserializable GET /raw-object': 1,
        'unserializable GET /head-deep': 1,
      },
      'every failure is counted once under its route pattern and kind (an HttpError is not a failure)',
    );
    const metrics = (await c.get('/metrics')).text;
    t.match(
      metrics,
      /http_handler_errors_total\{service="edge",route="GET \/deep",kind="unserializable"\} 1/,
      '/metrics exports http_handler_errors_total by service, route and kind',
    );
    t.match(
      metrics,
      /http_handler_errors_total\{service="edge",route="GET \/rejects",kind="threw"\} 1/,
      'a rejection is exported as kind="threw"',
    );
    t.match(metrics, /process_unhandled_rejections_total \d+/, '/metrics exports process_unhandled_rejections_total');
    t.match(metrics, /process_uncaught_exceptions_total \d+/, '/metrics exports process_uncaught_exceptions_total');

    // A second app (a proxy) on the same registry: its failures are exported beside the first's.
    const proxy = new HttpApp({ name: 'edge-proxy', logger: silentLogger() });
    faultMetrics(proxy, registry);
    proxy.get('/boom', () => Promise.reject(new Error('proxy kaboom')));
    const proxyPort = await proxy.listen(0, '127.0.0.1');
    t.teardown(() => proxy.close());
    t.equal(
      (await api(`http://127.0.0.1:${proxyPort}`).get('/boom')).status,
      500,
      'the second app answers its failure with a 500',
    );
    const both = (await c.get('/metrics')).text;
    t.match(
      both,
      /http_handler_errors_total\{service="edge-proxy",route="GET \/boom",kind="threw"\} 1/,
      "the second app's failure is exported under its own service name",
    );
    t.match(
      both,
      /http_handler_errors_total\{service="edge",route="GET \/deep",kind="unserializable"\} 1/,
      "beside the first app's, not double-counted",
    );
  },
);

t.test(
  'an async handler past the handler deadline is answered 503 {error} and counted; its late result is dropped',
  async (t) => {
    const app = new HttpApp({ name: 'edge', logger: silentLogger(), handlerDeadlineMs: 100 });
    let lateSettled = false;
    app.get('/hangs', () => new Promise(() => undefined));
    app.get('/late', async () => {
      await sleep(250);
      lateSettled = true;
      return { status: 200, body: { late: true } };
    });
    app.get(
      '/long-allowed',
      async () => {
        await sleep(200);
        return { status: 200, body: { ok: true } };
      },
      { deadlineMs: 2000 },
    );
    app.get('/quick', async () => ({ status: 200, body: { ok: true } }));
    const port = await app.listen(0, '127.0.0.1');
    t.teardown(() => app.close());
    const c = api(`http://127.0.0.1:${port}`);
    const hangs = await c.get('/hangs');
    t.equal(hangs.status, 503, 'a handler that never settles is a 503 at the deadline');
    t.match(hangs.body?.error, /no answer within 100 ms/, 'naming the deadline');
    const late = await c.get('/late');
    t.equal(late.status, 503, 'a handler slower than the deadline is a 503');
    await sleep(250);
    t.ok(lateSettled, 'the late handler did finish');
    t.equal(
      (await c.get('/quick')).status,
      200,
      'and its late result did not corrupt the next answer on the connection',
    );
    t.equal((await c.get('/long-allowed')).status, 200, 'a route may allow itself longer');
    t.same(
      app
        .handlerErrorCounts()
        .map((e) => `${e.kind} ${e.route} ${e.count}`)
        .sort(),
      ['timeout GET /hangs 1', 'timeout GET /late 1'],
      'each miss is counted as kind="timeout"',
    );
  },
);

t.test(
  'a WebSocket callback that throws fails that event only: logged, counted, and the server keeps serving',
  async (t) => {
    const app = new HttpApp({ name: 'edge', logger: silentLogger() });
    app.get('/ok', () => ({ status: 200, body: { ok: true } }));
    app.ws<undefined>('/ws', {
      message: (client, payload) => {
        if (payload === 'boom') throw new Error('message handler kaboom');
        client.send(`echo ${String(payload)}`);
      },
    });
    app.ws<undefined>('/ws-refuses', {
      upgrade: () => {
        throw new Error('secret internal detail');
      },
    });
    const port = await app.listen(0, '127.0.0.1');
    t.teardown(() => app.close());
    const ws = await wsCollect(`ws://127.0.0.1:${port}/ws`);
    ws.ws.send('boom');
    ws.ws.send('after');
    t.equal(
      await ws.waitFor((m) => m === 'echo after'),
      'echo after',
      'the same connection still works after the throw',
    );
    ws.close();
    const refused = await wsCollect(`ws://127.0.0.1:${port}/ws-refuses`).then(
      () => 0,
      (e: { status?: number }) => e.status ?? -1,
    );
    t.equal(refused, 500, 'an upgrade handler that throws is a 500');
    t.equal((await api(`http://127.0.0.1:${port}`).get('/ok')).status, 200, 'HTTP is still served');
    t.same(
      app
        .handlerErrorCounts()
        .map((e) => `${e.kind} ${e.route} ${e.count}`)
        .sort(),
      ['threw WS /ws 1', 'threw WS /ws-refuses 1'],
      'both are counted under the WebSocket route',
    );
  },
);

t.test(
  'JSON bodies are refused with 400 naming the limit past 64 levels of nesting or ' +
    '100,000 values, before any handler runs',
  async (t) => {
    t.equal(jsonNestingDepthMax, 64, 'the nesting limit is 64 levels');
    t.equal(jsonValuesMax, 100_000, 'the values limit is 100,000');
    let reached = 0;
    const app = new HttpApp({ name: 'edge', logger: silentLogger() });
    app.post('/any', (req) => {
      reached++;
      return { status: 200, body: { ok: true, kind: Array.isArray(req.body) ? 'array' : typeof req.body } };
    });
    app.post(
      '/typed',
      () => {
        reached++;
        return { status: 200, body: { ok: true } };
      },
      { body: Type.Object({ v: Type.Unknown() }) },
    );
    const port = await app.listen(0, '127.0.0.1');
    t.teardown(() => app.close());
    const c = api(`http://127.0.0.1:${port}`);
    const arrays = (n: number): string => '['.repeat(n) + ']'.repeat(n);
    const objects = (n: number): string => '{"a":'.repeat(n - 1) + '{}' + '}'.repeat(n - 1);
    const mixed = (n: number): string => '[{"a":'.repeat(n / 2) + 'null' + '}]'.repeat(n / 2);
    const list = (n: number): string => `[${Array.from({ length: n }, () => '0').join(',')}]`;
    const cases: Array<{ name: string; body: string; route?: string; status: number; error?: RegExp }> = [
      { name: '64 nested arrays (at the limit)', body: arrays(64), status: 200 },
      {
        name: '65 nested arrays',
        body: arrays(65),
        status: 400,
        error: /deeper than 64 levels \(jsonNestingDepthMax\)/,
      },
      { name: '64 nested objects (at the limit)', body: objects(64), status: 200 },
      { name: '65 nested objects', body: objects(65), status: 400, error: /deeper than 64 levels/ },
      { name: '64 levels of arrays and objects alternating', body: mixed(64), status: 200 },
      {
        name: '66 levels of arrays and objects alternating',
        body: mixed(66),
        status: 400,
        error: /deeper than 64 levels/,
      },
      {
        name: '4,100 nested objects (the probe that killed the process)',
        body: objects(4100),
        status: 400,
        error: /deeper than 64 levels/,
      },
      {
        name: '5,000 nested arrays on a typed route',
        body: `{"v":${arrays(5000)}}`,
        route: '/typed',
        status: 400,
        error: /deeper than 64 levels/,
      },
      {
        name: 'brackets inside strings do not count',
        body: JSON.stringify({ s: '['.repeat(500), t: '{'.repeat(500), q: '"[[[[\\' }),
        status: 200,
      },
      {
        name: 'escaped quotes do not end a string early',
        body: `{"s":"${'\\"['.repeat(300)}","n":${arrays(3)}}`,
        status: 200,
      },
      {
        name: 'a long string with escaped quotes then deep nesting is still measured',
        body: `{"s":"${'x'.repeat(100)}\\\\","n":${arrays(70)}}`,
        status: 400,
        error: /deeper than 64 levels/,
      },
      { name: `${jsonValuesMax} array elements (at the limit)`, body: list(jsonValuesMax), status: 200 },
      {
        name: `${jsonValuesMax + 1} array elements`,
        body: list(jsonValuesMax + 1),
        status: 400,
        error: /more than 100000 array elements and object members \(jsonValuesMax\)/,
      },
      {
        name: 'a deep but malformed body is still a 400',
        body: '['.repeat(5000),
        status: 400,
        error: /deeper than 64 levels/,
      },
    ];
    for (const tc of cases) {
      const before = reached;
      const r = await c.post(tc.route ?? '/any', tc.body);
      t.equal(r.status, tc.status, `${tc.name}: ${tc.status}`);
      if (tc.error) {
        t.match(r.body?.error, tc.error, `${tc.name}: the error names the limit`);
        t.equal(reached, before, `${tc.name}: the handler never ran`);
      } else t.equal(reached, before + 1, `${tc.name}: the handler ran`);
    }

    // The scanner alone, table-driven: depth and values counted outside strings only.
    const table: Array<[string, string, boolean]> = [
      ['short bodies are never refused', '[[[[', false],
      ['a backslash run of even length ends the string', `{"s":"${'a'.repeat(200)}\\\\\\\\"}${'['.repeat(70)}`, true],
      ['a backslash run of odd length does not', `{"s":"${'a'.repeat(200)}\\\\\\"${'['.repeat(70)}"}`, false],
      ['an unterminated string is left to JSON.parse', `"${'['.repeat(200)}`, false],
    ];
    for (const [name, text, refused] of table)
      t.equal(jsonShapeProblem(Buffer.from(text)) !== undefined, refused, name);
  },
);

t.test('whatever uWS hands to the adapter gets an answer; what uWS closes itself is documented here', async (t) => {
  const app = new HttpApp({ name: 'edge', logger: silentLogger(), cors: { origins: '*' } });
  app.get('/things', () => ({ status: 200, body: { ok: true } }));
  app.post('/things', () => ({ status: 201, body: { ok: true } }));
  const port = await app.listen(0, '127.0.0.1');
  t.teardown(() => app.close());

  const trace = await raw(port, 'TRACE /things HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(statusOf(trace), 405, 'TRACE (passed on by uWS) is a 405');
  t.equal(headerOf(trace, 'allow'), 'GET, POST, HEAD, OPTIONS', "with an Allow header listing the path's methods");
  t.match(JSON.parse(bodyOf(trace)).error, /method TRACE not allowed/, 'and an {error} body');
  const traceUnknown = await raw(port, 'TRACE /nowhere HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(statusOf(traceUnknown), 405, 'TRACE of an unknown path is a 405 too');
  t.equal(
    headerOf(traceUnknown, 'allow'),
    'GET, POST, PUT, PATCH, DELETE, OPTIONS, HEAD',
    'listing every method the adapter routes',
  );
  const connect = await raw(port, 'CONNECT /things HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(statusOf(connect), 405, 'CONNECT with an origin-form target is a 405');
  const wrong = await raw(port, 'DELETE /things HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(statusOf(wrong), 405, 'a known method the path lacks is a 405');
  t.equal(headerOf(wrong, 'allow'), 'GET, POST, HEAD, OPTIONS', 'with Allow');

  // uWS (the @trufflesuite 20.30 build) closes these itself, before the adapter runs: no bytes at all.
  for (const [name, req] of [
    ['an unknown method (FOO)', 'FOO /things HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a WebDAV method (PROPFIND)', 'PROPFIND /things HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a lower-case method (get)', 'get /things HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['an invalid Content-Length', 'POST /things HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'],
    [
      'Content-Length with Transfer-Encoding',
      'POST /things HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ],
  ] as const) {
    const r = await raw(port, req);
    t.same(r, { text: '', closed: true }, `uWS closes the connection on ${name} without an answer`);
  }
  // And these it neither answers nor closes: the connection idles until uWS's 10 s HTTP timeout.
  for (const [name, req] of [
    ['a NUL byte in a header value', 'GET /things HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n'],
    ['a control character in a header value', 'GET /things HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n'],
    ['an HTTP/1.1 request without Host', 'GET /things HTTP/1.1\r\n\r\n'],
    ['an HTTP/1.0 request', 'GET /things HTTP/1.0\r\nHost: x\r\n\r\n'],
    [
      'more than 48 header lines',
      `GET /things HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 48 }, (_, i) => `X-${i}: v\r\n`).join('')}\r\n`,
    ],
  ] as const) {
    const r = await raw(port, req, 400);
    t.same(r, { text: '', closed: false }, `uWS ignores ${name}: no answer, connection left open`);
  }
  t.equal(
    (await api(`http://127.0.0.1:${port}`).get('/things')).status,
    200,
    'the server keeps serving after all of them',
  );
});

t.test(
  'the process-level safety net logs and counts a stray rejection and a stray throw, and the process survives',
  async (t) => {
    const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'safety-net-child.ts');
    // The child runs the TypeScript fixture under tap's own loader, as this file does.
    const loader = process.execArgv.filter((a) => a.includes('@tapjs/typescript'));
    const start = async (
      env: Record<string, string>,
    ): Promise<{
      port: number;
      child: ReturnType<typeof spawn>;
      stderr: () => string;
      exit: Promise<number | null>;
    }> => {
      const child = spawn(process.execPath, [...loader, fixture], {
        env: { ...process.env, LOGGING_FORMAT: 'json', LOGGING_LEVEL: 'info', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stderr?.on('data', (d: Buffer) => {
        err += d.toString();
      });
      const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      const port = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`child did not start: ${out}${err}`)), 30_000);
        child.stdout?.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /"port":(\d+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        });
        void exit.then((code) => reject(new Error(`child exited with ${code}: ${out}${err}`)));
      });
      return { port, child, stderr: () => err, exit };
    };

    const guarded = await start({});
    t.teardown(() => guarded.child.kill('SIGKILL'));
    const c = api(`http://127.0.0.1:${guarded.port}`);
    t.equal((await c.post('/stray')).status, 202, 'the route that leaves a rejection and a throw behind answers');
    const metrics = await eventually(async () => {
      const m = (await c.get('/metrics')).text;
      return /process_uncaught_exceptions_total 1/.test(m) ? m : undefined;
    });
    t.match(metrics, /process_unhandled_rejections_total 1/, 'the unhandled rejection is counted');
    t.match(metrics, /process_uncaught_exceptions_total 1/, 'the uncaught exception is counted');
    t.equal((await c.get('/healthz')).status, 200, 'the process is alive and healthy');
    t.equal(guarded.child.exitCode, null, 'and has not exited');
    // The counters can be read before the log lines have crossed the stderr pipe: wait for both.
    const parsed = (): Array<{ level: number; msg: string; err?: { message?: string } }> =>
      guarded
        .stderr()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: number; msg: string; err?: { message?: string } });
    await eventually(async () =>
      parsed().filter((l) => /unhandled promise rejection|uncaught exception/.test(l.msg)).length >= 2
        ? true
        : undefined,
    ).catch(() => undefined);
    const logged = parsed();
    t.ok(
      logged.some(
        (l) =>
          l.level === 50 &&
          /unhandled promise rejection/.test(l.msg) &&
          l.err?.message === 'stray rejection nobody awaits',
      ),
      'the rejection is logged at error with its reason',
    );
    t.ok(
      logged.some(
        (l) => l.level === 50 && /uncaught exception/.test(l.msg) && l.err?.message === 'stray throw from a timer',
      ),
      'the throw is logged at error with its error',
    );

    // The control: without the net, the same request kills the process (Node's default).
    const bare = await start({ SAFETY_NET: 'off' });
    t.teardown(() => bare.child.kill('SIGKILL'));
    await api(`http://127.0.0.1:${bare.port}`)
      .post('/stray')
      .catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      bare.exit,
      new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve('still running'), 10_000);
      }),
    ]);
    clearTimeout(timer);
    t.not(code, 'still running', 'without the safety net the process exits (so the test above can fail)');
  },
);
