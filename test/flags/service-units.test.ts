/**
 * Unit tests of the flag service's pure pieces: the SSE parser, the login rate limiter, password
 * hashing, roles, request-parameter parsing, the in-memory replica's load/feed race, the stream
 * hub's replay and slow-client rules (over fake streams), synchronous token verification against
 * jose, JSON depth counting, and the OpenFeature context mapping.
 */
import t from 'tap';
import type { ServerStream } from '../../src/http/index.js';
import type { StreamCloseReason } from '../../src/http/stream.js';
import { SseParser } from '../../src/flags/sdk/sse.js';
import { SlidingWindowLimiter } from '../../src/flags/auth/rate-limit.js';
import { hashPassword, verifyPassword } from '../../src/flags/auth/password.js';
import { roleAtLeast, roleForMethod } from '../../src/flags/auth/roles.js';
import { parseAuditLimit } from '../../src/flags/api/management-routes.js';
import { ifMatchVersion } from '../../src/flags/api/guard.js';
import { Replica } from '../../src/flags/stream/replica.js';
import { changeFrame, StreamHub } from '../../src/flags/stream/hub.js';
import { toEvalContext } from '../../src/flags/sdk/provider.js';
import type { Change, EnvironmentSnapshot } from '../../src/flags/store/types.js';
import type { Flag } from '../../src/flags/model/types.js';
import { createHmac } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import { signAccessToken, verifyAccessToken } from '../../src/flags/auth/tokens.js';
import { jsonDepth } from '../../src/flags/model/validate.js';

t.test('the SSE parser handles every line ending, split chunks, comments, ids and multi-line data', async (t) => {
  const stream =
    'retry: 500\n: hi\nid: 1\nevent: put\ndata: {"a":\ndata: 1}\n\r\nid: 2\r\n' +
    'event: patch\r\ndata: x\r\n\r\ndata:no-space\r\r';
  const cases = [1, 2, 3, 7, stream.length];
  for (const size of cases) {
    const p = new SseParser();
    const got = [];
    for (let i = 0; i < stream.length; i += size) got.push(...p.push(stream.slice(i, i + size)));
    t.same(
      got,
      [
        { event: 'put', data: '{"a":\n1}', id: '1' },
        { event: 'patch', data: 'x', id: '2' },
        { event: 'message', data: 'no-space', id: '2' },
      ],
      `chunks of ${size}`,
    );
    t.equal(p.retryMs, 500);
    t.equal(p.comments, 1);
  }
  const p = new SseParser();
  t.same(p.push('event: put\n\n'), [], 'an event without data is not dispatched');
  t.same(p.push('data: a'), [], 'nothing before the blank line');
});

t.test('the login limiter allows N attempts per window per address, with a Retry-After', async (t) => {
  const l = new SlidingWindowLimiter({ attemptsMax: 2, windowMs: 10_000, addressesMax: 2 });
  const steps: Array<[string, number, boolean | number]> = [
    ['a', 0, true],
    ['a', 1000, true],
    ['a', 2000, 8],
    ['b', 2000, true],
    ['a', 9999, 1],
    ['a', 10_001, true],
    ['a', 10_500, 1],
  ];
  for (const [addr, at, want] of steps) {
    const d = l.attempt(addr, at);
    if (want === true) t.ok(d.ok, `${addr}@${at} allowed`);
    else t.same(d, { ok: false, retryAfterSec: want }, `${addr}@${at} refused for ${want} s`);
  }
  l.attempt('c', 11_000);
  t.equal(l.trackedAddresses, 2, 'the address table is capped');
  t.equal(l.evictions, 1);
});

t.test(
  'passwords: scrypt with a per-user salt, verified in constant time, never matching a malformed hash',
  async (t) => {
    const h1 = await hashPassword('s3cret-pass');
    const h2 = await hashPassword('s3cret-pass');
    t.match(h1, /^scrypt\$\d+\$\d+\$\d+\$[\w-]+\$[\w-]+$/);
    t.not(h1, h2, 'salts differ');
    t.notOk(h1.includes('s3cret'), 'the clear password is not in the hash');
    t.ok(await verifyPassword('s3cret-pass', h1));
    t.notOk(await verifyPassword('s3cret-pasS', h1));
    for (const bad of ['', 'plain', 'scrypt$1$2$3$x', 'bcrypt$1$1$1$a$b', h1.replace(/\$[\w-]+$/, '$AAAA')]) {
      t.notOk(await verifyPassword('s3cret-pass', bad), `malformed ${JSON.stringify(bad.slice(0, 20))}`);
    }
  },
);

