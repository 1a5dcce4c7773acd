// The console's stream (GET /api/v1/projects/{p}/environments/{e}/stream) against the real service:
// a signed-in user of any role gets the same put/patch events as an SDK key, a request without a
// valid token is a 401, an SDK key is not a user token, an unknown environment is a 404, and the
// stream ends when its token expires.
import t from 'tap';
import { SseParser, type SseEvent } from '../../src/flags/sdk/sse.js';
import { boolFlag, startHarness, type Harness } from './fixtures/helpers.js';
import { verifiedTokenExpiryMs } from '../../src/flags/api/sdk-routes.js';
import { accessTokenTtlSec } from '../../src/flags/limits.js';

const P = '/api/v1/projects/web';
const E = `${P}/environments/prod`;

async function userOf(h: Harness, admin: string, role: string): Promise<string> {
  const email = `${role}@example.com`;
  const r = await h.call('POST', '/api/v1/users', { token: admin, body: { email, password: 'pass-word-123', role } });
  if (r.status !== 201) throw new Error(`creating ${role}: ${r.status}`);
  return h.login(email, 'pass-word-123');
}

/** Opens the user stream and collects its events until `close()`. */
async function openUserStream(h: Harness, path: string, authorization: string | undefined) {
  const ac = new AbortController();
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (authorization !== undefined) headers['authorization'] = authorization;
  const res = await fetch(`${h.base}${path}`, { headers, signal: ac.signal });
  const events: SseEvent[] = [];
  const parser = new SseParser();
  let ended: Promise<void> = Promise.resolve();
  if (res.status === 200 && res.body) {
    ended = (async () => {
      const dec = new TextDecoder();
      try {
        for await (const chunk of res.body as AsyncIterable<Uint8Array>)
          events.push(...parser.push(dec.decode(chunk, { stream: true })));
      } catch {
        // aborted
      }
    })();
  }
  const text = res.status === 200 ? '' : await res.text();
  return {
    status: res.status,
    text,
    events,
    ended,
    async waitFor(pred: (e: SseEvent) => boolean, ms = 5000): Promise<SseEvent> {
      const until = Date.now() + ms;
      for (;;) {
        const hit = events.find(pred);
        if (hit) return hit;
        if (Date.now() > until)
          throw new Error(`no matching event within ${ms} ms (have ${events.map((e) => e.event).join(',')})`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: () => ac.abort(),
  };
}

t.test('a signed-in user of any role follows an environment with a bearer access token', async (t) => {
  const h = await startHarness(t);
  const admin = await h.login();
  t.equal((await h.call('POST', `${E}/flags`, { token: admin, body: boolFlag('a') })).status, 201);
  const viewer = await userOf(h, admin, 'viewer');
  for (const [who, token] of [
    ['viewer', viewer],
    ['admin', admin],
  ] as const) {
    const s = await openUserStream(h, `${E}/stream`, `Bearer ${token}`);
    t.teardown(s.close);
    t.equal(s.status, 200, `${who}: 200`);
    const put = await s.waitFor((e) => e.event === 'put');
    t.same(
      Object.keys((JSON.parse(put.data) as { data: { flags: object } }).data.flags),
      ['a'],
      `${who}: the put holds the flags`,
    );
  }
  const s = await openUserStream(h, `${E}/stream`, `Bearer ${viewer}`);
  t.teardown(s.close);
  await s.waitFor((e) => e.event === 'put');
  t.equal((await h.call('PUT', `${E}/flags/a`, { token: admin, body: boolFlag('a', { enabled: false }) })).status, 200);
  const patch = await s.waitFor((e) => e.event === 'patch');
  const body = JSON.parse(patch.data) as { path: string; data: { enabled: boolean; version: number } };
  t.equal(body.path, '/flags/a');
  t.equal(body.data.enabled, false, 'the change arrives as a patch');
  t.equal(body.data.version, 2);
});

t.test('the user stream refuses missing, invalid and SDK-key credentials, and unknown environments', async (t) => {
  const h = await startHarness(t);
  const admin = await h.login();
  await h.call('POST', `${E}/flags`, { token: admin, body: boolFlag('a') });
  const envs = (await h.call('GET', `${P}/environments`, { token: admin })).body as Array<{
    key: string;
    sdkKey: string;
  }>;
  const sdkKey = envs.find((e) => e.key === 'prod')?.sdkKey ?? '';
  const cases: Array<{ name: string; path: string; auth: string | undefined; status: number; error: RegExp }> = [
    { name: 'no Authorization header', path: `${E}/stream`, auth: undefined, status: 401, error: /missing token/ },
    {
      name: 'a token that is not a JWT',
      path: `${E}/stream`,
      auth: 'Bearer nope',
      status: 401,
      error: /invalid token/,
    },
    {
      name: 'an SDK key (that is the /sdk/v1/stream credential)',
      path: `${E}/stream`,
      auth: `Bearer ${sdkKey}`,
      status: 401,
      error: /invalid token/,
    },
    {
      name: 'an unknown environment',
      path: `${P}/environments/nowhere/stream`,
      auth: `Bearer ${admin}`,
      status: 404,
      error: /not found/,
    },
    {
      name: 'an unknown project',
      path: `/api/v1/projects/nope/environments/prod/stream`,
      auth: `Bearer ${admin}`,
      status: 404,
      error: /not found/,
    },
  ];
  for (const c of cases) {
    const s = await openUserStream(h, c.path, c.auth);
    s.close();
    t.equal(s.status, c.status, `${c.name}: ${c.status}`);
    t.match((JSON.parse(s.text) as { error: string }).error, c.error, `${c.name}: the error says why`);
  }
});

t.test('the user stream ends when the token it was opened with expires', async (t) => {
  let clockMs = Date.now();
  const h = await startHarness(t, {}, { now: () => clockMs });
  const admin = await h.login();
  await h.call('POST', `${E}/flags`, { token: admin, body: boolFlag('a') });
  // The token lives accessTokenTtlSec from login; move the clock to one second before it expires.
  clockMs += accessTokenTtlSec * 1000 - 1000;
  const s = await openUserStream(h, `${E}/stream`, `Bearer ${admin}`);
  t.teardown(s.close);
  t.equal(s.status, 200, 'the token is still good: the stream opens');
  await s.waitFor((e) => e.event === 'put');
  const opened = Date.now();
  await s.ended;
  t.ok(Date.now() - opened < 5_000, 'the server ended the stream at the expiry (about a second later)');
  clockMs += 2000;
  const late = await openUserStream(h, `${E}/stream`, `Bearer ${admin}`);
  late.close();
  t.equal(late.status, 401, 'the expired token cannot reopen it');
});

t.test('verifiedTokenExpiryMs reads exp from a bearer JWT and nothing else', async (t) => {
  const jwt = (payload: unknown): string =>
    `Bearer h.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.sig`;
  const cases: Array<[string, string | undefined, number | undefined]> = [
    ['a JWT with exp', jwt({ exp: 1700000000 }), 1700000000_000],
    ['a JWT without exp', jwt({ sub: 'x' }), undefined],
    ['a non-numeric exp', jwt({ exp: 'soon' }), undefined],
    ['a payload that is not JSON', 'Bearer h.bm90IGpzb24.sig', undefined],
    ['no header', undefined, undefined],
    ['not a bearer token', 'Basic abc', undefined],
  ];
  for (const [name, header, want] of cases) t.equal(verifiedTokenExpiryMs(header), want, name);
});
