/**
 * Black-box regression tests of issue 16 for the clock lab, over real sockets against the real
 * server on free ports: slow WebSocket clients of the proxy (counted, and harmless to the lab),
 * authentication before the body, every text limit at and past its maximum, a read-back of the most
 * complex accepted values through every path that returns them, and the memory bounds found while
 * hunting the same class of bug (matrix simulations, undelivered messages, lost snapshot markers,
 * KV merges and the store, the event history, WebSocket client caps).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startClockLab, type ClockLabHandle } from '../../src/clocklab/server.js';
import {
  busHistoryCharsMax,
  eventLabelCharsMax,
  kvKeyCharsMax,
  kvStoreCharsMax,
  kvValueCharsMax,
  kvVersionCounterMax,
  matrixSimulationProcessesMax,
  messageAmountMax,
  partitionIdCharsMax,
  payloadCharsMax,
  processCountMax,
  processIdCharsMax,
  proxyUpstreamsMax,
  scenarioNameCharsMax,
  snapshotChannelsKeptMax,
  snapshotIdCharsMax,
  undeliveredBytesMax,
} from '../../src/clocklab/limits.js';
import { silentLogger } from '../../src/util/logger.js';
import { api, eventually, request, sleep, wsCollect } from '../helpers/http.js';

interface Lab {
  lab: ClockLabHandle;
  base: string;
  proxy: string;
  ws: string;
  proxyWs: string;
  c: ReturnType<typeof api>;
}

async function start(env: Record<string, string> = {}): Promise<Lab> {
  const lab = await startClockLab({
    port: 0,
    proxyPort: 0,
    host: '127.0.0.1',
    env: { VC_SEED: '16', ...env },
    logger: silentLogger(),
  });
  const base = `http://127.0.0.1:${lab.port}`;
  return {
    lab,
    base,
    proxy: `http://127.0.0.1:${lab.proxyPort}`,
    ws: `ws://127.0.0.1:${lab.port}/ws`,
    proxyWs: `ws://127.0.0.1:${lab.proxyPort}/ws`,
    c: api(base),
  };
}

const metric = (text: string, name: string): number => {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
};

/** A raw TCP client that performs the WebSocket handshake and then never reads again. */
function slowSocket(port: number, headers: Record<string, string> = {}): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => {
      const extra = Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      s.write(
        `GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`,
      );
    });
    s.on('error', () => {});
    s.once('data', (d: Buffer) => {
      s.pause();
      if (d.toString('latin1').startsWith('HTTP/1.1 101')) resolve(s);
      else reject(new Error(`upgrade refused: ${d.toString('latin1').split('\r\n')[0]}`));
    });
  });
}

/** A PUT whose path goes on the wire exactly as given. */
function rawPut(port: number, path: string, body: unknown): Promise<{ status: number; error: string }> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'PUT',
        path,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => {
          let error = '';
          try {
            error = String((JSON.parse(Buffer.concat(chunks).toString()) as { error?: unknown }).error ?? '');
          } catch {
            // not JSON: leave it empty, the assertion says so
          }
          resolve({ status: res.statusCode ?? 0, error });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** Messages p1→p2 the lab accepts in `ms` from `parallel` concurrent senders. */
async function messagesIn(c: ReturnType<typeof api>, ms: number, parallel = 8): Promise<number> {
  const end = Date.now() + ms;
  let accepted = 0;
  const body = { from: 'p1', to: 'p2', payload: 'x'.repeat(200) };
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (Date.now() < end) {
        const r = await c.post('/api/v1/messages', body);
        if (r.status === 202) accepted++;
      }
    }),
  );
  return accepted;
}

