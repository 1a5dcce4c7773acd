/**
 * Unit tests of the flag service's pure pieces: the SSE parser, the login rate limiter, password
 * hashing, roles, request-parameter parsing, the in-memory replica's load/feed race, the stream
 * hub's replay and slow-client rules (over fake streams), and the OpenFeature context mapping.
 */
import t from 'tap';
import type { ServerStream } from '../../src/http/index.js';
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

t.test('the SSE parser handles every line ending, split chunks, comments, ids and multi-line data', async (t) => {
  const stream = 'retry: 500\n: hi\nid: 1\nevent: put\ndata: {"a":\ndata: 1}\n\r\nid: 2\r\nevent: patch\r\ndata: x\r\n\r\ndata:no-space\r\r';
  const cases = [1, 2, 3, 7, stream.length];
  for (const size of cases) {
    const p = new SseParser();
    const got = [];
    for (let i = 0; i < stream.length; i += size) got.push(...p.push(stream.slice(i, i + size)));
    t.same(got, [
      { event: 'put', data: '{"a":\n1}', id: '1' },
      { event: 'patch', data: 'x', id: '2' },
      { event: 'message', data: 'no-space', id: '2' },
    ], `chunks of ${size}`);
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

t.test('passwords: scrypt with a per-user salt, verified in constant time, never matching a malformed hash', async (t) => {
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
});

t.test('roles: GET viewer, POST/PUT editor, DELETE admin, ordered viewer < editor < admin', async (t) => {
  t.same((['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const).map(roleForMethod), ['viewer', 'editor', 'editor', 'editor', 'admin']);
  const table: Array<[Parameters<typeof roleAtLeast>[0], Parameters<typeof roleAtLeast>[1], boolean]> = [
    ['viewer', 'viewer', true],
    ['viewer', 'editor', false],
    ['editor', 'viewer', true],
    ['editor', 'admin', false],
    ['admin', 'editor', true],
  ];
  for (const [have, need, ok] of table) t.equal(roleAtLeast(have, need), ok, `${have} ${ok ? 'may' : 'may not'} act as ${need}`);
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
    [null, 100], ['1', 1], ['500', 500], ['501', 500], ['0', 'error'], ['-1', 'error'], ['1e2', 'error'], [' 5', 'error'], ['', 'error'],
  ];
  for (const [raw, want] of limits) {
    if (want === 'error') t.equal(statusOf(() => parseAuditLimit(raw)), 400, `limit=${raw}`);
    else t.equal(parseAuditLimit(raw), want, `limit=${raw}`);
  }
  const req = (v?: string) => ({ headers: v === undefined ? {} : { 'if-match': v } }) as Parameters<typeof ifMatchVersion>[0];
  t.equal(ifMatchVersion(req()), undefined);
  t.equal(ifMatchVersion(req('3')), 3);
  t.equal(ifMatchVersion(req('"3"')), 3);
  t.equal(ifMatchVersion(req('W/"12"')), 12);
  t.equal(statusOf(() => ifMatchVersion(req('*'))), 400);
});

function flag(key: string, version: number): Flag {
  return { key, name: key, type: 'boolean', enabled: true, defaultVariation: 'off', variations: [{ key: 'off', value: false }], targets: [], prerequisites: [], rules: [], rollout: [], version, createdAt: 'c', updatedAt: 'u' };
}

function change(seq: number, over: Partial<Change> = {}): Change {
  return { seq, projectKey: 'p', environmentKey: 'e', resource: 'flag', op: 'upsert', key: 'a', version: seq, data: flag('a', seq), ...over };
}

t.test('the replica applies changes that arrive while a snapshot loads, and skips those the snapshot has', async (t) => {
  let release!: (s: EnvironmentSnapshot) => void;
  const replica = new Replica(() => new Promise((r) => (release = r)), 10);
  const loading = replica.environment('p', 'e');
  t.ok(loading instanceof Promise);
  replica.apply(change(11));
  replica.apply(change(12, { key: 'b', data: flag('b', 12) }));
  replica.apply(change(13, { environmentKey: 'other', key: 'c', data: flag('c', 13) }));
  replica.apply(change(14, { environmentKey: null, resource: 'segment', key: 's', data: { key: 's', name: 's', included: [], excluded: [], rules: [], version: 1, createdAt: 'c', updatedAt: 'u' } }));
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
});

interface FakeStream extends ServerStream {
  chunks: string[];
  closeNow(): void;
}

function fakeStream(acceptWrites = () => true): FakeStream {
  const closers: Array<() => void> = [];
  let closed = false;
  const s: FakeStream = {
    chunks: [],
    open: () => undefined,
    write: (c) => {
      if (closed) return false;
      if (!acceptWrites()) {
        // What the adapter does on overflow: close, run close callbacks, refuse the write.
        s.closeNow();
        return false;
      }
      s.chunks.push(c);
      return true;
    },
    end: () => s.closeNow(),
    bufferedBytes: 0,
    get closed() {
      return closed;
    },
    onClose: (cb) => closers.push(cb),
    closeNow: () => {
      if (closed) return;
      closed = true;
      closers.forEach((cb) => cb());
    },
  };
  return s;
}

t.test('the hub replays from its log, falls back to a put, and drops a client whose writes fail', async (t) => {
  const replica = new Replica(async () => ({ flags: [flag('a', 1)], segments: [], seq: 5 }), 5);
  const hub = new StreamHub(replica, { replayLogEntriesMax: 3, replayLogBytesMax: 1 << 20, clientsMax: 2, heartbeatMs: 0 }, async () => 100);
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

t.test('OpenFeature contexts map to flat evaluation contexts', async (t) => {
  const when = new Date('2024-01-02T03:04:05.000Z');
  t.same(toEvalContext({ targetingKey: 'u1', country: 'NL', age: 30, beta: true, tags: ['a', 1, { x: 1 }], signup: when, nested: { a: 1 } }), {
    key: 'u1',
    country: 'NL',
    age: 30,
    beta: true,
    tags: ['a', 1],
    signup: '2024-01-02T03:04:05.000Z',
  });
});
