/**
 * Black-box tests of the flag service's HTTP API: the real server on port 0 over a temp SQLite file,
 * spoken to with fetch. Auth (tokens, refresh, roles, rate limit), every management endpoint,
 * validation, 404/409/412, audit order and limits, evaluation, health/metrics, and persistence
 * across a restart.
 */
import t from 'tap';
import { SignJWT } from 'jose';
import { adminEmail, adminPassword, boolFlag, jwtSecret, startHarness, type Harness } from './fixtures/helpers.js';

const E = '/api/v1/projects/web/environments/prod';
const P = '/api/v1/projects/web';

function err(r: { body: unknown }): string {
  return (r.body as { error?: string } | undefined)?.error ?? '';
}

async function makeUser(h: Harness, admin: string, email: string, role: string): Promise<string> {
  const r = await h.call('POST', '/api/v1/users', { token: admin, body: { email, password: 'pass-word-123', role } });
  if (r.status !== 201) throw new Error(`user ${email}: ${r.status} ${err(r)}`);
  return h.login(email, 'pass-word-123');
}

async function signed(secret: string, claims: Record<string, unknown>, iat: number, exp: number): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('someone')
    .setIssuer('simlab-flags')
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(new TextEncoder().encode(secret));
}

t.test('health, readiness and metrics answer without a token', async (t) => {
  const h = await startHarness(t);
  const health = await h.call('GET', '/healthz');
  t.equal(health.status, 200);
  t.same(health.body, { status: 'ok' });
  t.equal((await h.call('GET', '/readyz')).status, 200);
  const tok = await h.login();
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('a') });
  await h.call('POST', `${E}/evaluate`, { token: tok, body: { context: { key: 'u1' } } });
  const m = await h.call('GET', '/metrics');
  t.equal(m.status, 200);
  const text = String(m.body);
  t.match(text, /flags_evaluations_total\{reason="FALLTHROUGH"\} 1/);
  t.match(text, /flags_sse_clients 0/);
  t.match(text, /flags_http_requests_total/);
  t.match(text, /flags_logins_total\{outcome="ok"\} 1/);
  const unknown = await h.call('GET', '/nope');
  t.equal(unknown.status, 404);
  t.ok(err(unknown).length > 0, 'a 404 has an {error} body');
});

t.test('login returns both spellings of the token pair; wrong credentials are refused alike', async (t) => {
  const h = await startHarness(t);
  const ok = await h.call('POST', '/auth/login', { body: { email: adminEmail, password: adminPassword } });
  t.equal(ok.status, 200);
  const b = ok.body as Record<string, unknown>;
  t.equal(b['tokenType'], 'Bearer');
  t.equal(b['token_type'], 'Bearer');
  t.equal(b['expiresIn'], 3600);
  t.equal(b['expires_in'], 3600);
  t.equal(b['accessToken'], b['access_token']);
  t.equal(b['refreshToken'], b['refresh_token']);
  t.match(b['accessToken'], /^[\w-]+\.[\w-]+\.[\w-]+$/, 'a JWT');
  const cases = [
    {
      name: 'wrong password',
      body: { email: adminEmail, password: 'nope' },
      status: 401,
      error: 'invalid credentials',
    },
    {
      name: 'unknown email',
      body: { email: 'who@example.com', password: adminPassword },
      status: 401,
      error: 'invalid credentials',
    },
    {
      name: 'email in another case works',
      body: { email: 'ADMIN@example.com', password: adminPassword },
      status: 200,
      error: '',
    },
    { name: 'missing password', body: { email: adminEmail }, status: 400, error: 'password' },
    { name: 'password of the wrong type', body: { email: adminEmail, password: 5 }, status: 400, error: 'password' },
  ];
  for (const c of cases) {
    const r = await h.call('POST', '/auth/login', { body: c.body });
    t.equal(r.status, c.status, c.name);
    if (c.status !== 200) t.match(err(r), c.error, c.name);
  }
  const malformed = await h.call('POST', '/auth/login', { raw: '{"email": ' });
  t.equal(malformed.status, 400, 'malformed JSON is a 400');
});

t.test('refresh rotates the pair and each refresh token works once', async (t) => {
  const h = await startHarness(t);
  const login = (await h.call('POST', '/auth/login', { body: { email: adminEmail, password: adminPassword } }))
    .body as Record<string, string>;
  const r1 = await h.call('POST', '/auth/refresh', { body: { refreshToken: login['refreshToken'] } });
  t.equal(r1.status, 200);
  const pair = r1.body as Record<string, string>;
  t.not(pair['refreshToken'], login['refreshToken'], 'a new refresh token');
  t.equal(
    (await h.call('GET', '/api/v1/projects', { token: pair['accessToken'] as string })).status,
    200,
    'the new access token works',
  );
  const again = await h.call('POST', '/auth/refresh', { body: { refreshToken: login['refreshToken'] } });
  t.equal(again.status, 401, 'the old refresh token is spent');
  t.equal(err(again), 'invalid token');
  const snake = await h.call('POST', '/auth/refresh', { body: { refresh_token: pair['refreshToken'] } });
  t.equal(snake.status, 200, 'refresh_token is accepted too');
  t.equal((await h.call('POST', '/auth/refresh', { body: { refreshToken: 'made-up' } })).status, 401);
  t.equal((await h.call('POST', '/auth/refresh', { body: {} })).status, 400);
});

