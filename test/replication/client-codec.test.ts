/**
 * The client channel's codec (protocol/actor.ts encodeClientTransferable / decodeClient): msgpack
 * records over shapes both ends know. What one module instance writes, another (a worker thread's
 * own copy of the module) reads back as plain msgpack would: the hot shapes, shapes outside the
 * list, many shapes in one document, undefined fields. And the durable frame relies on msgpackr
 * never writing over an earlier encode's bytes (node-actor.ts takes no copy of them). Durable records
 * (encodeDurable, records over raft's and Version's shapes) read back in another instance too.
 */
import t from 'tap';
import { isDeepStrictEqual } from 'node:util';
import * as actor from '../../protocol/actor.js';
import {
  decode,
  decodeClient,
  durableFrameIndex,
  encode,
  encodeClientTransferable,
  encodeTransferable,
  FrameWriter,
  leadingDurableFrame,
  readFrames,
} from '../../protocol/actor.js';

/** A second instance of the module, as a worker thread has: its own codec state, the same shapes. */
const other = (await import(new URL('../../protocol/actor.js?other-thread', import.meta.url).href)) as typeof actor;

/** What plain msgpack makes of `v` (the codec must agree with it). */
const plain = (v: unknown): unknown => decode(encode(v));

const writeReply = (id: number): Record<string, unknown> => ({
  id,
  ok: true,
  result: {
    kind: 'entry',
    entry: {
      key: 'k',
      value: 'a-value-of-some-thirty-two-bytes',
      tombstone: false,
      timestamp: 1796565099158000000 + id,
      node_id: 'n1',
      version: id,
      vclock: { n1: id },
    },
    node_id: 'n1',
  },
});

t.test('write replies and requests round-trip between two module instances, smaller than maps', async (t) => {
  const out = {
    replies: Array.from({ length: 16 }, (_, i) => writeReply(i + 1)),
    events: [{ type: 'entry_replicated', node_id: 'n2', data: { index: 9, entries: 3, leader: 'n1' } }],
  };
  const req = Array.from({ length: 16 }, (_, i) =>
    i % 2 === 0
      ? { id: i, op: { op: 'write', key: `k${i}`, value: 'v' } }
      : { id: i, op: { op: 'read', key: `k${i}`, client_id: 'c1' }, tp: '00-abc-def-01' },
  );
  for (const doc of [out, req]) {
    const bytes = new Uint8Array(encodeClientTransferable(doc));
    t.ok(isDeepStrictEqual(other.decodeClient(bytes), plain(doc)), 'read by the other instance');
    t.ok(isDeepStrictEqual(decodeClient(new Uint8Array(other.encodeClientTransferable(doc))), plain(doc)), 'and back');
    t.ok(bytes.byteLength < encodeTransferable(doc).byteLength, 'fewer bytes than plain msgpack');
  }
});

t.test('shapes outside the list, undefined fields and many shapes in one document', async (t) => {
  const docs: unknown[] = [
    { replies: [{ id: 3, ok: false, code: 'timeout', indeterminate: true, error: 'late' }], events: [] },
    { replies: [], events: [{ type: 'x', node_id: undefined, data: { a: [1, 'b', null, { c: undefined }] } }] },
    Array.from({ length: 300 }, (_, i) => ({ [`k${i}`]: i, z: { [`y${i % 70}`]: [i] } })),
    { replies: [{ id: 1, ok: true, result: { kind: 'batch', results: [writeReply(2)] } }], events: [] },
  ];
  // Interleaved both ways, so each instance reads after it has written and the reverse.
  for (let round = 0; round < 3; round++) {
    for (const doc of docs) {
      const there = other.decodeClient(new Uint8Array(encodeClientTransferable(doc)));
      const back = decodeClient(new Uint8Array(other.encodeClientTransferable(doc)));
      t.ok(isDeepStrictEqual(there, plain(doc)) && isDeepStrictEqual(back, plain(doc)), `round ${round}`);
    }
  }
  // The hot shapes still decode after all that (no shape was added to either end's list).
  const doc = { replies: [writeReply(7)], events: [] };
  t.same(other.decodeClient(new Uint8Array(encodeClientTransferable(doc))), plain(doc));
});