t.test('slow WebSocket clients of the proxy are dropped for and counted, and do not slow the lab', async (t) => {
  const { lab, c, proxy, proxyWs } = await start({ VC_WS_CLIENT_QUEUE_BYTES: '65536' });
  t.teardown(() => lab.close());
  const proxyPort = Number(new URL(proxy).port);
  const reader = await wsCollect(proxyWs);
  t.teardown(() => reader.close());
  await messagesIn(c, 300); // warm up
  const before = await messagesIn(c, 1500);

  const slow: net.Socket[] = [];
  t.teardown(() => slow.forEach((s) => s.destroy()));
  for (let i = 0; i < 40; i++) slow.push(await slowSocket(proxyPort));
  const during = await messagesIn(c, 1500);
  t.ok(
    during >= before * 0.2,
    `the lab accepted ${during} messages in 1.5 s with 40 slow proxy clients, ${before} ` +
      'without (at least a fifth is required; one upstream per credential set, not one per browser)',
  );

  // Events keep coming until the slow browsers' sockets and queues are full (the kernel takes its share first).
  const m = await eventually(
    async () => {
      await c.post('/api/v1/broadcast', { from: 'p1', payload: 'y'.repeat(4000) });
      const r = await c.get('/metrics');
      return metric(r.text, 'vc_proxy_ws_events_dropped_total') > 0 ? r : undefined;
    },
    20_000,
    5,
  );
  t.ok(
    metric(m.text, 'vc_proxy_ws_events_dropped_total') > 0,
    `events dropped for the slow proxy clients are counted (${metric(m.text, 'vc_proxy_ws_events_dropped_total')})`,
  );
  t.equal(metric(m.text, 'vc_proxy_ws_clients_connected'), 41, 'the proxy counts its browsers');
  t.equal(
    metric(m.text, 'vc_ws_clients_connected'),
    1,
    'browsers with the same credentials share one upstream connection to the lab',
  );

  const sent = await c.post('/api/v1/messages', { from: 'p2', to: 'p3', payload: 'still flowing' });
  t.equal(sent.status, 202);
  const got = await reader.waitFor((e) => e.type === 'message_delivered' && e.data.id === sent.body.id, 10_000);
  t.equal(got.data.payload, 'still flowing', 'a browser that reads still gets live events through the proxy');
  const late = await wsCollect(proxyWs);
  t.ok(
    await late.waitFor((e) => e.type === 'message_sent' && e.data.id === sent.body.id, 5000),
    'a browser joining the shared upstream gets the recent history replayed',
  );
  late.close();
  t.equal((await c.get('/healthz')).status, 200, 'the lab stays responsive');
});

t.test('the proxy holds one upstream per distinct credentials, and caps them', async (t) => {
  const { lab, proxyWs } = await start();
  t.teardown(() => lab.close());
  const open: Array<{ close: () => void }> = [];
  t.teardown(() => open.forEach((o) => o.close()));
  for (let i = 0; i < proxyUpstreamsMax; i++)
    open.push(await wsCollect(proxyWs, { authorization: `Bearer user${i}:x` }));
  const refused = await wsCollect(proxyWs, { authorization: 'Bearer one-too-many:x' }).then(
    () => undefined,
    (e: { status?: number }) => e,
  );
  t.equal(refused?.status, 503, `the ${proxyUpstreamsMax + 1}th distinct credential set is refused with 503`);
  open.push(await wsCollect(proxyWs, { authorization: 'Bearer user0:x' }));
  t.pass('a browser with credentials already connected still joins');
});

t.test('the lab caps its WebSocket clients (VC_WS_CLIENTS_MAX)', async (t) => {
  const { lab, ws } = await start({ VC_WS_CLIENTS_MAX: '2' });
  t.teardown(() => lab.close());
  const a = await wsCollect(ws);
  const b = await wsCollect(ws);
  const refused = await wsCollect(ws).then(
    () => undefined,
    (e: { status?: number }) => e,
  );
  t.equal(refused?.status, 503, 'one client past the cap is refused with 503');
  a.close();
  await eventually(
    async () =>
      wsCollect(ws).then(
        (x) => (x.close(), true),
        () => false,
      ),
    5000,
  );
  t.pass('a freed slot is taken again');
  b.close();
});