t.test('every /api/v1 route refuses a missing, malformed, forged or expired token', async (t) => {
  const h = await startHarness(t);
  const now = Math.floor(Date.now() / 1000);
  const expired = await signed(jwtSecret, { email: adminEmail, role: 'admin' }, now - 7200, now - 3600);
  const forged = await signed(
    'another-secret-another-secret-another-secret',
    { email: adminEmail, role: 'admin' },
    now,
    now + 3600,
  );
  const noRole = await signed(jwtSecret, { email: adminEmail }, now, now + 3600);
  const routes: Array<[string, string]> = [
    ['GET', '/api/v1/projects'],
    ['GET', `${P}/environments`],
    ['PUT', `${E}`],
    ['GET', `${E}/flags`],
    ['POST', `${E}/flags`],
    ['GET', `${E}/flags/a`],
    ['PUT', `${E}/flags/a`],
    ['DELETE', `${E}/flags/a`],
    ['GET', `${P}/segments`],
    ['POST', `${P}/segments`],
    ['GET', `${P}/segments/s`],
    ['PUT', `${P}/segments/s`],
    ['DELETE', `${P}/segments/s`],
    ['GET', `${P}/audit`],
    ['POST', `${E}/evaluate`],
    ['GET', '/api/v1/users'],
    ['POST', '/api/v1/users'],
    ['GET', '/api/v1/me'],
  ];
  for (const [method, path] of routes) {
    const body = method === 'POST' || method === 'PUT' ? {} : undefined;
    const none = await h.call(method, path, { body });
    t.equal(none.status, 401, `${method} ${path} without a token`);
    t.equal(err(none), 'missing token');
    const cases: Array<[string, Record<string, string>]> = [
      ['garbage', { authorization: 'Bearer not.a.jwt' }],
      ['expired', { authorization: `Bearer ${expired}` }],
      ['forged', { authorization: `Bearer ${forged}` }],
      ['without a role', { authorization: `Bearer ${noRole}` }],
      ['not a bearer', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
    ];
    for (const [name, headers] of cases) {
      const r = await h.call(method, path, { body, headers });
      t.equal(r.status, 401, `${method} ${path} with a ${name} token`);
      t.equal(err(r), 'invalid token', `${method} ${path} ${name}`);
    }
  }
  const sdk = await h.call('GET', '/sdk/v1/latest-all', { headers: { authorization: `Bearer ${await h.login()}` } });
  t.equal(sdk.status, 401, 'a user token is not an SDK key');
});

t.test('login is rate limited per client address with Retry-After, and the window slides', async (t) => {
  let now = Date.parse('2024-05-01T00:00:00Z');
  const h = await startHarness(t, { FLAGS_LOGIN_ATTEMPTS_PER_MINUTE: '3' }, { now: () => now });
  for (let i = 0; i < 3; i++)
    t.equal((await h.call('POST', '/auth/login', { body: { email: adminEmail, password: 'wrong' } })).status, 401);
  const limited = await h.call('POST', '/auth/login', { body: { email: adminEmail, password: adminPassword } });
  t.equal(limited.status, 429, 'even the right password waits');
  t.equal(limited.headers.get('retry-after'), '60');
  t.match(err(limited), /too many login attempts/);
  now += 30_000;
  t.equal(
    (await h.call('POST', '/auth/login', { body: { email: adminEmail, password: adminPassword } })).headers.get(
      'retry-after',
    ),
    '30',
  );
  now += 31_000;
  t.equal(
    (await h.call('POST', '/auth/login', { body: { email: adminEmail, password: adminPassword } })).status,
    200,
    'allowed once the window passed',
  );
  const m = String((await h.call('GET', '/metrics')).body);
  t.match(m, /flags_logins_total\{outcome="rate_limited"\} 2/);
});

t.test('roles: viewer reads, editor writes, admin deletes and manages users', async (t) => {
  const h = await startHarness(t);
  const admin = await h.login();
  const viewer = await makeUser(h, admin, 'vic@example.com', 'viewer');
  const editor = await makeUser(h, admin, 'eda@example.com', 'editor');
  const cases: Array<{ who: string; token: string; method: string; path: string; body?: unknown; status: number }> = [
    { who: 'viewer', token: viewer, method: 'POST', path: `${E}/flags`, body: boolFlag('v'), status: 403 },
    { who: 'editor', token: editor, method: 'POST', path: `${E}/flags`, body: boolFlag('a'), status: 201 },
    { who: 'viewer', token: viewer, method: 'GET', path: `${E}/flags/a`, status: 200 },
    { who: 'viewer', token: viewer, method: 'PUT', path: `${E}/flags/a`, body: boolFlag('a'), status: 403 },
    { who: 'editor', token: editor, method: 'PUT', path: `${E}/flags/a`, body: boolFlag('a'), status: 200 },
    {
      who: 'viewer',
      token: viewer,
      method: 'POST',
      path: `${E}/evaluate`,
      body: { context: { key: 'k' } },
      status: 200,
    },
    { who: 'editor', token: editor, method: 'DELETE', path: `${E}/flags/a`, status: 403 },
    { who: 'viewer', token: viewer, method: 'DELETE', path: `${E}/flags/a`, status: 403 },
    { who: 'admin', token: admin, method: 'DELETE', path: `${E}/flags/a`, status: 204 },
    { who: 'editor', token: editor, method: 'POST', path: `${P}/segments`, body: { key: 's' }, status: 201 },
    { who: 'editor', token: editor, method: 'DELETE', path: `${P}/segments/s`, status: 403 },
    {
      who: 'editor',
      token: editor,
      method: 'POST',
      path: '/api/v1/users',
      body: { email: 'x@example.com', password: 'long-enough', role: 'admin' },
      status: 403,
    },
    { who: 'editor', token: editor, method: 'GET', path: '/api/v1/users', status: 403 },
    { who: 'viewer', token: viewer, method: 'GET', path: '/api/v1/me', status: 200 },
    { who: 'admin', token: admin, method: 'GET', path: '/api/v1/users', status: 200 },
    {
      who: 'admin',
      token: admin,
      method: 'POST',
      path: '/api/v1/users',
      body: { email: 'vic@example.com', password: 'long-enough', role: 'viewer' },
      status: 409,
    },
    {
      who: 'admin',
      token: admin,
      method: 'POST',
      path: '/api/v1/users',
      body: { email: 'z@example.com', password: 'long-enough', role: 'root' },
      status: 400,
    },
    {
      who: 'admin',
      token: admin,
      method: 'POST',
      path: '/api/v1/users',
      body: { email: 'z@example.com', password: 'short', role: 'viewer' },
      status: 400,
    },
    {
      who: 'admin',
      token: admin,
      method: 'POST',
      path: '/api/v1/users',
      body: { email: 'not-an-email', password: 'long-enough', role: 'viewer' },
      status: 400,
    },
  ];
  for (const c of cases) {
    const r = await h.call(c.method, c.path, { token: c.token, body: c.body });
    t.equal(r.status, c.status, `${c.who} ${c.method} ${c.path} → ${c.status}`);
    if (c.status === 403) t.match(err(r), /needs the (editor|admin) role/);
  }
  const me = (await h.call('GET', '/api/v1/me', { token: viewer })).body as Record<string, string>;
  t.same([me['email'], me['role']], ['vic@example.com', 'viewer']);
  const users = (await h.call('GET', '/api/v1/users', { token: admin })).body as Array<Record<string, unknown>>;
  t.same(users.map((u) => u['email']).sort(), ['admin@example.com', 'eda@example.com', 'vic@example.com']);
  t.ok(
    users.every((u) => !('passwordHash' in u) && !('password' in u)),
    'no password material is shown',
  );
});

t.test('flag lifecycle: create, read, list, full-replacement PUT with If-Match, delete', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  const created = await h.call('POST', `${E}/flags`, {
    token: tok,
    body: boolFlag('checkout', {
      rules: [{ id: 'r1', clauses: [{ attribute: 'country', op: 'in', values: ['NL'] }], variation: 'on' }],
    }),
  });
  t.equal(created.status, 201);
  const f1 = created.body as Record<string, unknown>;
  t.equal(f1['version'], 1);
  t.equal(f1['createdAt'], f1['updatedAt']);
  t.match(f1['createdAt'], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.equal(created.headers.get('etag'), '"1"');
  const got = await h.call('GET', `${E}/flags/checkout`, { token: tok });
  t.equal(got.status, 200);
  t.same(got.body, f1);
  t.same(((await h.call('GET', `${E}/flags`, { token: tok })).body as unknown[]).length, 1);
  t.same(
    (await h.call('GET', '/api/v1/projects/web/environments/staging/flags', { token: tok })).body,
    [],
    'another environment is empty',
  );

  await new Promise((r) => setTimeout(r, 5));
  // PUT without key, without rules: the rules are reset (full replacement), not kept.
  const { key: _k, rules: _r, ...rest } = boolFlag('checkout', { enabled: false });
  const put = await h.call('PUT', `${E}/flags/checkout`, { token: tok, body: rest, headers: { 'if-match': '1' } });
  t.equal(put.status, 200);
  const f2 = put.body as Record<string, unknown>;
  t.equal(f2['version'], 2);
  t.equal(f2['enabled'], false);
  t.same(f2['rules'], [], 'omitted fields reset to their defaults');
  t.equal(f2['createdAt'], f1['createdAt']);
  t.not(f2['updatedAt'], f1['updatedAt']);

  const stale = await h.call('PUT', `${E}/flags/checkout`, { token: tok, body: rest, headers: { 'if-match': '"1"' } });
  t.equal(stale.status, 412, 'a stale If-Match is refused');
  t.match(err(stale), /version 2/);
  const badIfMatch = await h.call('PUT', `${E}/flags/checkout`, {
    token: tok,
    body: rest,
    headers: { 'if-match': 'yesterday' },
  });
  t.equal(badIfMatch.status, 400);
  t.match(err(badIfMatch), /^If-Match/);
  const roundTrip = await h.call('PUT', `${E}/flags/checkout`, { token: tok, body: f2 });
  t.equal(roundTrip.status, 200, 'a GET body (with version and timestamps) can be PUT back');
  t.equal((roundTrip.body as Record<string, unknown>)['version'], 3);

  const statusCases: Array<{ name: string; method: string; path: string; body?: unknown; status: number }> = [
    { name: 'duplicate create', method: 'POST', path: `${E}/flags`, body: boolFlag('checkout'), status: 409 },
    { name: 'GET unknown flag', method: 'GET', path: `${E}/flags/ghost`, status: 404 },
    { name: 'PUT unknown flag', method: 'PUT', path: `${E}/flags/ghost`, body: boolFlag('ghost'), status: 404 },
    { name: 'DELETE unknown flag', method: 'DELETE', path: `${E}/flags/ghost`, status: 404 },
    {
      name: 'GET in an unknown project',
      method: 'GET',
      path: '/api/v1/projects/nope/environments/prod/flags/checkout',
      status: 404,
    },
    { name: 'DELETE the flag', method: 'DELETE', path: `${E}/flags/checkout`, status: 204 },
    { name: 'GET after delete', method: 'GET', path: `${E}/flags/checkout`, status: 404 },
    { name: 'DELETE after delete', method: 'DELETE', path: `${E}/flags/checkout`, status: 404 },
    { name: 're-create after delete', method: 'POST', path: `${E}/flags`, body: boolFlag('checkout'), status: 201 },
  ];
  for (const c of statusCases) {
    const r = await h.call(c.method, c.path, { token: tok, body: c.body });
    t.equal(r.status, c.status, c.name);
    if (c.status >= 400) t.ok(err(r).length > 0, `${c.name} has an error message`);
  }
  const re = (await h.call('GET', `${E}/flags/checkout`, { token: tok })).body as Record<string, unknown>;
  t.ok((re['version'] as number) > 3, 'versions keep increasing across delete and re-create');
});

t.test('every validation rule is a 400 that names the field', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('base') });
  const flagCases: Array<{ name: string; body: unknown; field: RegExp }> = [
    {
      name: 'missing key',
      body: { type: 'boolean', variations: [{ key: 'on', value: true }], defaultVariation: 'on' },
      field: /^key/,
    },
    {
      name: 'missing type',
      body: { key: 'x', variations: [{ key: 'on', value: true }], defaultVariation: 'on' },
      field: /^type/,
    },
    { name: 'missing variations', body: { key: 'x', type: 'boolean', defaultVariation: 'on' }, field: /^variations/ },
    {
      name: 'missing defaultVariation',
      body: { key: 'x', type: 'boolean', variations: [{ key: 'on', value: true }] },
      field: /^defaultVariation/,
    },
    { name: 'unknown type', body: boolFlag('x', { type: 'float' }), field: /^type/ },
    { name: 'key not URL-safe', body: boolFlag('has space'), field: /^key/ },
    {
      name: 'variation value of the wrong type',
      body: boolFlag('x', {
        variations: [
          { key: 'on', value: 'yes' },
          { key: 'off', value: false },
        ],
      }),
      field: /^variations\[0\]\.value/,
    },
    {
      name: 'integer flag with a fraction',
      body: { key: 'x', type: 'integer', variations: [{ key: 'a', value: 1.5 }], defaultVariation: 'a' },
      field: /^variations\[0\]\.value/,
    },
    {
      name: 'duplicate variation keys',
      body: boolFlag('x', {
        variations: [
          { key: 'on', value: true },
          { key: 'on', value: false },
        ],
        defaultVariation: 'on',
      }),
      field: /^variations\[1\]\.key/,
    },
    {
      name: 'unknown defaultVariation',
      body: boolFlag('x', { defaultVariation: 'maybe' }),
      field: /^defaultVariation/,
    },
    {
      name: 'target naming a missing variation',
      body: boolFlag('x', { targets: [{ contextKeys: ['u1'], variation: 'maybe' }] }),
      field: /^targets\[0\]\.variation/,
    },
    {
      name: 'rollout not summing to 100000',
      body: boolFlag('x', {
        rollout: [
          { variation: 'on', weight: 50000 },
          { variation: 'off', weight: 49999 },
        ],
      }),
      field: /^rollout/,
    },
    {
      name: 'negative rollout weight',
      body: boolFlag('x', {
        rollout: [
          { variation: 'on', weight: 100001 },
          { variation: 'off', weight: -1 },
        ],
      }),
      field: /^rollout/,
    },
    {
      name: 'fractional rollout weight',
      body: boolFlag('x', {
        rollout: [
          { variation: 'on', weight: 50000.5 },
          { variation: 'off', weight: 49999.5 },
        ],
      }),
      field: /^rollout/,
    },
    {
      name: 'duplicate rule ids',
      body: boolFlag('x', {
        rules: [
          { id: 'r', clauses: [], variation: 'on' },
          { id: 'r', clauses: [], variation: 'off' },
        ],
      }),
      field: /^rules\[1\]\.id/,
    },
    {
      name: 'unknown operator',
      body: boolFlag('x', {
        rules: [{ id: 'r', clauses: [{ attribute: 'a', op: 'approximately', values: ['1'] }], variation: 'on' }],
      }),
      field: /^rules\[0\]\.clauses\[0\]\.op/,
    },
    {
      name: 'clause values not strings',
      body: boolFlag('x', {
        rules: [{ id: 'r', clauses: [{ attribute: 'a', op: 'gt', values: [5] }], variation: 'on' }],
      }),
      field: /^rules\[0\]\.clauses\[0\]\.values\[0\]/,
    },
    {
      name: 'own prerequisite',
      body: boolFlag('x', { prerequisites: [{ flagKey: 'x', variation: 'on' }] }),
      field: /^prerequisites\[0\]\.flagKey/,
    },
    {
      name: 'prerequisite variation missing on the other flag',
      body: boolFlag('x', { prerequisites: [{ flagKey: 'base', variation: 'maybe' }] }),
      field: /^prerequisites\[0\]\.variation/,
    },
    { name: 'unknown field', body: boolFlag('x', { colour: 'red' }), field: /^colour/ },
  ];
  for (const c of flagCases) {
    const r = await h.call('POST', `${E}/flags`, { token: tok, body: c.body });
    t.equal(r.status, 400, c.name);
    t.match(err(r), c.field, `${c.name}: ${err(r)}`);
  }
  // A prerequisite cycle is refused at write time: b needs a, then a may not need b.
  t.equal((await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('a') })).status, 201);
  t.equal(
    (
      await h.call('POST', `${E}/flags`, {
        token: tok,
        body: boolFlag('b', { prerequisites: [{ flagKey: 'a', variation: 'on' }] }),
      })
    ).status,
    201,
  );
  const cycle = await h.call('PUT', `${E}/flags/a`, {
    token: tok,
    body: boolFlag('a', { prerequisites: [{ flagKey: 'b', variation: 'on' }] }),
  });
  t.equal(cycle.status, 400);
  t.match(err(cycle), /^prerequisites: prerequisite cycle a -> b -> a/);
  const renamed = await h.call('PUT', `${E}/flags/a`, { token: tok, body: boolFlag('zzz') });
  t.equal(renamed.status, 400, 'PUT cannot rename');
  t.match(err(renamed), /^key/);

  const segCases: Array<{ name: string; body: unknown; field: RegExp }> = [
    { name: 'segment without key', body: { name: 'n' }, field: /^key/ },
    { name: 'segment with included not a list', body: { key: 's', included: 'u1' }, field: /^included/ },
    {
      name: 'segment with an unknown operator',
      body: { key: 's', rules: [{ clauses: [{ attribute: 'a', op: 'like', values: [] }] }] },
      field: /^rules\[0\]\.clauses\[0\]\.op/,
    },
    {
      name: 'segmentMatch inside a segment',
      body: { key: 's', rules: [{ clauses: [{ attribute: '', op: 'segmentMatch', values: ['t'] }] }] },
      field: /^rules\[0\]\.clauses\[0\]\.op/,
    },
    { name: 'segment key not URL-safe', body: { key: 'a/b' }, field: /^key/ },
  ];
  for (const c of segCases) {
    const r = await h.call('POST', `${P}/segments`, { token: tok, body: c.body });
    t.equal(r.status, 400, c.name);
    t.match(err(r), c.field, `${c.name}: ${err(r)}`);
  }
  const rawCases: Array<{ name: string; raw: string; status: number }> = [
    { name: 'malformed JSON', raw: '{"key": "x",', status: 400 },
    { name: 'a JSON array', raw: '[1,2]', status: 400 },
    {
      name: 'a body over 1 MiB',
      raw: JSON.stringify(boolFlag('big', { name: 'x'.repeat(1024 * 1024 + 10) })),
      status: 413,
    },
  ];
  for (const c of rawCases) {
    const r = await h.call('POST', `${E}/flags`, { token: tok, raw: c.raw });
    t.equal(r.status, c.status, c.name);
    t.ok(err(r).length > 0, `${c.name} answers {error}`);
  }
  const badProject = await h.call('POST', '/api/v1/projects/bad%20project/environments/prod/flags', {
    token: tok,
    body: boolFlag('x'),
  });
  t.equal(badProject.status, 400);
  t.match(err(badProject), /^projectKey/);
});

