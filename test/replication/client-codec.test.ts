/**
 * The client channel's codec (protocol/actor.ts encodeClientTransferable / decodeClient): msgpack
 * records over shapes both ends know. What one module instance writes, another (a worker thread's
 * own copy of the module) reads back as plain msgpack would: the hot shapes, shapes outside the
 * list, many shapes in one document, undefined fields. And the durable frame relies on msgpackr
 * never writing over an earlier encode's bytes (node-actor.ts takes no copy of them).
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