t.test("an earlier encode's bytes stay intact while later encodes run (the durable frame's no-copy)", async (t) => {
  const records = [['e', 1, 0, 17, 'n1', 'k', 'v'.repeat(40)]];
  const w = new FrameWriter();
  w.add(durableFrameIndex, encode(records));
  // Enough later encodes to fill msgpackr's buffer several times over.
  const sends = Array.from({ length: 200 }, (_, i) => ({
    t: 'append',
    entries: [{ index: i, value: 'x'.repeat(100) }],
  }));
  for (const m of sends) w.add(2, encode(m));
  const buf = w.finish();
  const d = leadingDurableFrame(buf);
  t.ok(d !== undefined);
  t.same(decode(d?.bytes as Uint8Array), records);
  const got: unknown[] = [];
  readFrames(buf, (idx, bytes) => {
    if (idx === 2) got.push(decode(bytes));
  });
  t.same(got, sends);
});

t.test(
  'durable records (encodeDurable) read back by another module instance, as plain msgpack reads them',
  async (t) => {
    const v = (key: string, n: number): Record<string, unknown> => ({
      key,
      value: `value-${n}`,
      tombstone: false,
      timestamp: 1796565099158000000 + n,
      node_id: 'n1',
      version: n,
      vclock: { n1: n, n3: 1 },
    });
    const entry = (index: number): Record<string, unknown> => ({
      index,
      term: 2,
      node_id: 'n1',
      timestamp: 1796565099158000000 + index,
      type: 'put',
      key: 'k',
      value: 'x'.repeat(130),
    });
    // User keys that name a record's fields (kind, index, key, vclock) stay a plain map's keys.
    const store = { kind: v('kind', 1), index: v('index', 2), key: v('key', 3), vclock: v('vclock', 4) };
    const records: unknown[] = [
      { kind: 'checkpoint', state: { term: 2, votedFor: null, log: [], raftSnapshot: { voters: ['n1'], store } } },
      {
        kind: 'append',
        entries: [entry(1), entry(2), { ...entry(3), type: 'batch', entries: [{ key: 'a', value: 'b' }] }],
      },
      { kind: 'hard', term: 3, votedFor: 'n2' },
      { kind: 'truncate', fromIndex: 2 },
      { kind: 'compact', lastIncludedIndex: 1, lastIncludedTerm: 2 },
      ['e', 1, 0, 17, 'n1', 'k', null],
      ['c', 1, 'n1', 3, [v('a', 5), { ...v('b', 6), extra: true }], 1],
      ['k', 'a', null, ['a', 'x', false, 1, 'n2', 1, { n2: 1 }]],
    ];
    // Two documents back to back, as durable storage holds them (the second reuses the first's shapes).
    const a = actor.encodeDurable(records);
    const b = actor.encodeDurable(records.slice(1));
    const buf = new Uint8Array(a.byteLength + b.byteLength);
    buf.set(a);
    buf.set(b, a.byteLength);
    const got: unknown[] = [];
    other.forEachDurableRecord([buf.buffer], (r) => got.push(r));
    const want = [...records, ...records.slice(1)].map(plain);
    t.ok(isDeepStrictEqual(got, want), 'the same records, keys in the same order');
    t.same(Object.keys((got[0] as { state: { raftSnapshot: { store: object } } }).state.raftSnapshot.store), [
      'kind',
      'index',
      'key',
      'vclock',
    ]);
    // The durable frame takes no copy of encodeDurable's bytes either: later sends' encodes leave them intact.
    const kept = actor.encodeDurable(records);
    const copy = Uint8Array.from(kept);
    for (let i = 0; i < 200; i++) encode({ t: 'append', entries: [entry(i)] });
    t.same(Buffer.from(kept), Buffer.from(copy), "later encodes did not write over a durable encode's bytes");
    // Storage written as plain msgpack (an older actor's encode) still reads back.
    const old: unknown[] = [];
    other.forEachDurableRecord([Uint8Array.from(encode(records)).buffer], (r) => old.push(r));
    t.ok(isDeepStrictEqual(old, records.map(plain)));
  },
);