t.test(
  'segments: lifecycle, and deleting one that a flag references leaves the rule, which stops matching',
  async (t) => {
    const h = await startHarness(t);
    const tok = await h.login();
    const c = await h.call('POST', `${P}/segments`, {
      token: tok,
      body: {
        key: 'beta',
        name: 'Beta',
        included: ['u1'],
        excluded: [],
        rules: [{ clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }] }],
      },
    });
    t.equal(c.status, 201);
    const s1 = c.body as Record<string, unknown>;
    t.equal(s1['version'], 1);
    t.ok(s1['createdAt'] && s1['updatedAt']);
    t.equal((await h.call('POST', `${P}/segments`, { token: tok, body: { key: 'beta' } })).status, 409);
    t.same(
      ((await h.call('GET', `${P}/segments`, { token: tok })).body as Array<{ key: string }>).map((s) => s.key),
      ['beta'],
    );
    t.same((await h.call('GET', `${P}/segments/beta`, { token: tok })).body, s1);
    const flag = boolFlag('gated', {
      rules: [{ id: 'in-beta', clauses: [{ attribute: '', op: 'segmentMatch', values: ['beta'] }], variation: 'on' }],
    });
    t.equal((await h.call('POST', `${E}/flags`, { token: tok, body: flag })).status, 201);
    const evalFor = async (ctx: Record<string, unknown>) =>
      (
        (await h.call('POST', `${E}/evaluate`, { token: tok, body: { context: ctx, flagKeys: ['gated'] } })).body as {
          flags: Record<string, { value: unknown; reason: { kind: string; ruleId?: string } }>;
        }
      ).flags['gated'];
    t.same(await evalFor({ key: 'u1' }), {
      value: true,
      variation: 'on',
      reason: { kind: 'RULE_MATCH', ruleId: 'in-beta' },
    });
    t.equal((await evalFor({ key: 'u9', plan: 'pro' }))?.value, true, 'matched by the segment rule');

    const put = await h.call('PUT', `${P}/segments/beta`, {
      token: tok,
      body: { name: 'Beta', included: ['u2'] },
      headers: { 'if-match': '1' },
    });
    t.equal(put.status, 200);
    t.equal((put.body as Record<string, unknown>)['version'], 2);
    t.same((put.body as Record<string, unknown>)['rules'], [], 'full replacement');
    t.equal((await evalFor({ key: 'u1' }))?.value, false, 'u1 left the segment');
    t.equal(
      (await h.call('PUT', `${P}/segments/beta`, { token: tok, body: {}, headers: { 'if-match': '1' } })).status,
      412,
    );
    t.equal((await h.call('PUT', `${P}/segments/ghost`, { token: tok, body: {} })).status, 404);

    t.equal(
      (await h.call('DELETE', `${P}/segments/beta`, { token: tok })).status,
      204,
      'a referenced segment may be deleted',
    );
    t.equal((await h.call('GET', `${P}/segments/beta`, { token: tok })).status, 404);
    t.equal((await h.call('DELETE', `${P}/segments/beta`, { token: tok })).status, 404);
    const kept = (await h.call('GET', `${E}/flags/gated`, { token: tok })).body as Record<string, unknown>;
    t.same(kept['rules'], flag['rules'], "the flag's rule is left in place");
    const after = await evalFor({ key: 'u2' });
    t.equal(after?.reason.kind, 'FALLTHROUGH', 'a clause naming a deleted segment does not match');
    const m = String((await h.call('GET', '/metrics')).body);
    t.match(m, /flags_evaluation_warnings_total\{code="SEGMENT_NOT_FOUND"\} 1/, 'and a warning was counted');
  },
);