t.test('roles: GET viewer, POST/PUT editor, DELETE admin, ordered viewer < editor < admin', async (t) => {
  t.same((['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const).map(roleForMethod), [
    'viewer',
    'editor',
    'editor',
    'editor',
    'admin',
  ]);
  const table: Array<[Parameters<typeof roleAtLeast>[0], Parameters<typeof roleAtLeast>[1], boolean]> = [
    ['viewer', 'viewer', true],
    ['viewer', 'editor', false],
    ['editor', 'viewer', true],
    ['editor', 'admin', false],
    ['admin', 'editor', true],
  ];
  for (const [have, need, ok] of table)
    t.equal(roleAtLeast(have, need), ok, `${have} ${ok ? 'may' : 'may not'} act as ${need}`);
});

function statusOf(fn: () => unknown): number | 'no error' {
  try {
    fn();
    return 'no error';
  } catch (err) {
    return (err as { status: number }).status;
  }
}

t.test('audit limits and If-Match headers parse strictly', async (t) => {
  const limits: Array<[string | null, number | 'error']> = [
    [null, 100],
    ['1', 1],
    ['500', 500],
    ['501', 500],
    ['0', 'error'],
    ['-1', 'error'],
    ['1e2', 'error'],
    [' 5', 'error'],
    ['', 'error'],
  ];
  for (const [raw, want] of limits) {
    if (want === 'error')
      t.equal(
        statusOf(() => parseAuditLimit(raw)),
        400,
        `limit=${raw}`,
      );
    else t.equal(parseAuditLimit(raw), want, `limit=${raw}`);
  }
  const req = (v?: string) =>
    ({ headers: v === undefined ? {} : { 'if-match': v } }) as Parameters<typeof ifMatchVersion>[0];
  t.equal(ifMatchVersion(req()), undefined);
  t.equal(ifMatchVersion(req('3')), 3);
  t.equal(ifMatchVersion(req('"3"')), 3);
  t.equal(ifMatchVersion(req('W/"12"')), 12);
  t.equal(
    statusOf(() => ifMatchVersion(req('*'))),
    400,
  );
});

function flag(key: string, version: number): Flag {
  return {
    key,
    name: key,
    type: 'boolean',
    enabled: true,
    defaultVariation: 'off',
    variations: [{ key: 'off', value: false }],
    targets: [],
    prerequisites: [],
    rules: [],
    rollout: [],
    version,
    createdAt: 'c',
    updatedAt: 'u',
  };
}

function change(seq: number, over: Partial<Change> = {}): Change {
  return {
    seq,
    projectKey: 'p',
    environmentKey: 'e',
    resource: 'flag',
    op: 'upsert',
    key: 'a',
    version: seq,
    data: flag('a', seq),
    ...over,
  };
}

t.test(
  'the replica applies changes that arrive while a snapshot loads, and skips those the snapshot has',
  async (t) => {
    let release!: (s: EnvironmentSnapshot) => void;
    const replica = new Replica(() => new Promise((r) => (release = r)), 10);
    const loading = replica.environment('p', 'e');
    t.ok(loading instanceof Promise);
    replica.apply(change(11));
    replica.apply(change(12, { key: 'b', data: flag('b', 12) }));
    replica.apply(change(13, { environmentKey: 'other', key: 'c', data: flag('c', 13) }));
    replica.apply(
      change(14, {
        environmentKey: null,
        resource: 'segment',
        key: 's',
        data: {
          key: 's',
          name: 's',
          included: [],
          excluded: [],
          rules: [],
          version: 1,
          createdAt: 'c',
          updatedAt: 'u',
        },
      }),
    );
    // The snapshot was read at seq 11: it already has change 11, not 12..14.
    release({ flags: [flag('a', 11)], segments: [], seq: 11 });
    const env = await loading;
    t.same([...env.flags.keys()].sort(), ['a', 'b'], 'flag of another environment ignored');
    t.same([...env.segments.keys()], ['s'], 'project segment applied');
    t.equal(env.flags.get('a')?.version, 11);
    t.equal(replica.positionOf(env), 14);
    t.equal(replica.environment('p', 'e'), env, 'loaded once');
    replica.apply(change(15, { op: 'delete', data: null }));
    t.notOk(env.flags.has('a'), 'a delete removes the flag');
    t.same(replica.affected(change(16, { environmentKey: 'zzz' })), [], 'an unloaded environment is not touched');
  },
);

interface FakeStream extends ServerStream {
  /** What was written, split into whole SSE frames (however the writes cut them). */
  chunks: string[];
  closeNow(reason?: StreamCloseReason): void;
}

function fakeStream(acceptWrites = () => true): FakeStream {
  const closers: Array<(reason: StreamCloseReason) => void> = [];
  let closed = false;
  let partial = '';
  const s: FakeStream = {
    chunks: [],
    drainTimeoutMs: 0,
    open: () => undefined,
    write: (c) => {
      if (closed) return false;
      if (!acceptWrites()) {
        // What the adapter does on overflow: close as slow, run close callbacks, refuse the write.
        s.closeNow('slow');
        return false;
      }
      partial += Array.isArray(c) ? c.map(String).join('') : String(c);
      for (let end = partial.indexOf('\n\n'); end >= 0; end = partial.indexOf('\n\n')) {
        s.chunks.push(partial.slice(0, end + 2));
        partial = partial.slice(end + 2);
      }
      return true;
    },
    end: () => s.closeNow(),
    bufferedBytes: 0,
    get closed() {
      return closed;
    },
    onClose: (cb) => closers.push(cb),
    closeNow: (reason = 'client') => {
      if (closed) return;
      closed = true;
      closers.forEach((cb) => cb(reason));
    },
  };
  return s;
}

t.test('the hub replays from its log, falls back to a put, and drops a client whose writes fail', async (t) => {
  const replica = new Replica(async () => ({ flags: [flag('a', 1)], segments: [], seq: 5 }), 5);
  const hub = new StreamHub(
    replica,
    {
      replayLogEntriesMax: 3,
      replayLogBytesMax: 1 << 20,
      clientsMax: 2,
      heartbeatMs: 0,
      drainTimeoutMs: 1000,
      replayBytesMax: 1 << 20,
    },
    async () => 100,
  );
  t.teardown(() => hub.close());
  const env = { projectKey: 'p', key: 'e', sdkKey: 'k', createdAt: 'c' };
  const publish = (c: Change): void => hub.publish(c, replica.apply(c));

  const first = fakeStream();
  t.same(await hub.connect(env, first, undefined), { ok: true, mode: 'put' });
  t.match(first.chunks[0], /^retry: 1000\nid: 5\nevent: put\n/);
  publish(change(6));
  publish(change(7, { environmentKey: 'other' }));
  t.equal(first.chunks.length, 2, 'only its own environment');
  t.equal(first.chunks[1], changeFrame(change(6)));

  const resumed = fakeStream();
  t.same(await hub.connect(env, resumed, 5), { ok: true, mode: 'replay' });
  t.same(resumed.chunks, ['retry: 1000\n\n', changeFrame(change(6))], 'exactly the missed change');
  t.same(await hub.connect(env, fakeStream(), undefined), { ok: false, code: 'over_capacity' }, 'capped');
  t.equal(hub.stats.refusedOverCap, 1);
  resumed.closeNow();
  t.equal(hub.connected, 1, 'a closed client is forgotten');

  for (const s of [8, 9, 10, 11]) publish(change(s));
  const tooOld = fakeStream();
  t.same(await hub.connect(env, tooOld, 6), { ok: true, mode: 'put' }, 'the log no longer reaches back to 6');
  t.match(tooOld.chunks[0], /id: 11\nevent: put/);
  tooOld.closeNow();

  let accept = true;
  const slow = fakeStream(() => accept);
  await hub.connect(env, slow, undefined);
  accept = false;
  publish(change(12));
  t.equal(hub.stats.slowDisconnects, 1, 'the slow client is counted');
  t.ok(slow.closed);
  t.equal(hub.connected, 1, 'and gone, while the healthy one stays');
  t.equal(first.chunks.at(-1), changeFrame(change(12)));
});

t.test(
  'a resume whose missed changes exceed replayBytesMax gets a fresh put instead of a private copy of the log',
  async (t) => {
    const replica = new Replica(async () => ({ flags: [flag('a', 1)], segments: [], seq: 5 }), 5);
    const hub = new StreamHub(
      replica,
      {
        replayLogEntriesMax: 100,
        replayLogBytesMax: 1 << 20,
        clientsMax: 10,
        heartbeatMs: 0,
        drainTimeoutMs: 1000,
        replayBytesMax: 1000,
      },
      async () => 100,
    );
    t.teardown(() => hub.close());
    const env = { projectKey: 'p', key: 'e', sdkKey: 'k', createdAt: 'c' };
    const publish = (c: Change): void => hub.publish(c, replica.apply(c));
    await hub.connect(env, fakeStream(), undefined);
    const frameBytes = Buffer.byteLength(changeFrame(change(6)));
    const fit = Math.floor(1000 / frameBytes);
    for (let s = 6; s < 6 + fit + 1; s++) publish(change(s));
    const cases = [
      { name: 'missed changes within the limit are replayed', from: 6 + 1, mode: 'replay' },
      { name: 'missed changes past the limit get a put', from: 5, mode: 'put' },
    ];
    for (const c of cases) {
      const s = fakeStream();
      t.same(await hub.connect(env, s, c.from), { ok: true, mode: c.mode }, c.name);
      if (c.mode === 'put') t.match(s.chunks[0], /event: put/, c.name);
      else t.equal(s.chunks.length, 1 + fit - 1, `${c.name}: every missed frame`);
    }
  },
);

t.test(
  'a record that cannot be serialised is left out of the put and its change is not sent, and the rest still streams',
  async (t) => {
    // A BigInt stands in for what a store written before the input limits may hold (a value too deep to serialise).
    const bad = { ...flag('bad', 1), variations: [{ key: 'off', value: 1n as unknown as boolean }] };
    const replica = new Replica(async () => ({ flags: [flag('a', 1), bad], segments: [], seq: 5 }), 5);
    const reported: string[] = [];
    const hub = new StreamHub(
      replica,
      {
        replayLogEntriesMax: 10,
        replayLogBytesMax: 1 << 20,
        clientsMax: 10,
        heartbeatMs: 0,
        drainTimeoutMs: 1000,
        replayBytesMax: 1 << 20,
      },
      async () => 100,
      (what) => reported.push(what),
    );
    t.teardown(() => hub.close());
    const env = { projectKey: 'p', key: 'e', sdkKey: 'k', createdAt: 'c' };
    const s = fakeStream();
    t.same(await hub.connect(env, s, undefined), { ok: true, mode: 'put' });
    const put = JSON.parse((s.chunks[0] ?? '').split('data: ')[1] ?? '') as {
      data: { flags: Record<string, unknown> };
    };
    t.same(Object.keys(put.data.flags), ['a'], 'the put holds every servable flag');
    hub.publish(change(6, { key: 'bad', data: bad }), replica.apply(change(6, { key: 'bad', data: bad })));
    hub.publish(change(7), replica.apply(change(7)));
    t.equal(s.chunks.length, 2, 'the unservable change was skipped, the next one sent');
    t.match(s.chunks[1], /^id: 7\n/);
    t.equal(hub.stats.unservable, 2);
    t.match(reported, [/flag p\/e\/bad left out of the SSE put/, /flag p\/e\/bad version 6 not sent/]);
  },
);

t.test('access tokens verify synchronously exactly as jose does', async (t) => {
  const secret = new TextEncoder().encode('unit-secret-unit-secret-unit-secret-0123');
  const now = Date.parse('2024-05-01T00:00:00Z');
  const sec = Math.floor(now / 1000);
  const good = await signAccessToken(secret, { userId: 'u1', email: 'a@b.c', role: 'editor' }, now);
  const sign = (
    claims: Record<string, unknown>,
    header: Record<string, unknown> = { alg: 'HS256' },
    key = secret,
  ): Promise<string> => new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(key);
  const [h, p] = good.split('.');
  // jose refuses to sign some of these (a crit header): made by hand.
  const hs256 = (header: Record<string, unknown>, claims: Record<string, unknown>): string => {
    const part = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
    const input = `${part(header)}.${part(claims)}`;
    return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
  };
  const cases: Array<{ name: string; token: string | Promise<string>; at?: number; ok: boolean }> = [
    { name: 'a token we signed', token: good, ok: true },
    { name: 'one second before expiry', token: good, at: now + 3599_000, ok: true },
    { name: 'at expiry', token: good, at: now + 3600_000, ok: false },
    {
      name: 'another secret',
      token: sign(
        { sub: 'u1', email: 'a@b.c', role: 'admin', iss: 'simlab-flags', exp: sec + 60 },
        undefined,
        new TextEncoder().encode('x'.repeat(40)),
      ),
      ok: false,
    },
    {
      name: 'a changed payload',
      token:
        `${h}.` +
        Buffer.from(
          JSON.stringify({ sub: 'u1', email: 'a@b.c', role: 'admin', iss: 'simlab-flags', exp: sec + 60 }),
        ).toString('base64url') +
        `.${good.split('.')[2]}`,
      ok: false,
    },
    { name: 'alg none', token: `${Buffer.from('{"alg":"none"}').toString('base64url')}.${p}.`, ok: false },
    {
      name: 'another issuer',
      token: sign({ sub: 'u1', email: 'a@b.c', role: 'admin', iss: 'other', exp: sec + 60 }),
      ok: false,
    },
    { name: 'no exp', token: sign({ sub: 'u1', email: 'a@b.c', role: 'admin', iss: 'simlab-flags' }), ok: false },
    {
      name: 'nbf in the future',
      token: sign({ sub: 'u1', email: 'a@b.c', role: 'admin', iss: 'simlab-flags', exp: sec + 60, nbf: sec + 10 }),
      ok: false,
    },
    {
      name: 'a crit header',
      token: hs256(
        { alg: 'HS256', crit: ['x'], x: 1 },
        { sub: 'u1', email: 'a@b.c', role: 'admin', iss: 'simlab-flags', exp: sec + 60 },
      ),
      ok: false,
    },
    {
      name: 'hand-made and valid',
      token: hs256({ alg: 'HS256' }, { sub: 'u1', email: 'a@b.c', role: 'editor', iss: 'simlab-flags', exp: sec + 60 }),
      ok: true,
    },
    { name: 'no role', token: sign({ sub: 'u1', email: 'a@b.c', iss: 'simlab-flags', exp: sec + 60 }), ok: false },
    { name: 'a signature with trailing junk', token: `${good}A`, ok: false },
    { name: 'garbage', token: 'not.a.jwt', ok: false },
  ];
  for (const c of cases) {
    const token = await c.token;
    const at = c.at ?? now;
    const ours = verifyAccessToken(secret, token, at);
    t.equal(ours !== undefined, c.ok, c.name);
    if (c.ok) t.same(ours?.principal, { userId: 'u1', email: 'a@b.c', role: 'editor' }, `${c.name}: the principal`);
    // jose's verdict on the signature and the registered claims, for the cases it can judge.
    const jose = await jwtVerify(token, secret, {
      algorithms: ['HS256'],
      issuer: 'simlab-flags',
      currentDate: new Date(at),
      requiredClaims: ['exp'],
    }).then(
      () => true,
      () => false,
    );
    if (c.name !== 'no role') t.equal(ours !== undefined, jose, `${c.name}: jose agrees`);
  }
});

t.test('jsonDepth counts nesting without recursion and stops looking past its limit', async (t) => {
  let deep: unknown = 1;
  for (let i = 0; i < 200_000; i++) deep = [deep];
  const cases: Array<[string, unknown, number, number]> = [
    ['a scalar', 'x', 32, 0],
    ['an empty array', [], 32, 1],
    ['an empty object', {}, 32, 1],
    ['mixed', { a: [1, { b: [] }], c: 2 }, 32, 4],
    ['exactly at the limit', JSON.parse(`${'['.repeat(32)}${']'.repeat(32)}`), 32, 32],
    ['one past the limit', JSON.parse(`${'['.repeat(33)}${']'.repeat(33)}`), 32, 33],
    ['200,000 levels', deep, 32, 33],
  ];
  for (const [name, v, stopAt, want] of cases) t.equal(jsonDepth(v, stopAt), want, name);
});

t.test('OpenFeature contexts map to flat evaluation contexts', async (t) => {
  const when = new Date('2024-01-02T03:04:05.000Z');
  t.same(
    toEvalContext({
      targetingKey: 'u1',
      country: 'NL',
      age: 30,
      beta: true,
      tags: ['a', 1, { x: 1 }],
      signup: when,
      nested: { a: 1 },
    }),
    {
      key: 'u1',
      country: 'NL',
      age: 30,
      beta: true,
      tags: ['a', 1],
      signup: '2024-01-02T03:04:05.000Z',
    },
  );
});
