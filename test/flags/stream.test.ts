/**
 * Black-box tests of SDK streaming and the SDK: SSE put/patch/delete to several clients (segment
 * changes to every environment of the project), Last-Event-ID resume from the replay log or a fresh
 * put, heartbeats, key checks, slow-client disconnection, and the TypeScript SDK plus its OpenFeature
 * provider evaluating locally, following changes and reconnecting after a server restart.
 */
import t from 'tap';
import { connect, createServer, type Socket } from 'node:net';
import { OpenFeature, ProviderEvents } from '@openfeature/server-sdk';
import { FlagsClient } from '../../src/flags/sdk/client.js';
import { SimlabFlagsProvider } from '../../src/flags/sdk/provider.js';
import { boolFlag, openStream, startHarness, type Harness } from './fixtures/helpers.js';

const P = '/api/v1/projects/web';
const E = `${P}/environments/prod`;

async function sdkKeys(h: Harness, token: string): Promise<Record<string, string>> {
  const envs = (await h.call('GET', `${P}/environments`, { token })).body as Array<{ key: string; sdkKey: string }>;
  return Object.fromEntries(envs.map((e) => [e.key, e.sdkKey]));
}

function json(data: string): Record<string, unknown> {
  return JSON.parse(data) as Record<string, unknown>;
}

/**
 * A TCP relay in front of the server, so a client keeps one address while the server behind it
 * restarts on a new port (uWS cannot rebind a port whose server-side sockets sit in TIME_WAIT).
 */
async function relay(target: () => number): Promise<{ port: number; dropAll(): void; close(): void }> {
  const pairs = new Set<Socket>();
  const server = createServer((inbound) => {
    const outbound = connect(target(), '127.0.0.1');
    pairs.add(inbound).add(outbound);
    inbound.pipe(outbound).pipe(inbound);
    const end = (): void => {
      inbound.destroy();
      outbound.destroy();
      pairs.delete(inbound);
      pairs.delete(outbound);
    };
    inbound.on('error', end).on('close', end);
    outbound.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as { port: number }).port,
    dropAll: () => pairs.forEach((s) => s.destroy()),
    close: () => {
      pairs.forEach((s) => s.destroy());
      server.close();
    },
  };
}

async function waitFor(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

t.test(
  'put on connect, then patch and delete reach every client; segment changes reach every environment',
  async (t) => {
    const h = await startHarness(t);
    const tok = await h.login();
    await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('a') });
    await h.call('POST', `${P}/environments/staging/flags`, { token: tok, body: boolFlag('a') });
    await h.call('POST', `${P}/segments`, { token: tok, body: { key: 'beta', included: ['u1'] } });
    const keys = await sdkKeys(h, tok);
    const c1 = await openStream(h.base, keys['prod'] ?? '');
    const c2 = await openStream(h.base, `Bearer ${keys['prod']}`);
    const c3 = await openStream(h.base, keys['staging'] ?? '');
    t.teardown(() => [c1, c2, c3].forEach((c) => c.close()));
    t.equal(c1.status, 200);
    for (const c of [c1, c2, c3]) {
      const put = await c.next();
      t.equal(put.event, 'put');
      const data = json(put.data)['data'] as {
        flags: Record<string, { version: number }>;
        segments: Record<string, unknown>;
      };
      t.same(Object.keys(data.flags), ['a']);
      t.same(Object.keys(data.segments), ['beta'], 'segments of the project come with every environment');
      t.match(put.id, /^\d+$/, 'the put carries an id');
    }

    await h.call('PUT', `${E}/flags/a`, { token: tok, body: boolFlag('a', { enabled: false }) });
    for (const c of [c1, c2]) {
      const p = await c.next();
      t.equal(p.event, 'patch');
      const body = json(p.data) as { path: string; data: { version: number; enabled: boolean } };
      t.equal(body.path, '/flags/a');
      t.equal(body.data.version, 2);
      t.equal(body.data.enabled, false);
    }
    await h.call('PUT', `${P}/segments/beta`, { token: tok, body: { included: ['u2'] } });
    for (const c of [c1, c2, c3]) {
      const p = await c.next();
      t.equal(p.event, 'patch', 'a segment update reaches prod and staging');
      t.equal((json(p.data) as { path: string }).path, '/segments/beta');
    }
    await h.call('DELETE', `${E}/flags/a`, { token: tok });
    for (const c of [c1, c2]) {
      const d = await c.next();
      t.equal(d.event, 'delete');
      t.same(json(d.data), { path: '/flags/a', version: 3 });
    }
    await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('b') });
    t.equal((await c1.next()).event, 'patch', 'a created flag arrives as a patch');
    t.equal(c3.events.filter((e) => e.event !== 'put').length, 1, 'staging saw only the segment change');
    const ids = c1.events.map((e) => Number(e.id));
    t.ok(
      ids.every((id, i) => i === 0 || id > (ids[i - 1] ?? 0)),
      `ids increase: ${ids.join(',')}`,
    );
    const m = String((await h.call('GET', '/metrics')).body);
    t.match(m, /flags_sse_clients 3/);
  },
);