t.test('projects and environments appear on first write, each environment with an SDK key', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  t.same((await h.call('GET', '/api/v1/projects', { token: tok })).body, []);
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('a') });
  await h.call('POST', '/api/v1/projects/web/environments/staging/flags', { token: tok, body: boolFlag('a') });
  await h.call('POST', '/api/v1/projects/mobile/segments', { token: tok, body: { key: 's' } });
  const explicit = await h.call('PUT', '/api/v1/projects/mobile/environments/dev', { token: tok });
  t.equal(explicit.status, 200);
  const projects = (await h.call('GET', '/api/v1/projects', { token: tok })).body as Array<{
    key: string;
    createdAt: string;
  }>;
  t.same(
    projects.map((p) => p.key),
    ['mobile', 'web'],
  );
  const envs = (await h.call('GET', `${P}/environments`, { token: tok })).body as Array<{
    key: string;
    sdkKey: string;
    projectKey: string;
  }>;
  t.same(
    envs.map((e) => e.key),
    ['prod', 'staging'],
  );
  t.ok(envs.every((e) => e.projectKey === 'web' && /^sdk-/.test(e.sdkKey)));
  t.not(envs[0]?.sdkKey, envs[1]?.sdkKey);
  t.same(
    ((await h.call('GET', '/api/v1/projects/mobile/environments', { token: tok })).body as Array<{ key: string }>).map(
      (e) => e.key,
    ),
    ['dev'],
  );
});