t.test('with tokens set, a request without a valid token is a 401 before its body is read or parsed', async (t) => {
  const { lab, base, proxy } = await start({ VC_API_TOKENS: 'alice:s3cret' });
  t.teardown(() => lab.close());
  const cases: Array<{
    name: string;
    target: string;
    method: string;
    path: string;
    body: string;
    headers: Record<string, string>;
    status: number;
  }> = [
    {
      name: 'malformed JSON without a token',
      target: base,
      method: 'POST',
      path: '/api/v1/processes',
      body: '{"id":',
      headers: {},
      status: 401,
    },
    {
      name: 'malformed JSON with a wrong token',
      target: base,
      method: 'POST',
      path: '/api/v1/processes',
      body: '{"id":',
      headers: { authorization: 'Bearer alice:wrong' },
      status: 401,
    },
    {
      name: 'a body failing the schema without a token',
      target: base,
      method: 'PUT',
      path: '/api/v1/kv/k',
      body: '{"value":5}',
      headers: {},
      status: 401,
    },
    {
      name: 'a body over 1 MiB without a token',
      target: base,
      method: 'POST',
      path: '/api/v1/messages',
      body: 'x'.repeat(1024 * 1024 + 10),
      headers: {},
      status: 401,
    },
    {
      name: 'deeply nested JSON without a token',
      target: base,
      method: 'POST',
      path: '/api/v1/broadcast',
      body: '['.repeat(5000) + ']'.repeat(5000),
      headers: {},
      status: 401,
    },
    {
      name: 'malformed JSON through the proxy without a token',
      target: proxy,
      method: 'POST',
      path: '/api/v1/processes',
      body: '{"id":',
      headers: {},
      status: 401,
    },
    {
      name: 'malformed JSON with the token is still a 400',
      target: base,
      method: 'POST',
      path: '/api/v1/processes',
      body: '{"id":',
      headers: { authorization: 'Bearer alice:s3cret' },
      status: 400,
    },
    {
      name: 'through the proxy with the token, a 400 too',
      target: proxy,
      method: 'POST',
      path: '/api/v1/processes',
      body: '{"id":',
      headers: { authorization: 'Bearer alice:s3cret' },
      status: 400,
    },
  ];
  for (const k of cases) {
    const r = await request(k.target, k.method, k.path, k.body, k.headers);
    t.equal(r.status, k.status, k.name);
    t.type(r.body?.error, 'string', `${k.name}: a JSON error`);
    if (k.status === 401) t.equal(r.headers['www-authenticate'], 'Bearer', `${k.name}: WWW-Authenticate`);
  }
  t.equal((await request(base, 'GET', '/healthz')).status, 200, 'health stays public');
  t.equal((await request(base, 'GET', '/metrics')).status, 200, 'metrics stay public');
});