t.test('a client resuming with Last-Event-ID gets exactly what it missed, without a put', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('a') });
  const key = (await sdkKeys(h, tok))['prod'] ?? '';
  const first = await openStream(h.base, key);
  const put = await first.next();
  first.close();
  await h.call('PUT', `${E}/flags/a`, { token: tok, body: boolFlag('a', { enabled: false }) });
  await h.call('POST', '/api/v1/projects/other/segments', { token: tok, body: { key: 'elsewhere' } });
  await h.call('POST', `${P}/segments`, { token: tok, body: { key: 's' } });
  await h.call('POST', '/api/v1/projects/web/environments/staging/flags', { token: tok, body: boolFlag('not-mine') });
  await h.call('DELETE', `${E}/flags/a`, { token: tok });
  const again = await openStream(h.base, key, { 'last-event-id': put.id ?? '' });
  t.teardown(() => again.close());
  const got = [await again.next(), await again.next(), await again.next()];
  t.same(
    got.map((e) => `${e.event} ${(json(e.data) as { path: string }).path}`),
    ['patch /flags/a', 'patch /segments/s', 'delete /flags/a'],
  );
  t.ok(got.every((e) => Number(e.id) > Number(put.id)));
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('c') });
  const live = await again.next();
  t.equal((json(live.data) as { path: string }).path, '/flags/c', 'then it continues live');
  t.notOk(
    again.events.some((e) => e.event === 'put'),
    'no put was sent',
  );

  const upToDate = await openStream(h.base, key, { 'last-event-id': live.id ?? '' });
  t.teardown(() => upToDate.close());
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('d') });
  const next = await upToDate.next();
  t.equal((json(next.data) as { path: string }).path, '/flags/d', 'an up-to-date client just continues');
});

t.test('a Last-Event-ID older than the replay log, or from the future, gets a fresh put', async (t) => {
  const h = await startHarness(t, { FLAGS_SSE_REPLAY_LOG_MAX: '2' });
  const tok = await h.login();
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('a') });
  const key = (await sdkKeys(h, tok))['prod'] ?? '';
  const first = await openStream(h.base, key);
  const put = await first.next();
  first.close();
  for (const enabled of [false, true, false, true])
    await h.call('PUT', `${E}/flags/a`, { token: tok, body: boolFlag('a', { enabled }) });
  const cases = [
    { name: 'older than the log', id: put.id ?? '' },
    { name: 'never issued', id: '999999' },
    { name: 'not a number', id: 'abc' },
  ];
  for (const c of cases) {
    const s = await openStream(h.base, key, { 'last-event-id': c.id });
    const e = await s.next();
    s.close();
    t.equal(e.event, 'put', c.name);
    const flag = (json(e.data)['data'] as { flags: Record<string, { version: number }> }).flags['a'];
    t.equal(flag?.version, 5, `${c.name}: the put is current`);
  }
  t.match(
    String((await h.call('GET', '/metrics')).body),
    /flags_sse_replay_log_evicted_total [1-9]/,
    'evictions are counted',
  );
});

t.test('heartbeats arrive as comments, and SDK keys are checked', async (t) => {
  const h = await startHarness(t, { FLAGS_SSE_HEARTBEAT_MS: '50' });
  const tok = await h.login();
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('a') });
  const key = (await sdkKeys(h, tok))['prod'] ?? '';
  const s = await openStream(h.base, key);
  t.teardown(() => s.close());
  await s.next();
  await waitFor(() => s.parser.comments >= 2, 'two heartbeats');
  t.ok(s.parser.comments >= 2);
  const refused: Array<[string, string | undefined, string]> = [
    ['no key', undefined, 'missing token'],
    ['a wrong key', 'sdk-nope', 'invalid token'],
    ['a user token', `Bearer ${tok}`, 'invalid token'],
  ];
  for (const [name, auth, msg] of refused) {
    const res = await fetch(`${h.base}/sdk/v1/stream`, { headers: auth ? { authorization: auth } : {} });
    t.equal(res.status, 401, name);
    t.same(await res.json(), { error: msg }, name);
  }
});