t.test('audit: one record per write, newest first, default 100, capped at 500, limit validated', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('a') });
  await h.call('PUT', `${E}/flags/a`, { token: tok, body: boolFlag('a', { enabled: false }) });
  await h.call('POST', `${P}/segments`, { token: tok, body: { key: 's' } });
  await h.call('PUT', `${P}/segments/s`, { token: tok, body: { included: ['k'] } });
  await h.call('DELETE', `${P}/segments/s`, { token: tok });
  await h.call('DELETE', `${E}/flags/a`, { token: tok });
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('a') });
  t.equal(
    (await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('a') })).status,
    409,
    'a failed write leaves no record',
  );
  const r = await h.call('GET', `${P}/audit`, { token: tok });
  t.equal(r.status, 200);
  const recs = r.body as Array<Record<string, unknown>>;
  t.same(
    recs.map((a) => `${a['action']} ${a['resource']} ${a['resourceKey']} v${a['version']}`),
    [
      'create flag a v4',
      'delete flag a v3',
      'delete segment s v3',
      'update segment s v2',
      'create segment s v1',
      'update flag a v2',
      'create flag a v1',
    ],
  );
  const first = recs[0] as Record<string, unknown>;
  t.same(
    Object.keys(first).sort(),
    [
      'action',
      'actor',
      'after',
      'at',
      'before',
      'environmentKey',
      'id',
      'projectKey',
      'resource',
      'resourceKey',
      'version',
    ].sort(),
  );
  t.equal(first['actor'], adminEmail);
  t.equal(first['projectKey'], 'web');
  t.equal(first['environmentKey'], 'prod');
  t.notOk('environmentKey' in (recs[2] as object), 'segment records have no environment');
  t.equal((recs[5] as { before: { enabled: boolean } }).before.enabled, true);
  t.equal((recs[5] as { after: { enabled: boolean } }).after.enabled, false);
  t.same(((await h.call('GET', `${P}/audit?limit=2`, { token: tok })).body as unknown[]).length, 2);

  // Bulk history through the server's own store (HTTP for 600 writes would only slow the test).
  const store = h.server.store;
  const base = {
    key: 'bulk',
    name: 'bulk',
    type: 'boolean' as const,
    enabled: true,
    defaultVariation: 'off',
    variations: [{ key: 'off', value: false }],
    targets: [],
    prerequisites: [],
    rules: [],
    rollout: [],
  };
  await store.createFlag('web', 'prod', base, { actor: 'bulk', at: new Date().toISOString() });
  for (let i = 0; i < 600; i++)
    await store.replaceFlag('web', 'prod', base, { actor: 'bulk', at: new Date().toISOString() });
  const limits: Array<{ q: string; status: number; count?: number }> = [
    { q: '', status: 200, count: 100 },
    { q: '?limit=500', status: 200, count: 500 },
    { q: '?limit=501', status: 200, count: 500 },
    { q: '?limit=100000', status: 200, count: 500 },
    { q: '?limit=1', status: 200, count: 1 },
    { q: '?limit=0', status: 400 },
    { q: '?limit=-5', status: 400 },
    { q: '?limit=abc', status: 400 },
    { q: '?limit=1.5', status: 400 },
    { q: '?limit=', status: 400 },
  ];
  for (const c of limits) {
    const res = await h.call('GET', `${P}/audit${c.q}`, { token: tok });
    t.equal(res.status, c.status, `audit${c.q || ' (no limit)'} → ${c.status}`);
    if (c.count !== undefined) t.equal((res.body as unknown[]).length, c.count, `audit${c.q} returns ${c.count}`);
    else t.match(err(res), /^limit: must be a positive integer/);
  }
  const newest = ((await h.call('GET', `${P}/audit?limit=1`, { token: tok })).body as Array<{ version: number }>)[0];
  t.equal(newest?.version, 601, 'the newest record comes first');
});