t.test(
  'every text and number field is refused past its documented limit with a 400 naming it, and accepted at it',
  async (t) => {
    const { lab, c } = await start();
    t.teardown(() => lab.close());
    const longId = `L${'i'.repeat(processIdCharsMax - 1)}`;
    t.equal((await c.post('/api/v1/processes', { id: longId })).status, 201, 'a process with the longest id');
    const astral = (n: number): string => '𝄞'.repeat(n); // one character, two UTF-16 units each
    const cases: Array<{
      name: string;
      run: (past: boolean) => Promise<{ status: number; body: any }>;
      at: number;
      error: RegExp;
    }> = [
      {
        name: 'process id',
        run: (p) => c.post('/api/v1/processes', { id: `q${'x'.repeat(processIdCharsMax - 1 + (p ? 1 : 0))}` }),
        at: 201,
        error: new RegExp(`^id: .*${processIdCharsMax}`),
      },
      {
        name: 'process id in a path',
        run: (p) => c.get(`/api/v1/processes/${p ? `${longId}x` : longId}`),
        at: 200,
        error: new RegExp(`^id: .*${processIdCharsMax}`),
      },
      {
        name: 'event label',
        run: (p) => c.post('/api/v1/processes/p1/event', { label: astral(eventLabelCharsMax + (p ? 1 : 0)) }),
        at: 200,
        error: new RegExp(`^label: .*${eventLabelCharsMax}`),
      },
      {
        name: 'message payload',
        run: (p) =>
          c.post('/api/v1/messages', { from: 'p1', to: 'p2', payload: astral(payloadCharsMax + (p ? 1 : 0)) }),
        at: 202,
        error: new RegExp(`^payload: .*${payloadCharsMax}`),
      },
      {
        name: 'message amount',
        run: (p) =>
          c.post('/api/v1/messages', { from: 'p1', to: 'p2', payload: '', amount: messageAmountMax + (p ? 1 : 0) }),
        at: 409,
        error: new RegExp(`^amount: .*${messageAmountMax}`),
      },
      {
        name: 'broadcast payload',
        run: (p) => c.post('/api/v1/broadcast', { from: 'p1', payload: 'b'.repeat(payloadCharsMax + (p ? 1 : 0)) }),
        at: 202,
        error: new RegExp(`^payload: .*${payloadCharsMax}`),
      },
      {
        name: 'KV key',
        run: (p) =>
          c.put(`/api/v1/kv/${encodeURIComponent(astral(kvKeyCharsMax + (p ? 1 : 0)))}`, { value: 'v', writer: 'p1' }),
        at: 200,
        error: new RegExp(`^key: .*${kvKeyCharsMax}`),
      },
      {
        name: 'KV value',
        run: (p) => c.put('/api/v1/kv/value-limit', { value: astral(kvValueCharsMax + (p ? 1 : 0)), writer: 'p2' }),
        at: 200,
        error: new RegExp(`^value: .*${kvValueCharsMax}`),
      },
      {
        name: 'KV writer',
        run: (p) => c.put('/api/v1/kv/writer-limit', { value: 'v', writer: p ? `${longId}x` : longId }),
        at: 200,
        error: new RegExp(`^writer: .*${processIdCharsMax}`),
      },
      {
        name: 'KV version counter',
        run: (p) =>
          c.put('/api/v1/kv/version-limit', {
            value: 'v',
            writer: 'p3',
            version: { p3: kvVersionCounterMax + (p ? 1 : 0) },
          }),
        at: 200,
        error: new RegExp(`^version.p3: .*${kvVersionCounterMax}`),
      },
      {
        name: 'KV reader',
        run: (p) => c.get(`/api/v1/kv/value-limit?reader=${p ? `${longId}x` : longId}`),
        at: 200,
        error: new RegExp(`^reader: .*${processIdCharsMax}`),
      },
      {
        name: 'snapshot id',
        run: (p) => c.get(`/api/v1/snapshots/${'s'.repeat(snapshotIdCharsMax + (p ? 1 : 0))}`),
        at: 404,
        error: new RegExp(`^snapshot id: .*${snapshotIdCharsMax}`),
      },
      {
        name: 'snapshot id to verify',
        run: (p) => c.get(`/snapshots/${'s'.repeat(snapshotIdCharsMax + (p ? 1 : 0))}/verify`),
        at: 404,
        error: new RegExp(`^snapshot id: .*${snapshotIdCharsMax}`),
      },
      {
        name: 'partition id',
        run: (p) => c.del(`/api/v1/partition/${'z'.repeat(partitionIdCharsMax + (p ? 1 : 0))}`),
        at: 404,
        error: new RegExp(`^partition id: .*${partitionIdCharsMax}`),
      },
      {
        name: 'scenario name',
        run: (p) => c.post(`/api/v1/scenarios/${'S'.repeat(scenarioNameCharsMax + (p ? 1 : 0))}/run`),
        at: 404,
        error: new RegExp(`^scenario name: .*${scenarioNameCharsMax}`),
      },
      {
        name: 'partition side',
        run: (p) =>
          c.post('/api/v1/partition', {
            side_a: ['p1'],
            side_b: Array.from({ length: processCountMax + (p ? 1 : 0) }, () => 'p2'),
          }),
        at: 201,
        error: new RegExp(`^side_b: .*${processCountMax}`),
      },
      {
        name: 'channel delay',
        run: (p) => c.post('/api/v1/channels/p2/p3/faults', { delay_ms: 60_000 + (p ? 1 : 0) }),
        at: 200,
        error: /^delay_ms: .*60000/,
      },
      {
        name: 'reorder window',
        run: (p) => c.post('/api/v1/channels/p2/p3/faults', { reorder_window_ms: 60_000 + (p ? 1 : 0) }),
        at: 200,
        error: /^reorder_window_ms: .*60000/,
      },
      {
        name: 'drop rate',
        run: (p) => c.post('/api/v1/channels/p2/p3/faults', { drop_rate: p ? 1.5 : 1 }),
        at: 200,
        error: /^drop_rate: .*1/,
      },
    ];
    for (const key of ['.', '..']) {
      // Sent as written (URL parsers, fetch's and node's included, would resolve the segment away).
      const r = await rawPut(lab.port, `/api/v1/kv/${key.replace(/\./g, '%2E')}`, { value: 'v', writer: 'p1' });
      t.same(
        [r.status, /^key: /.test(r.error)],
        [400, true],
        `the key ${JSON.stringify(key)} is refused (URL clients could never read it back)`,
      );
    }
    for (const k of cases) {
      const at = await k.run(false);
      t.equal(at.status, k.at, `${k.name}: at the limit, ${k.at}`);
      const past = await k.run(true);
      t.equal(past.status, 400, `${k.name}: past the limit, 400`);
      t.match(past.body?.error, k.error, `${k.name}: the error names the field and the limit`);
    }
    t.equal((await c.get('/healthz')).status, 200);
  },
);

