/**
 * Black-box regression tests for the issue-16 findings on the flag service, against the real server
 * on a free port: authentication before the body on every authenticated route (401/403, never a
 * 400 about a body nobody was allowed to send), login limited per account as well as per address,
 * empty and `null` bodies refused without changing anything, and SDK streams held to the slow-client
 * limit from the first byte of their `put` (non-reading clients cut off and counted, process memory
 * bounded, a reading client still getting the whole put).
 */
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { adminEmail, boolFlag, openStream, startHarness, type Harness } from './fixtures/helpers.js';

const P = '/api/v1/projects/web';
const E = `${P}/environments/prod`;

function err(r: { body: unknown }): string {
  return (r.body as { error?: string } | undefined)?.error ?? '';
}

async function sdkKey(h: Harness, token: string): Promise<string> {
  const envs = (await h.call('GET', `${P}/environments`, { token })).body as Array<{ key: string; sdkKey: string }>;
  return envs.find((e) => e.key === 'prod')?.sdkKey ?? '';
}

async function waitFor(cond: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const bodyRoutes: Array<[string, string]> = [
  ['PUT', E],
  ['POST', `${E}/flags`],
  ['PUT', `${E}/flags/a`],
  ['POST', `${P}/segments`],
  ['PUT', `${P}/segments/s`],
  ['POST', `${E}/evaluate`],
  ['POST', '/api/v1/users'],
  ['DELETE', `${E}/flags/a`],
];

t.test('every authenticated route answers 401 before it reads or parses the body', async (t) => {
  const h = await startHarness(t);
  const admin = await h.login();
  await h.call('POST', '/api/v1/users', {
    token: admin,
    body: { email: 'viewer@example.com', password: 'pass-word-123', role: 'viewer' },
  });
  const viewer = await h.login('viewer@example.com', 'pass-word-123');
  const bodies: Array<[string, string]> = [
    ['malformed JSON', '{"key": '],
    ['a deeply nested body', `${'['.repeat(50_000)}${']'.repeat(50_000)}`],
    ['an invalid body', '{"nope": true}'],
  ];
  for (const [method, path] of bodyRoutes) {
    for (const [what, raw] of bodies) {
      const none = await h.call(method, path, { raw });
      t.equal(none.status, 401, `${method} ${path}, ${what}, no token`);
      t.equal(err(none), 'missing token');
      const bad = await h.call(method, path, { raw, headers: { authorization: 'Bearer a.b.c' } });
      t.equal(bad.status, 401, `${method} ${path}, ${what}, an invalid token`);
      t.equal(err(bad), 'invalid token');
    }
    // A viewer may read and evaluate; anything else is a 403 before the body is looked at.
    if (!path.endsWith('/evaluate')) {
      const forbidden = await h.call(method, path, { raw: '{"key": ', token: viewer });
      t.equal(forbidden.status, 403, `${method} ${path}, a viewer with a malformed body`);
    }
  }
  const withToken = await h.call('POST', `${E}/flags`, { raw: '{"key": ', token: admin });
  t.equal(withToken.status, 400, 'with a valid token the malformed body is a 400 as before');

  // The SDK evaluate route: no key, or a wrong one, is a 401 whatever the body.
  for (const [what, raw] of bodies) {
    const none = await h.call('POST', '/sdk/v1/evaluate', { raw });
    t.equal(none.status, 401, `SDK evaluate without a key, ${what}`);
    const wrong = await h.call('POST', '/sdk/v1/evaluate', { raw, headers: { authorization: 'sdk-wrong' } });
    t.equal(wrong.status, 401, `SDK evaluate with a wrong key, ${what}`);
    t.equal(err(wrong), 'invalid token');
  }
  await h.call('POST', `${E}/flags`, { token: admin, body: boolFlag('a') });
  const key = await sdkKey(h, admin);
  const malformed = await h.call('POST', '/sdk/v1/evaluate', { raw: '{"context": ', headers: { authorization: key } });
  t.equal(malformed.status, 400, 'with the right key a malformed body is a 400');
  t.match(err(malformed), /^malformed JSON/);
  const good = await h.call('POST', '/sdk/v1/evaluate', {
    body: { context: { key: 'u1' } },
    headers: { authorization: key },
  });
  t.equal(good.status, 200, 'and a good one is evaluated');
  t.same((good.body as { flags: Record<string, { value: unknown }> }).flags['a']?.value, false);
});

/** POST /auth/login from a given loopback source address (127.0.0.x all reach the server). */
function loginFrom(
  h: Harness,
  localAddress: string,
  email: string,
  password: string,
): Promise<{ status: number; retryAfter: string | undefined; error: string }> {
  const body = JSON.stringify({ email, password });
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${h.base}/auth/login`,
      {
        method: 'POST',
        localAddress,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => {
          const retry = res.headers['retry-after'];
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: typeof retry === 'string' ? retry : undefined,
            error: (JSON.parse(text) as { error?: string }).error ?? '',
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

t.test('login is limited per account as well as per address: 20 addresses x 10 guesses at one account', async (t) => {
  const h = await startHarness(t, { FLAGS_LOGIN_ATTEMPTS_PER_MINUTE: '10', FLAGS_LOGIN_ATTEMPTS_PER_ACCOUNT: '20' });
  const statuses: Record<number, number> = {};
  let accountLimited: { retryAfter: string | undefined; error: string } | undefined;
  for (let a = 0; a < 20; a++) {
    const from = `127.0.0.${a + 2}`;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => loginFrom(h, from, adminEmail, `guess-${a}-${i}`)),
    );
    for (const r of results) {
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      if (r.status === 429) accountLimited = r;
    }
  }
  t.equal(statuses[401], 20, `only 20 guesses were checked (${JSON.stringify(statuses)})`);
  t.equal(statuses[429], 180, 'the other 180 were refused');
  t.match(accountLimited?.error, /too many login attempts for this account/);
  t.match(accountLimited?.retryAfter, /^\d+$/, 'with Retry-After');
  const fresh = await loginFrom(h, '127.0.0.100', adminEmail, 'correct horse battery staple');
  t.equal(fresh.status, 429, 'the account stays limited from a fresh address, even with the right password');
  const other = await loginFrom(h, '127.0.0.100', 'nobody@example.com', 'some-password');
  t.equal(other.status, 401, 'another account is not limited');
  const perAddress = await Promise.all(
    Array.from({ length: 11 }, (_, i) => loginFrom(h, '127.0.0.101', `user${i}@example.com`, 'some-password')),
  );
  t.equal(perAddress.filter((r) => r.status === 429).length, 1, 'and the per-address limit still holds (11th attempt)');
  t.match(perAddress.find((r) => r.status === 429)?.error, /from this address/);
});

t.test('an empty, null or non-object body on a POST or PUT is a 400 and changes nothing', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('a') });
  await h.call('POST', `${P}/segments`, {
    token: tok,
    body: { key: 's', included: ['u1', 'u2'], rules: [{ clauses: [{ attribute: 'c', op: 'in', values: ['x'] }] }] },
  });
  const state = async (): Promise<unknown> => [
    (await h.call('GET', `${E}/flags`, { token: tok })).body,
    (await h.call('GET', `${P}/segments`, { token: tok })).body,
    (await h.call('GET', `${P}/audit`, { token: tok })).body,
    (await h.call('GET', '/api/v1/users', { token: tok })).body,
  ];
  const before = await state();
  const routes: Array<[string, string]> = [
    ['PUT', `${P}/segments/s`],
    ['PUT', `${E}/flags/a`],
    ['POST', `${E}/flags`],
    ['POST', `${P}/segments`],
    ['POST', `${E}/evaluate`],
    ['POST', '/api/v1/users'],
    ['PUT', `${P}/environments/new-env`],
  ];
  for (const [method, path] of routes) {
    // Creating an environment needs no body at all; any body it is sent must still be an object.
    for (const raw of path.endsWith('new-env') ? ['null', '[]', '"text"', '7'] : ['', 'null', '[]', '"text"', '7']) {
      const r = await h.call(method, path, { token: tok, raw });
      t.equal(r.status, 400, `${method} ${path} with body ${JSON.stringify(raw)}`);
      t.ok(err(r).length > 0, 'with an {error}');
    }
  }
  for (const raw of ['', 'null']) {
    t.equal((await h.call('POST', '/auth/login', { raw })).status, 400, `login with ${JSON.stringify(raw)}`);
    t.equal((await h.call('POST', '/auth/refresh', { raw })).status, 400, `refresh with ${JSON.stringify(raw)}`);
  }
  t.same(await state(), before, 'nothing changed (the segment keeps its members and rules)');
  t.same(
    ((await h.call('GET', `${P}/environments`, { token: tok })).body as Array<{ key: string }>).map((e) => e.key),
    ['prod'],
    'no environment was created',
  );
});

/**
 * The server side's unsent-or-unacknowledged bytes per established connection of `port` (the
 * Send-Q column of `ss`), or undefined where ss is missing.
 */
function serverSendQueues(port: number): number[] | undefined {
  try {
    const out = execFileSync('ss', ['-tnH', 'state', 'established', `( sport = :${port} )`], { encoding: 'utf8' });
    return out
      .split('\n')
      .map((l) => /^\s*\d+\s+(\d+)/.exec(l)?.[1])
      .filter((q): q is string => q !== undefined)
      .map(Number);
  } catch {
    return undefined;
  }
}

/** TCP memory of the whole machine, in pages (/proc/net/sockstat "TCP: ... mem N"). */
function kernelTcpPages(): number {
  const m = /TCP:.*\bmem (\d+)/.exec(readFileSync('/proc/net/sockstat', 'utf8'));
  return m ? Number(m[1]) : 0;
}

t.test(
  'SDK stream clients that do not read are cut off during their put and counted; a reading client gets all of it',
  async (t) => {
    const h = await startHarness(t, { FLAGS_SSE_DRAIN_TIMEOUT_MS: '2000', FLAGS_SSE_HEARTBEAT_MS: '0' });
    const tok = await h.login();
    // About 8 MiB: 34 flags of about 250 KB (four string variations just under the 64 KiB value limit).
    const flagCount = 34;
    for (let i = 0; i < flagCount; i++) {
      const r = await h.call('POST', `${E}/flags`, {
        token: tok,
        body: {
          key: `big-${i}`,
          type: 'string',
          enabled: true,
          defaultVariation: 'a',
          variations: ['a', 'b', 'c', 'd'].map((k) => ({ key: k, value: `${k}${i}`.repeat(20_000).slice(0, 62_000) })),
        },
      });
      if (r.status !== 201) throw new Error(`flag ${i}: ${r.status} ${err(r)}`);
    }
    const key = await sdkKey(h, tok);
    const metric = async (name: string): Promise<number> =>
      Number(new RegExp(`^${name} (\\d+)`, 'm').exec(String((await h.call('GET', '/metrics')).body))?.[1] ?? NaN);

    // The reader first: its own copy of the put (and the test's parse of it) is not the server's cost.
    const reader = await openStream(h.base, key);
    t.teardown(() => reader.close());
    const put = await reader.next((e) => e.event === 'put', 30_000);
    const flags = (JSON.parse(put.data) as { data: { flags: Record<string, unknown> } }).data.flags;
    t.equal(Object.keys(flags).length, flagCount, `the reading client got the whole put (${put.data.length} bytes)`);

    const clients = 40;
    const rssBefore = process.memoryUsage().rss;
    const tcpBefore = kernelTcpPages();
    let rssPeak = 0;
    let tcpPeak = 0;
    const sample = setInterval(() => {
      rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
      tcpPeak = Math.max(tcpPeak, kernelTcpPages());
    }, 20);
    t.teardown(() => clearInterval(sample));
    const sockets: Socket[] = [];
    t.teardown(() => sockets.forEach((s) => s.destroy()));
    let closedByServer = 0;
    for (let i = 0; i < clients; i++) {
      const s = connect(h.server.port, '127.0.0.1');
      s.pause(); // never read a byte
      s.on('close', () => closedByServer++);
      s.on('error', () => undefined);
      await new Promise<void>((resolve) => s.once('connect', () => resolve()));
      s.write(`GET /sdk/v1/stream HTTP/1.1\r\nHost: x\r\nAuthorization: ${key}\r\n\r\n`);
      sockets.push(s);
    }
    // Memory is sampled while the stalled clients connect and take their put, not while readers parse.
    await new Promise((r) => setTimeout(r, 300));
    clearInterval(sample);
    // The kernel's share is bounded only by net.ipv4.tcp_notsent_lowat (see src/flags/README.md):
    // checked when the machine (or the test's network namespace) sets it to the limit.
    const queues = serverSendQueues(h.server.port);
    const lowat = Number(readFileSync('/proc/sys/net/ipv4/tcp_notsent_lowat', 'utf8').trim());
    const stalledQueueMiB = queues ? Math.max(0, ...queues) / 2 ** 20 : NaN;
    t.comment(
      `largest server-side Send-Q of a stalled client: ${stalledQueueMiB.toFixed(2)} MiB (tcp_notsent_lowat ${lowat})`,
    );
    if (queues && lowat <= 512 * 1024)
      t.ok(stalledQueueMiB <= 1, 'with tcp_notsent_lowat at the limit, the kernel holds about the limit per client');
    // A second reader, connected while the others stall, also gets all of it.
    const late = await openStream(h.base, key);
    t.teardown(() => late.close());
    const latePut = await late.next((e) => e.event === 'put', 30_000);
    t.equal(latePut.data.length, put.data.length, 'a client reading alongside the stalled ones gets the whole put too');
    await waitFor(
      async () => (await metric('flags_sse_slow_clients_disconnected_total')) >= clients,
      'every non-reading client to be cut off',
    );
    t.equal(
      await metric('flags_sse_slow_clients_disconnected_total'),
      clients,
      'each non-reading client is counted once as slow',
    );
    t.equal(await metric('flags_sse_clients'), 2, 'only the readers are still connected');
    sockets.forEach((s) => s.resume());
    await waitFor(() => closedByServer === clients, 'the server to have closed every stalled connection');
    t.pass('the server closed every stalled connection');
    const rssGrowthMiB = (rssPeak - rssBefore) / 2 ** 20;
    const tcpPeakMiB = ((tcpPeak - tcpBefore) * 4096) / 2 ** 20;
    t.comment(
      `${clients} non-reading clients of a ${(put.data.length / 2 ** 20).toFixed(1)} MiB ` +
        `put: peak RSS growth ${rssGrowthMiB.toFixed(1)} MiB (server and clients in this ` +
        `process), peak kernel TCP memory growth ${tcpPeakMiB.toFixed(1)} MiB (machine-wide, both ends)`,
    );
    // Each client once made uWS buffer what the kernel did not take (about 5 MiB here, 200 MiB for
    // 40); now it costs its position in one shared Buffer and at most one 64 KiB slice in uWS.
    t.ok(
      rssGrowthMiB < clients * 1.5,
      `process memory stays bounded (${rssGrowthMiB.toFixed(1)} MiB < ${clients * 1.5} MiB)`,
    );
  },
);