t.test('a client that stops reading is disconnected instead of growing server memory', async (t) => {
  const h = await startHarness(t, { FLAGS_SSE_CLIENT_BUFFER_BYTES: '65536' });
  const tok = await h.login();
  // About 180 KB: three string variations near the 64 KiB value limit (src/flags/limits.ts).
  const big = {
    key: 'big',
    type: 'string',
    enabled: true,
    defaultVariation: 'a',
    variations: ['a', 'b', 'c'].map((k) => ({ key: k, value: k.repeat(60_000) })),
  };
  await h.call('POST', `${E}/flags`, { token: tok, body: big });
  const key = (await sdkKeys(h, tok))['prod'] ?? '';
  const sock = connect(h.server.port, '127.0.0.1');
  await new Promise<void>((resolve) => sock.once('connect', () => resolve()));
  sock.write(`GET /sdk/v1/stream HTTP/1.1\r\nHost: x\r\nAuthorization: ${key}\r\n\r\n`);
  let received = 0;
  let tail = '';
  sock.on('data', (d) => {
    received += d.length;
    tail = (tail + d.toString('latin1')).slice(-16);
  });
  sock.once('data', () => sock.pause()); // and never read again (until the end of the test)
  t.teardown(() => sock.destroy());
  await waitFor(() => received > 0, 'the first bytes');
  for (let i = 0; i < 60; i++) {
    await h.call('PUT', `${E}/flags/big`, { token: tok, body: { ...big, enabled: i % 2 === 0 } });
    const m = String((await h.call('GET', '/metrics')).body);
    if (/flags_sse_slow_clients_disconnected_total [1-9]/.test(m)) break;
  }
  const m = String((await h.call('GET', '/metrics')).body);
  t.match(m, /flags_sse_slow_clients_disconnected_total 1/, 'counted as a slow client');
  t.match(m, /flags_sse_clients 0/, 'and gone from the hub');
  // The server drops the stalled connection at once (its queued bytes are freed, not kept for a
  // client that may never read); reading again shows the socket closed.
  let closed = false;
  sock.once('close', () => (closed = true));
  sock.once('end', () => (closed = true));
  sock.resume();
  await waitFor(() => closed, 'the connection to close', 10_000);
  t.pass('the server closed the stalled connection');
});

t.test('the SDK evaluates locally, follows changes, and resumes after a server restart', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  await h.call('POST', `${P}/segments`, { token: tok, body: { key: 'beta', included: ['u1'] } });
  await h.call('POST', `${E}/flags`, {
    token: tok,
    body: boolFlag('new-ui', {
      rules: [{ id: 'beta', clauses: [{ attribute: '', op: 'segmentMatch', values: ['beta'] }], variation: 'on' }],
    }),
  });
  const key = (await sdkKeys(h, tok))['prod'] ?? '';
  const front = await relay(() => h.server.port);
  t.teardown(() => front.close());
  const client = new FlagsClient({
    baseUrl: `http://127.0.0.1:${front.port}`,
    sdkKey: key,
    initialBackoffMs: 50,
    maxBackoffMs: 200,
    random: () => 0.5,
  });
  t.teardown(() => client.close());
  await client.waitForInitialization(5000);
  t.equal(client.evaluate('new-ui', { key: 'u1' })?.value, true);
  t.equal(client.evaluate('new-ui', { key: 'u2' })?.value, false);
  t.equal(client.evaluate('missing', { key: 'u1' }), undefined);
  const changes: string[] = [];
  client.onChange((c) => changes.push(`${c.kind}:${c.key}`));
  await h.call('PUT', `${P}/segments/beta`, { token: tok, body: { included: ['u2'] } });
  await waitFor(() => client.evaluate('new-ui', { key: 'u2' })?.value === true, 'the segment change');
  t.equal(client.evaluate('new-ui', { key: 'u1' })?.value, false, 'u1 left the segment');
  t.same(changes, ['segment:beta']);
  t.same(Object.keys(client.allFlags({ key: 'u1' })), ['new-ui']);

  // Restart behind the relay: the client reconnects with Last-Event-ID and sees later changes.
  const seenBefore = client.connections;
  await h.restart();
  front.dropAll();
  await waitFor(() => client.connections > seenBefore, 'a reconnection', 10_000);
  t.equal(client.lastEventId !== undefined, true, 'it had an event id to resume from');
  await h.call('PUT', `${E}/flags/new-ui`, { token: tok, body: boolFlag('new-ui', { enabled: false }) });
  await waitFor(
    () => client.evaluate('new-ui', { key: 'u2' })?.reason.kind === 'OFF',
    'the change after the restart',
    10_000,
  );
  t.pass('the change made after the restart arrived');
  await h.call('DELETE', `${E}/flags/new-ui`, { token: tok });
  await waitFor(() => client.flag('new-ui') === undefined, 'the delete');
  t.same(changes.slice(-2), ['flag:new-ui', 'flag:new-ui']);
});