/**
 * A string of exactly `n` characters (code points) mixing astral characters, combining marks, controls, NUL,
 * separators and a lone surrogate.
 */
function hostileText(n: number, withLoneSurrogate = true): string {
  const parts = [
    '𝄞',
    'é',
    '\u0000',
    '\u0007',
    '\n',
    '\t',
    '"',
    '\\',
    '\u2028',
    '\u2029',
    '/',
    '%',
    '<',
    '𐍈',
    '\u001f',
    'ü',
  ];
  if (withLoneSurrogate) parts.push('\ud800');
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(parts[i % parts.length] as string);
  return out.join('');
}

t.test('the most complex accepted values are served back whole through every path that returns them', async (t) => {
  const { lab, c, proxy, ws, proxyWs } = await start({ VC_WS_CLIENT_QUEUE_BYTES: String(64 * 1024 * 1024) });
  t.teardown(() => lab.close());
  const live = await wsCollect(ws);
  t.teardown(() => live.close());
  const id = `Z${'a1_.-'.repeat(20)}`.slice(0, processIdCharsMax);
  const payload = hostileText(payloadCharsMax);
  const label = hostileText(eventLabelCharsMax);
  const value = hostileText(kvValueCharsMax);
  const key = hostileText(kvKeyCharsMax, false); // a path segment cannot carry a lone surrogate (not encodable)

  t.equal((await c.post('/api/v1/processes', { id, clock_type: 'matrix' })).status, 201);
  t.equal((await c.post(`/api/v1/processes/${id}/event`, { label })).status, 200);
  // In transit for a snapshot: a slow channel id→p2, the snapshot begun at p2 (so the message
  // arrives on a recording channel before the marker that follows it on the same FIFO channel).
  t.equal((await c.post(`/api/v1/channels/${id}/p2/faults`, { delay_ms: 400 })).status, 200);
  const sent = await c.post('/api/v1/messages', { from: id, to: 'p2', payload, amount: 7 });
  t.equal(sent.status, 202);
  const snap = await c.post('/api/v1/processes/p2/snapshot');
  t.equal(snap.status, 201);
  const wrote = await c.put(`/api/v1/kv/${encodeURIComponent(key)}`, { value, writer: id });
  t.equal(wrote.status, 200);
  t.same([wrote.body.key, wrote.body.written.value], [key, value], 'the write answers with the key and value as sent');

  const processes = await c.get('/api/v1/processes');
  t.ok(
    processes.body.processes.some((p: any) => p.id === id),
    'GET processes lists the longest id',
  );
  t.equal((await c.get(`/api/v1/processes/${id}`)).body.id, id, 'GET process by id');
  const read = await c.get(`/api/v1/kv/${encodeURIComponent(key)}?reader=${id}`);
  t.same([read.status, read.body.versions[0].value], [200, value], 'GET kv returns the value whole');
  t.ok((await c.get('/api/v1/kv')).body.keys.includes(key), 'GET kv lists the key whole');
  const delivered = await live.waitFor((e) => e.type === 'message_delivered' && e.data.id === sent.body.id, 10_000);
  t.equal(delivered.data.payload, payload, 'the payload arrives whole on /ws');
  t.equal(
    (await live.waitFor((e) => e.type === 'internal_event' && e.data.process === id)).data.label,
    label,
    'the label arrives whole on /ws',
  );
  t.equal(
    (await live.waitFor((e) => e.type === 'kv_write' && e.data.key === key)).data.value,
    value,
    'the KV write arrives whole on /ws',
  );
  const done = await eventually(async () => {
    const r = await c.get(`/api/v1/snapshots/${snap.body.id}`);
    return r.body.status === 'complete' ? r : undefined;
  }, 10_000);
  const inTransit = JSON.stringify(done.body);
  t.ok(inTransit.includes(JSON.stringify(payload)), 'the snapshot shows the in-transit payload whole');
  t.equal((await c.get(`/snapshots/${snap.body.id}/verify`)).body.consistent, true);
  t.equal((await c.get('/api/v1/simulation/state')).status, 200, 'the simulation state is served');

  const replay = await wsCollect(ws);
  t.equal(
    (await replay.waitFor((e) => e.type === 'message_sent' && e.data.id === sent.body.id)).data.payload,
    payload,
    'the replay on connect carries the payload whole',
  );
  t.equal(
    (await replay.waitFor((e) => e.type === 'kv_write' && e.data.key === key)).data.value,
    value,
    'and the KV write',
  );
  replay.close();

  const p = api(proxy);
  t.equal(
    (await p.get(`/api/v1/kv/${encodeURIComponent(key)}`)).body.versions[0].value,
    value,
    'the proxy serves the value whole',
  );
  const viaProxy = await wsCollect(proxyWs);
  t.equal(
    (await viaProxy.waitFor((e) => e.type === 'message_delivered' && e.data.id === sent.body.id)).data.payload,
    payload,
    'the proxy’s WebSocket carries the payload whole',
  );
  viaProxy.close();
});