t.test('evaluation over the management API and the SDK key', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  await h.call('POST', `${E}/flags`, {
    token: tok,
    body: {
      key: 'banner',
      type: 'string',
      enabled: true,
      variations: [
        { key: 'blue', value: 'blue' },
        { key: 'red', value: 'red' },
        { key: 'green', value: 'green' },
      ],
      defaultVariation: 'blue',
      targets: [{ contextKeys: ['vip'], variation: 'green' }],
      rules: [{ id: 'nl', clauses: [{ attribute: 'country', op: 'in', values: ['NL'] }], variation: 'red' }],
    },
  });
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('off-flag', { enabled: false }) });
  const cases: Array<{ name: string; context: Record<string, unknown>; expect: Record<string, unknown> }> = [
    {
      name: 'a target wins',
      context: { key: 'vip', country: 'NL' },
      expect: { value: 'green', variation: 'green', reason: { kind: 'TARGET_MATCH' } },
    },
    {
      name: 'a rule matches',
      context: { key: 'u1', country: 'NL' },
      expect: { value: 'red', variation: 'red', reason: { kind: 'RULE_MATCH', ruleId: 'nl' } },
    },
    {
      name: 'nothing matches',
      context: { key: 'u2', country: 'DE' },
      expect: { value: 'blue', variation: 'blue', reason: { kind: 'FALLTHROUGH' } },
    },
  ];
  for (const c of cases) {
    const r = await h.call('POST', `${E}/evaluate`, { token: tok, body: { context: c.context, flagKeys: ['banner'] } });
    t.equal(r.status, 200, c.name);
    t.same((r.body as { flags: Record<string, unknown> }).flags, { banner: c.expect }, c.name);
  }
  const all = (await h.call('POST', `${E}/evaluate`, { token: tok, body: { context: { key: 'u3' } } })).body as {
    flags: Record<string, { reason: { kind: string } }>;
  };
  t.same(Object.keys(all.flags).sort(), ['banner', 'off-flag'], 'without flagKeys every flag is evaluated');
  t.equal(all.flags['off-flag']?.reason.kind, 'OFF');
  const nowhere = await h.call('POST', '/api/v1/projects/web/environments/nowhere/evaluate', {
    token: tok,
    body: { context: { key: 'u3' } },
  });
  t.same(nowhere.body, { flags: {} }, 'an environment that does not exist has no flags');
  t.match(String((await h.call('GET', '/metrics')).body), /flags_environments_loaded 1/, 'and is not loaded');
  const missing = (
    await h.call('POST', `${E}/evaluate`, { token: tok, body: { context: { key: 'u3' }, flagKeys: ['nope'] } })
  ).body as { flags: Record<string, unknown> };
  t.same(missing.flags['nope'], {
    value: null,
    variation: null,
    reason: { kind: 'ERROR', errorKind: 'FLAG_NOT_FOUND' },
  });
  const bad: Array<{ name: string; body?: unknown; field: RegExp }> = [
    { name: 'no body', field: /^context/ },
    { name: 'context missing', body: { flagKeys: [] }, field: /^context/ },
    { name: 'context key not a string', body: { context: { key: 5 } }, field: /^context\.key/ },
    {
      name: 'an object attribute',
      body: { context: { key: 'k', address: { city: 'x' } } },
      field: /^context\.address/,
    },
    { name: 'flagKeys not a list', body: { context: { key: 'k' }, flagKeys: 'banner' }, field: /^flagKeys/ },
  ];
  for (const c of bad) {
    const r = await h.call('POST', `${E}/evaluate`, { token: tok, body: c.body });
    t.equal(r.status, 400, c.name);
    t.match(err(r), c.field, `${c.name}: ${err(r)}`);
  }
  const sdkKey =
    ((await h.call('GET', `${P}/environments`, { token: tok })).body as Array<{ sdkKey: string }>)[0]?.sdkKey ?? '';
  for (const authorization of [sdkKey, `Bearer ${sdkKey}`]) {
    const r = await h.call('POST', '/sdk/v1/evaluate', {
      headers: { authorization },
      body: { context: { key: 'u1', country: 'NL' }, flagKeys: ['banner'] },
    });
    t.equal(r.status, 200, `SDK evaluate with ${authorization === sdkKey ? 'the raw key' : 'Bearer <key>'}`);
    t.same((r.body as { flags: Record<string, { value: unknown }> }).flags['banner']?.value, 'red');
  }
  const latest = (await h.call('GET', '/sdk/v1/latest-all', { headers: { authorization: sdkKey } })).body as {
    flags: Record<string, unknown>;
  };
  t.same(Object.keys(latest.flags).sort(), ['banner', 'off-flag']);
  const noKey = await h.call('POST', '/sdk/v1/evaluate', { body: { context: { key: 'u' } } });
  t.equal(noKey.status, 401);
  t.equal(err(noKey), 'missing token');
  const wrong = await h.call('POST', '/sdk/v1/evaluate', {
    headers: { authorization: 'sdk-wrong' },
    body: { context: { key: 'u' } },
  });
  t.equal(wrong.status, 401);
  t.equal(err(wrong), 'invalid token');
});

