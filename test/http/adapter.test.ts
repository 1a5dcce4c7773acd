import t from 'tap';
import Type from 'typebox';
import net from 'node:net';
import { HttpApp, HttpError, WsHub, type WsClient } from '../../src/http/index.js';
import { silentLogger } from '../../src/util/logger.js';
import { api, request, wsCollect, sleep } from '../helpers/http.js';

const Closed = Type.Object({ name: Type.String() }, { additionalProperties: false });
const Body = Type.Object({
  key: Type.String({ minLength: 1 }),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: 64 })),
  mode: Type.Optional(Type.Union([Type.Literal('async'), Type.Literal('sync')])),
  items: Type.Optional(Type.Array(Type.Object({ name: Type.String() }))),
});

t.test('the adapter routes, validates and answers in JSON', async (t) => {
  const app = new HttpApp({ name: 'test', logger: silentLogger(), cors: { origins: '*' } });
  const hub = new WsHub<{ topic: string }>();
  app.get('/things/:id', (req) => ({ status: 200, body: { id: req.params['id'], q: req.query.getAll('q') } }));
  app.post('/things', (req) => ({ status: 201, body: req.body }), { body: Body });
  app.put('/closed', (req) => ({ status: 200, body: req.body }), { body: Closed });
  app.delete('/things/:id', (req) => {
    if (req.params['id'] === 'missing') throw new HttpError(404, 'thing missing not found');
    return { status: 204 };
  });
  app.post('/guarded', () => ({ status: 200, body: { ok: true } }), {
    body: Body,
    before: (req) =>
      req.headers['authorization'] === 'Bearer yes' ? undefined : { status: 401, body: { error: 'missing token' } },
  });
  app.get('/boom', () => {
    throw new Error('kaboom');
  });
  app.get('/slow', async () => {
    await sleep(20);
    return { status: 200, body: { slow: true } };
  });
  app.stream('/events', (_req, s) => {
    s.open(200, { 'content-type': 'text/event-stream' });
    s.write('data: one\n\n');
    s.write('data: two\n\n');
    s.end();
  });
  app.ws<{ topic: string }>('/ws', {
    upgrade: (info) =>
      info.headers['origin'] === 'http://evil.example'
        ? { reject: { status: 403, error: 'origin not allowed' } }
        : { data: { topic: info.query.get('topic') ?? 'all' } },
    open: (c: WsClient<{ topic: string }>) => hub.add(c),
    close: (c) => hub.remove(c),
  });
  const port = await app.listen(0, '127.0.0.1');
  t.teardown(() => app.close());
  const base = `http://127.0.0.1:${port}`;
  const c = api(base);

  const cases: Array<{ name: string; run: () => Promise<unknown>; status: number; error?: RegExp; body?: unknown }> = [
    {
      name: 'a path parameter is decoded and repeated query keys are kept',
      run: () => c.get('/things/a%2Fb?q=1&q=2'),
      status: 200,
      body: { id: 'a/b', q: ['1', '2'] },
    },
    {
      name: 'a valid body is echoed',
      run: () => c.post('/things', { key: 'k', count: 3 }),
      status: 201,
      body: { key: 'k', count: 3 },
    },
    { name: 'malformed JSON is a 400', run: () => c.post('/things', '{"key":'), status: 400, error: /malformed JSON/ },
    {
      name: 'a missing required field is named',
      run: () => c.post('/things', {}),
      status: 400,
      error: /^key: is required/,
    },
    {
      name: 'a wrong type is named with its rule',
      run: () => c.post('/things', { key: 'k', count: 'x' }),
      status: 400,
      error: /^count: must be integer/,
    },
    {
      name: 'an out-of-range integer is refused',
      run: () => c.post('/things', { key: 'k', count: 65 }),
      status: 400,
      error: /^count: must be <= 64/,
    },
    {
      name: 'an unknown enum value lists the allowed ones',
      run: () => c.post('/things', { key: 'k', mode: 'fast' }),
      status: 400,
      error: /^mode: must be one of "async", "sync"/,
    },
    {
      name: 'a nested field is named by its path',
      run: () => c.post('/things', { key: 'k', items: [{ name: 1 }] }),
      status: 400,
      error: /^items\[0\]\.name: must be string/,
    },
    {
      name: 'an unknown field of a closed object is named',
      run: () => c.put('/closed', { name: 'n', colour: 'red' }),
      status: 400,
      error: /^colour: is not an allowed field/,
    },
    {
      name: 'an empty body where one is required is a 400',
      run: () => c.post('/things'),
      status: 400,
      error: /required/,
    },
    {
      name: 'a JSON array where an object is expected is a 400',
      run: () => c.post('/things', [1, 2]),
      status: 400,
      error: /body: must be object/,
    },
    { name: 'an unknown route is a 404', run: () => c.get('/nope'), status: 404, error: /no route/ },
    { name: 'a wrong method is a 405', run: () => c.put('/things', {}), status: 405, error: /not allowed/ },
    {
      name: 'a thrown HttpError keeps its status',
      run: () => c.del('/things/missing'),
      status: 404,
      error: /not found/,
    },
    { name: 'a 204 has no body', run: () => c.del('/things/x'), status: 204 },
    {
      name: 'an unexpected exception is a 500 without details',
      run: () => c.get('/boom'),
      status: 500,
      error: /internal server error/,
    },
    { name: 'an async handler answers', run: () => c.get('/slow'), status: 200, body: { slow: true } },
    {
      name: 'a before hook answers 401 before the body is validated',
      run: () => c.post('/guarded', '{"bad json'),
      status: 401,
      error: /missing token/,
    },
    {
      name: 'past the before hook the body is validated',
      run: () => c.post('/guarded', {}, { authorization: 'Bearer yes' }),
      status: 400,
      error: /key: is required/,
    },
    {
      name: 'past the before hook a valid body reaches the handler',
      run: () => c.post('/guarded', { key: 'k' }, { authorization: 'Bearer yes' }),
      status: 200,
      body: { ok: true },
    },
  ];
  for (const tc of cases) {
    const r = (await tc.run()) as { status: number; body: any; headers: Record<string, unknown> };
    t.equal(r.status, tc.status, `${tc.name}: status`);
    if (tc.error) {
      t.match(r.body?.error, tc.error, `${tc.name}: error message`);
      t.match(String(r.headers['content-type']), /application\/json/, `${tc.name}: JSON error body`);
    }
    if (tc.body) t.same(r.body, tc.body, `${tc.name}: body`);
  }

  const head = await request(base, 'HEAD', '/things/7');
  t.equal(head.status, 200, 'HEAD answers like GET');
  t.equal(head.text, '', 'HEAD has no body');
  t.equal(
    Number(head.headers['content-length']),
    JSON.stringify({ id: '7', q: [] }).length,
    'HEAD reports the GET body length',
  );
  t.equal((await c.get('/things/7')).status, 200, 'the next request after HEAD is answered');

  const big = Buffer.alloc(2 * 1024 * 1024, 'a');
  for (let i = 0; i < 2; i++) {
    const again = await request(base, 'POST', '/things', big).catch((e: Error) => ({
      status: -1,
      body: { error: e.message },
    }));
    t.equal(
      again.status,
      413,
      `a declared oversize body gets its 413 even while the client is still sending (try ${i + 1})`,
    );
  }
  const r413 = await request(base, 'POST', '/things', big).catch((e: Error) => ({
    status: -1,
    body: { error: e.message },
  }));
  t.equal(r413.status, 413, 'a 2 MiB body is refused with 413');

  // A chunked body (no content-length) that grows past the cap is cut off with 413 as well.
  const chunkedStatus = await new Promise<number>((resolve) => {
    const sock = net.connect(port, '127.0.0.1', () => {
      sock.write('POST /things HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n');
      const chunk = Buffer.alloc(64 * 1024, 'b');
      let i = 0;
      const pump = () => {
        while (i < 40) {
          i++;
          if (!sock.write(`${chunk.length.toString(16)}\r\n`) || !sock.write(chunk) || !sock.write('\r\n'))
            return sock.once('drain', pump);
        }
        sock.write('0\r\n\r\n');
      };
      pump();
    });
    let data = '';
    sock.on('data', (d) => {
      data += d.toString();
      const m = /^HTTP\/1\.1 (\d+)/.exec(data);
      if (m) {
        resolve(Number(m[1]));
        sock.destroy();
      }
    });
    sock.on('error', () => resolve(-1));
  });
  t.equal(chunkedStatus, 413, 'a chunked body over 1 MiB is refused with 413');

  const pre = await request(base, 'OPTIONS', '/things', undefined, {
    origin: 'http://ui.example',
    'access-control-request-method': 'POST',
  });
  t.equal(pre.status, 204, 'CORS preflight answers 204');
  t.equal(pre.headers['access-control-allow-origin'], 'http://ui.example', 'CORS echoes the origin');
  const withOrigin = await c.get('/things/1', { origin: 'http://ui.example' });
  t.equal(withOrigin.headers['access-control-allow-origin'], 'http://ui.example', 'CORS header on a normal response');

  const sse = await c.get('/events');
  t.equal(sse.status, 200, 'a stream route answers');
  t.equal(sse.text, 'data: one\n\ndata: two\n\n', 'streamed chunks arrive in order');

  // Aborted request: the client goes away before an async handler answers; the server keeps serving.
  await new Promise<void>((resolve) => {
    const sock = net.connect(port, '127.0.0.1', () => {
      sock.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
      sock.destroy();
      resolve();
    });
  });
  await sleep(40);
  t.equal((await c.get('/slow')).status, 200, 'the server survives an aborted request');

  const a = await wsCollect(`ws://127.0.0.1:${port}/ws?topic=x`);
  const b = await wsCollect(`ws://127.0.0.1:${port}/ws?topic=y`);
  await sleep(20);
  t.equal(hub.size, 2, 'both WebSocket clients are registered');
  hub.publish(JSON.stringify({ type: 'hello' }));
  hub.publish(JSON.stringify({ type: 'only-x' }), (cl) => cl.data.topic === 'x');
  await a.waitFor((m) => m.type === 'only-x');
  await b.waitFor((m) => m.type === 'hello');
  await sleep(30);
  t.same(
    a.messages.map((m) => m.type),
    ['hello', 'only-x'],
    'fan-out delivers to every client in order',
  );
  t.same(
    b.messages.map((m) => m.type),
    ['hello'],
    'a filter keeps messages from clients that did not ask',
  );
  await t.rejects(
    wsCollect(`ws://127.0.0.1:${port}/ws`, { origin: 'http://evil.example' }),
    { status: 403 },
    'the upgrade hook can refuse with 403',
  );
  a.close();
  b.close();
  await sleep(30);
  t.equal(hub.size, 0, 'closed clients leave the hub');
});