t.test('a simulation holding a matrix clock is kept small enough to serve', async (t) => {
  const { lab, c } = await start();
  t.teardown(() => lab.close());
  t.equal((await c.post('/api/v1/processes', { id: 'm', clock_type: 'matrix' })).status, 201);
  for (let i = 4; i < matrixSimulationProcessesMax; i++)
    t.equal((await c.post('/api/v1/processes', { id: `p${i}` })).status, 201);
  const full = await c.post('/api/v1/processes', { id: 'one-more' });
  t.equal(full.status, 409, `process ${matrixSimulationProcessesMax + 1} of a matrix simulation is refused`);
  t.match(full.body.error, new RegExp(`${matrixSimulationProcessesMax}`), 'naming the limit');
  const b = await c.post('/api/v1/broadcast', { from: 'm', payload: 'to all' });
  t.equal(b.status, 202, 'a broadcast from the matrix process is answered');
  t.equal((await c.get('/api/v1/processes')).status, 200);
  await c.post('/api/v1/simulation/reset');
  for (let i = 4; i <= matrixSimulationProcessesMax; i++) await c.post('/api/v1/processes', { id: `v${i}` });
  t.equal(
    (await c.post('/api/v1/processes', { id: 'late-matrix', clock_type: 'matrix' })).status,
    409,
    'and no matrix process joins a larger simulation',
  );
  t.equal((await c.post('/api/v1/processes', { id: 'late-vector' })).status, 201, 'while vector processes still do');
});