t.test('everything survives a restart on the same database, including the generated JWT secret', async (t) => {
  const h = await startHarness(t, { FLAGS_JWT_SECRET: '' });
  const admin = await h.login();
  await makeUser(h, admin, 'eda@example.com', 'editor');
  await h.call('POST', `${E}/flags`, { token: admin, body: boolFlag('a') });
  await h.call('PUT', `${E}/flags/a`, { token: admin, body: boolFlag('a', { enabled: false }) });
  await h.call('POST', `${P}/segments`, { token: admin, body: { key: 's', included: ['u1'] } });
  const before = {
    flag: (await h.call('GET', `${E}/flags/a`, { token: admin })).body,
    segment: (await h.call('GET', `${P}/segments/s`, { token: admin })).body,
    audit: (await h.call('GET', `${P}/audit`, { token: admin })).body,
    envs: (await h.call('GET', `${P}/environments`, { token: admin })).body,
  };
  await h.restart();
  t.equal(
    (await h.call('GET', '/api/v1/projects', { token: admin })).status,
    200,
    'a token issued before the restart is still valid',
  );
  t.same((await h.call('GET', `${E}/flags/a`, { token: admin })).body, before.flag);
  t.same((await h.call('GET', `${P}/segments/s`, { token: admin })).body, before.segment);
  t.same((await h.call('GET', `${P}/audit`, { token: admin })).body, before.audit);
  t.same((await h.call('GET', `${P}/environments`, { token: admin })).body, before.envs, 'SDK keys are kept');
  const editor = await h.login('eda@example.com', 'pass-word-123');
  const put = await h.call('PUT', `${E}/flags/a`, { token: editor, body: boolFlag('a') });
  t.equal((put.body as { version: number }).version, 3, 'versions continue');
});