t.test('a wrong SDK key makes the client fail instead of retrying forever', async (t) => {
  const h = await startHarness(t);
  const client = new FlagsClient({ baseUrl: h.base, sdkKey: 'sdk-wrong', initialBackoffMs: 10 });
  t.teardown(() => client.close());
  await t.rejects(client.waitForInitialization(3000), /refused the SDK key/);
  t.equal(client.state, 'failed');
});

t.test('the OpenFeature provider resolves locally and follows changes', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  await h.call('POST', `${E}/flags`, {
    token: tok,
    body: boolFlag('checkout', {
      targets: [{ contextKeys: ['vip'], variation: 'on' }],
      rules: [{ id: 'nl', clauses: [{ attribute: 'country', op: 'in', values: ['NL'] }], variation: 'on' }],
    }),
  });
  await h.call('POST', `${E}/flags`, {
    token: tok,
    body: {
      key: 'limit',
      type: 'integer',
      enabled: true,
      variations: [
        { key: 'low', value: 10 },
        { key: 'high', value: 100 },
      ],
      defaultVariation: 'low',
      rollout: [
        { variation: 'low', weight: 0 },
        { variation: 'high', weight: 100000 },
      ],
    },
  });
  await h.call('POST', `${E}/flags`, {
    token: tok,
    body: {
      key: 'theme',
      type: 'json',
      enabled: false,
      variations: [{ key: 'dark', value: { bg: '#000' } }],
      defaultVariation: 'dark',
    },
  });
  const key = (await sdkKeys(h, tok))['prod'] ?? '';
  const provider = new SimlabFlagsProvider({ baseUrl: h.base, sdkKey: key });
  await OpenFeature.setProviderAndWait(provider);
  t.teardown(() => OpenFeature.close());
  const of = OpenFeature.getClient();
  const cases: Array<{ name: string; run: () => Promise<unknown>; expect: Record<string, unknown> }> = [
    {
      name: 'a target',
      run: () => of.getBooleanDetails('checkout', false, { targetingKey: 'vip' }),
      expect: { value: true, reason: 'TARGETING_MATCH', variant: 'on' },
    },
    {
      name: 'a rule',
      run: () => of.getBooleanDetails('checkout', false, { targetingKey: 'u1', country: 'NL' }),
      expect: { value: true, reason: 'TARGETING_MATCH', flagMetadata: { ruleId: 'nl' } },
    },
    {
      name: 'the default',
      run: () => of.getBooleanDetails('checkout', true, { targetingKey: 'u1', country: 'DE' }),
      expect: { value: false, reason: 'DEFAULT', variant: 'off' },
    },
    {
      name: 'a rollout',
      run: () => of.getNumberDetails('limit', 0, { targetingKey: 'u1' }),
      expect: { value: 100, reason: 'SPLIT', variant: 'high' },
    },
    {
      name: 'a disabled flag',
      run: () => of.getObjectDetails('theme', {}, { targetingKey: 'u1' }),
      expect: { value: { bg: '#000' }, reason: 'DISABLED' },
    },
    {
      name: 'an unknown flag',
      run: () => of.getBooleanDetails('nope', true, { targetingKey: 'u1' }),
      expect: { value: true, errorCode: 'FLAG_NOT_FOUND' },
    },
    {
      name: 'the wrong type',
      run: () => of.getStringDetails('checkout', 'dflt', { targetingKey: 'u1' }),
      expect: { value: 'dflt', errorCode: 'TYPE_MISMATCH' },
    },
  ];
  for (const c of cases) t.match(await c.run(), c.expect, c.name);
  let changed: string[] = [];
  provider.events.addHandler(ProviderEvents.ConfigurationChanged, (d) => {
    const keys: unknown = d && 'flagsChanged' in d ? d.flagsChanged : undefined;
    changed = Array.isArray(keys) ? keys.map(String) : [];
  });
  await h.call('PUT', `${E}/flags/checkout`, { token: tok, body: boolFlag('checkout', { defaultVariation: 'on' }) });
  await waitFor(() => changed.includes('checkout'), 'ConfigurationChanged');
  t.equal(
    await of.getBooleanValue('checkout', false, { targetingKey: 'u1', country: 'DE' }),
    true,
    'the change is visible to OpenFeature',
  );
});