t.test('undelivered messages are held to a memory budget, and it is released on delivery', async (t) => {
  // The default (undeliveredBytesMax, 256 MiB) holds about 500 messages of a dense 256-process
  // simulation; a small budget set through the environment shows the same rule quickly.
  const budget = 1024 * 1024;
  const { lab, c } = await start({ VC_UNDELIVERED_BYTES_MAX: String(budget) });
  t.teardown(() => lab.close());
  t.ok(undeliveredBytesMax >= 64 * budget, 'the default budget is the documented constant');
  // 64 processes that each broadcast once: every SENT matrix becomes dense (64 × 64 numbers), and
  // every later message carries a copy of its sender's.
  for (let i = 4; i <= 64; i++) await c.post('/api/v1/processes', { id: `n${i}` });
  for (const p of (await c.get('/api/v1/processes')).body.processes as Array<{ id: string }>)
    await c.post('/api/v1/broadcast', { from: p.id, payload: '' });
  await eventually(async () => (await c.get('/api/v1/simulation/state')).body.in_flight === 0, 20_000);
  t.equal((await c.post('/api/v1/channels/p1/p2/faults', { delay_ms: 60_000 })).status, 200);
  let refused: { status: number; body: any } | undefined;
  let accepted = 0;
  for (let i = 0; i < 1000 && !refused; i++) {
    const r = await c.post('/api/v1/messages', { from: 'p1', to: 'p2', payload: 'x' });
    if (r.status === 202) accepted++;
    else refused = r;
  }
  t.equal(
    refused?.status,
    409,
    `a send past the budget is refused (after ${accepted} held messages of a dense 64-process simulation)`,
  );
  t.ok(accepted > 0 && accepted < 100, 'each message counts its copy of the SENT matrix');
  t.match(refused?.body.error, new RegExp(`${budget} bytes`), 'naming the limit');
  const state = (await c.get('/api/v1/simulation/state')).body;
  t.ok(state.undelivered_bytes <= budget, 'the estimate stays within the budget');
  await c.del('/api/v1/faults');
  await c.post('/api/v1/simulation/reset');
  t.equal((await c.get('/api/v1/simulation/state')).body.undelivered_bytes, 0, 'a reset releases it');
  t.equal((await c.post('/api/v1/messages', { from: 'p1', to: 'p2', payload: 'x' })).status, 202);
  await eventually(async () => (await c.get('/api/v1/simulation/state')).body.undelivered_bytes === 0, 5000);
  t.pass('delivery releases what a message held');
});

t.test('a snapshot whose marker is lost is incomplete at once and records nothing more', async (t) => {
  const { lab, c } = await start();
  t.teardown(() => lab.close());
  const part = await c.post('/api/v1/partition', { side_a: ['p1'], side_b: ['p2'] });
  t.equal(part.status, 201);
  const snap = await c.post('/api/v1/processes/p1/snapshot');
  const s = await eventually(async () => {
    const r = await c.get(`/api/v1/snapshots/${snap.body.id}`);
    return r.body.status === 'incomplete' ? r : undefined;
  }, 5000);
  t.equal(s.body.status, 'incomplete', 'the lost marker makes the snapshot incomplete');
  t.equal((await c.del(`/api/v1/partition/${part.body.id}`)).status, 204);
  for (let i = 0; i < 20; i++) await c.post('/api/v1/messages', { from: 'p2', to: 'p1', payload: 'after the heal' });
  await eventually(async () => (await c.get('/api/v1/simulation/state')).body.in_flight === 0, 5000);
  const v = await c.get(`/api/v1/snapshots/${snap.body.id}/verify`);
  t.equal(v.body.in_transit, 0, 'messages after the loss are not recorded (they would be, forever)');
  t.match(v.body.reasons.join(' '), /marker on .* was lost/, 'the verifier says why');
});

