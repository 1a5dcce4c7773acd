import t from 'tap';
import fc from 'fast-check';
import { HistoryRing, type HistoryOp } from '../../src/replication/history.js';

/** The reference: an array of objects with the same cap. */
function reference(capacity: number, ops: HistoryOp[]): { held: HistoryOp[]; dropped: number } {
  const held = ops.slice(Math.max(0, ops.length - capacity));
  return { held, dropped: Math.max(0, ops.length - capacity) };
}

function pushOp(ring: HistoryRing, op: HistoryOp): void {
  ring.push(
    op.client,
    op.node,
    op.kind,
    op.key,
    op.kind === 'read' ? (op.result ?? null) : op.value,
    op.invokeMs,
    op.completeMs,
    op.outcome,
  );
}

function op(i: number, over: Partial<HistoryOp> = {}): HistoryOp {
  return {
    client: `c${i % 3}`,
    node: `n${(i % 3) + 1}`,
    kind: 'write',
    key: `k${i % 5}`,
    value: `v${i}`,
    invokeMs: 1_700_000_000_000 + i + 0.25,
    completeMs: 1_700_000_000_001 + i + 0.75,
    outcome: 'ok',
    ...over,
  };
}

t.test('holds the last capacity operations, oldest first, and counts what fell off', async (t) => {
  const ring = new HistoryRing(5);
  t.same(ring.toArray(), []);
  t.equal(ring.length, 0);
  const ops: HistoryOp[] = [];
  for (let i = 0; i < 13; i++) {
    const o = op(i);
    ops.push(o);
    pushOp(ring, o);
  }
  t.equal(ring.length, 5);
  t.equal(ring.dropped, 8);
  t.same(ring.toArray(), ops.slice(8));
  // Times keep their sub-millisecond part.
  t.equal(ring.toArray()[0]?.invokeMs, 1_700_000_000_008.25);
});

t.test('every kind and outcome round-trips; reads carry result, writes value, deletes neither', async (t) => {
  const ring = new HistoryRing(10);
  const ops: HistoryOp[] = [
    op(1, { kind: 'write', value: '', outcome: 'info' }),
    op(2, { kind: 'delete', value: null, outcome: 'fail' }),
    { ...op(3, { kind: 'read', value: null, outcome: 'ok' }), result: 'seen' },
    { ...op(4, { kind: 'read', value: null, outcome: 'ok' }), result: null },
  ];
  for (const o of ops) pushOp(ring, o);
  t.same(ring.toArray(), ops);
  t.notOk('result' in (ring.toArray()[0] as HistoryOp), 'a write has no result field');
  t.equal(ring.toArray()[2]?.result, 'seen');
  t.equal(ring.toArray()[3]?.result, null);
});

t.test('non-ASCII and large strings are kept whole (side map), and leave it when overwritten', async (t) => {
  const ring = new HistoryRing(3);
  const big = 'x'.repeat(100_000);
  const ops = [
    op(0, { value: 'héllo ✓ 🙂' }),
    op(1, { key: 'ключ' }),
    op(2, { value: big }),
    op(3, { client: 'c'.repeat(200) }),
  ];
  for (const o of ops) pushOp(ring, o);
  t.same(ring.toArray(), ops.slice(1));
  // Overwrite every slot with plain operations: nothing from the side map may come back.
  const plain = [op(10), op(11), op(12)];
  for (const o of plain) pushOp(ring, o);
  t.same(ring.toArray(), plain);
  // A copy is returned: changing it does not change the ring.
  const copy = ring.toArray();
  (copy[0] as HistoryOp).key = 'changed';
  t.equal(ring.toArray()[0]?.key, 'k0');
});

t.test('spans several storage chunks', async (t) => {
  const ring = new HistoryRing(5000);
  const ops: HistoryOp[] = [];
  for (let i = 0; i < 7321; i++) {
    const o = op(i, i % 97 === 0 ? { value: `é${i}` } : {});
    ops.push(o);
    pushOp(ring, o);
  }
  const ref = reference(5000, ops);
  t.equal(ring.dropped, ref.dropped);
  t.same(ring.toArray(), ref.held);
});

t.test('agrees with an array of objects on any sequence of operations', async (t) => {
  const str = fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.string({ unit: 'binary', maxLength: 8 }),
    fc.string({ minLength: 100, maxLength: 200 }),
  );
  const arbOp = fc.record({
    client: str,
    node: fc.constantFrom('n1', 'n2', 'n10'),
    kind: fc.constantFrom('write' as const, 'read' as const, 'delete' as const),
    key: str,
    payload: fc.option(str),
    invokeMs: fc.double({ noNaN: true }),
    completeMs: fc.double({ noNaN: true }),
    outcome: fc.constantFrom('ok' as const, 'fail' as const, 'info' as const),
  });
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 40 }), fc.array(arbOp, { maxLength: 120 }), (cap, raw) => {
      const ring = new HistoryRing(cap);
      const ops: HistoryOp[] = raw.map((r) => {
        const o: HistoryOp = {
          client: r.client,
          node: r.node,
          kind: r.kind,
          key: r.key,
          value: r.kind === 'write' ? r.payload : null,
          invokeMs: r.invokeMs,
          completeMs: r.completeMs,
          outcome: r.outcome,
        };
        if (r.kind === 'read') o.result = r.payload;
        return o;
      });
      for (const o of ops) pushOp(ring, o);
      const ref = reference(cap, ops);
      t.same(ring.toArray(), ref.held);
      return ring.dropped === ref.dropped && ring.length === ref.held.length;
    }),
    { numRuns: 300 },
  );
});

t.test('rejects a capacity that is not a positive integer', async (t) => {
  t.throws(() => new HistoryRing(0));
  t.throws(() => new HistoryRing(1.5));
});