t.test('KV merges are held to the value limit, and the store to its budget', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'clocklab-'));
  const configPath = join(dir, 'lab.yaml');
  writeFileSync(configPath, 'kv:\n  conflict_strategy: merge\n');
  const { lab, c, ws } = await start({ CONFIG_PATH: configPath, VC_WS_CLIENT_QUEUE_BYTES: String(256 * 1024 * 1024) });
  t.teardown(() => lab.close());
  const half = Math.ceil(kvValueCharsMax / 2) + 1;
  t.equal((await c.put('/api/v1/kv/m', { value: 'a'.repeat(half), writer: 'p1' })).status, 200);
  const merged = await c.put('/api/v1/kv/m', { value: 'b'.repeat(half), writer: 'p2' });
  t.equal(merged.status, 409, 'a merge past the value limit is refused');
  t.match(merged.body.error, new RegExp(`${kvValueCharsMax}`), 'naming the limit');
  t.equal((await c.get('/api/v1/kv/m')).body.versions[0].value, 'a'.repeat(half), 'the stored value is unchanged');

  const perWrite = kvValueCharsMax;
  const fits = Math.floor(kvStoreCharsMax / perWrite) - 1; // the key m holds one value already
  const value = 'v'.repeat(perWrite);
  for (let i = 0; i < fits; i += 16) {
    const batch = Array.from({ length: Math.min(16, fits - i) }, (_, j) =>
      c.put(`/api/v1/kv/k${i + j}`, { value, writer: 'p3' }),
    );
    for (const r of await Promise.all(batch)) if (r.status !== 200) t.fail(`write ${i} answered ${r.status} ${r.text}`);
  }
  const over = await c.put('/api/v1/kv/one-more', { value, writer: 'p3' });
  t.equal(over.status, 409, 'a write past the store budget is refused');
  t.match(over.body.error, new RegExp(`${kvStoreCharsMax}`), 'naming the limit');

  // Replacing writes: each kv_write event carries the new value and the replaced one (32 Ki
  // characters), so 1000 events would be 16 Mi characters of history without its size bound.
  for (let i = 0; i < 600; i += 16) {
    const batch = Array.from({ length: 16 }, () => c.put('/api/v1/kv/k0', { value, writer: 'p3' }));
    for (const r of await Promise.all(batch))
      if (r.status !== 200) t.fail(`replacing write answered ${r.status} ${r.text}`);
  }
  const replay = await wsCollect(ws);
  await sleep(300);
  const chars = replay.messages.reduce((n: number, m: unknown) => n + JSON.stringify(m).length, 0);
  t.ok(
    chars <= busHistoryCharsMax * 1.05,
    `the replay on connect is bounded in size (${chars} characters; history ${busHistoryCharsMax})`,
  );
  t.ok(replay.messages.length > 0, 'and still replays the latest events');
  replay.close();
});

t.test('kept snapshots are bounded by the channel records they hold, not only by their number', async (t) => {
  const { lab, c } = await start();
  t.teardown(() => lab.close());
  for (let i = 4; i <= processCountMax; i++) await c.post('/api/v1/processes', { id: `n${i}` });
  // One slow channel keeps every snapshot running (p1's marker to p2 takes a minute).
  t.equal((await c.post('/api/v1/channels/p1/p2/faults', { delay_ms: 60_000 })).status, 200);
  const perSnapshot = processCountMax * (processCountMax - 1);
  const fit = Math.floor(snapshotChannelsKeptMax / perSnapshot);
  for (let i = 0; i < fit; i++)
    t.equal(
      (await c.post('/api/v1/processes/p3/snapshot')).status,
      201,
      `snapshot ${i + 1} of ${processCountMax} processes starts`,
    );
  const over = await c.post('/api/v1/processes/p3/snapshot');
  t.equal(over.status, 409, `snapshot ${fit + 1} would hold more than ${snapshotChannelsKeptMax} channel records: 409`);
  t.match(over.body.error, new RegExp(`${snapshotChannelsKeptMax}`), 'naming the limit');
  await c.del('/api/v1/faults');
  await c.post('/api/v1/simulation/reset');
  t.equal((await c.get('/api/v1/snapshots')).body.snapshots.length, 0, 'a reset discards them');
});

t.test('the new settings are checked at start like the others', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'clocklab-bad-'));
  const many = join(dir, 'many.yaml');
  writeFileSync(
    many,
    `processes:\n  - { id: m, clock_type: matrix }\n` +
      `${Array.from({ length: matrixSimulationProcessesMax }, (_, i) => `  - q${i}\n`).join('')}`,
  );
  const cases: Array<{ name: string; env: Record<string, string>; error: RegExp }> = [
    {
      name: 'a matrix simulation past its size in the file',
      env: { CONFIG_PATH: many },
      error: new RegExp(`at most ${matrixSimulationProcessesMax} processes`),
    },
    {
      name: 'a WebSocket client cap of 0',
      env: { VC_WS_CLIENTS_MAX: '0' },
      error: /VC_WS_CLIENTS_MAX must be an integer/,
    },
    {
      name: 'an undelivered budget that is not a number',
      env: { VC_UNDELIVERED_BYTES_MAX: 'lots' },
      error: /VC_UNDELIVERED_BYTES_MAX must be an integer/,
    },
  ];
  for (const k of cases)
    await t.rejects(startClockLab({ port: 0, proxyPort: false, env: k.env, logger: silentLogger() }), k.error, k.name);
});
