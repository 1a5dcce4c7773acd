import t from 'tap';
import fc from 'fast-check';
import {
  clockKey,
  compareClocks,
  descends,
  incrementClock,
  mergeClocks,
  type VClock,
} from '../../src/replication/dynamo/vclock.js';
import { HashRing, preferenceList } from '../../src/replication/dynamo/ring.js';
import {
  applyCrdtOp,
  crdtValue,
  encodeCrdt,
  mergeCrdt,
  parseCrdt,
  type CrdtKind,
  type CrdtOp,
  type CrdtState,
} from '../../src/replication/dynamo/crdt.js';
import { PhiAccrualDetector } from '../../src/replication/dynamo/phi.js';
import { differingBuckets, merkleLeaves, merkleRoot } from '../../src/replication/dynamo/merkle.js';

const ids = ['n1', 'n2', 'n3', 'n4'];
const clockArb: fc.Arbitrary<VClock> = fc.dictionary(fc.constantFrom(...ids), fc.nat({ max: 4 }), { maxKeys: 4 });

t.test('vector clocks', async (t) => {
  t.test('compare is antisymmetric: a before b exactly when b after a', async (t) => {
    fc.assert(
      fc.property(clockArb, clockArb, (a, b) => {
        const ab = compareClocks(a, b);
        const ba = compareClocks(b, a);
        const mirror = { before: 'after', after: 'before', equal: 'equal', concurrent: 'concurrent' } as const;
        return ba === mirror[ab];
      }),
    );
    t.pass('antisymmetry held for every generated pair');
  });

  t.test('descends is transitive', async (t) => {
    fc.assert(
      fc.property(clockArb, clockArb, clockArb, (a, b, c) => {
        // Build a chain so the premise holds often: b' = a ∨ b, c' = b' ∨ c.
        const b2 = mergeClocks(a, b);
        const c2 = mergeClocks(b2, c);
        return descends(b2, a) && descends(c2, b2) && descends(c2, a);
      }),
    );
    fc.assert(
      fc.property(clockArb, clockArb, clockArb, (a, b, c) => {
        if (descends(b, a) && descends(c, b)) return descends(c, a);
        return true;
      }),
    );
    t.pass('transitivity held');
  });

  t.test('merge is the least upper bound: above both inputs, commutative, idempotent', async (t) => {
    fc.assert(
      fc.property(clockArb, clockArb, (a, b) => {
        const m = mergeClocks(a, b);
        const minimal = Object.keys(m).every((id) => m[id] === Math.max(a[id] ?? 0, b[id] ?? 0));
        return (
          descends(m, a) &&
          descends(m, b) &&
          minimal &&
          clockKey(m) === clockKey(mergeClocks(b, a)) &&
          clockKey(mergeClocks(m, m)) === clockKey(m)
        );
      }),
    );
    t.pass('merge laws held');
  });

  t.test('an increment happens after the clock it increments', async (t) => {
    fc.assert(
      fc.property(clockArb, fc.constantFrom(...ids), (a, id) => compareClocks(incrementClock(a, id), a) === 'after'),
    );
    t.pass('increment is strictly after');
  });

  t.test('an increment is the merge with the own entry plus one, canonical, for any clock', async (t) => {
    // Canonical clocks take the one-pass path; unsorted ones, zero entries and new ids the general one.
    const anyClock = fc.dictionary(fc.constantFrom(...ids, 'n0', 'n10', 'n9', 'zz'), fc.nat({ max: 5 }));
    fc.assert(
      fc.property(fc.oneof(clockArb, anyClock), fc.constantFrom(...ids, 'n0', 'n10', 'zz'), (a, id) => {
        const got = incrementClock(a, id);
        const want = mergeClocks(a, { [id]: (a[id] ?? 0) + 1 });
        return JSON.stringify(got) === JSON.stringify(want) && JSON.stringify(a) === JSON.stringify({ ...a });
      }),
      { numRuns: 2000 },
    );
    t.same(incrementClock({ n2: 3, n1: 1 }, 'n3'), { n1: 1, n2: 3, n3: 1 });
    t.same(
      Object.keys(incrementClock({ n1: 1, n3: 2 }, 'n2')),
      ['n1', 'n2', 'n3'],
      'a new id goes in its sorted place',
    );
    t.same(incrementClock({}, 'n1'), { n1: 1 });
  });

  const cases: Array<{ name: string; a: VClock; b: VClock; want: string }> = [
    { name: 'equal clocks are equal', a: { n1: 1 }, b: { n1: 1, n2: 0 }, want: 'equal' },
    { name: 'a smaller entry is before', a: { n1: 1 }, b: { n1: 2 }, want: 'before' },
    { name: 'crossed entries are concurrent', a: { n1: 2, n2: 1 }, b: { n1: 1, n2: 2 }, want: 'concurrent' },
    { name: 'an empty clock is before any event', a: {}, b: { n3: 1 }, want: 'before' },
  ];
  for (const c of cases) {
    t.test(c.name, async (t) => t.equal(compareClocks(c.a, c.b), c.want));
  }
});

// ---------------------------------------------------------------- CRDTs

const elems = ['a', 'b', 'c'];
function opArb(kind: CrdtKind): fc.Arbitrary<CrdtOp> {
  switch (kind) {
    case 'g_counter':
      return fc.nat({ max: 5 }).map((by) => ({ crdt: 'g_counter', op: 'inc', by }) as CrdtOp);
    case 'pn_counter':
      return fc
        .tuple(fc.constantFrom('inc' as const, 'dec' as const), fc.nat({ max: 5 }))
        .map(([op, by]) => ({ crdt: 'pn_counter', op, by }) as CrdtOp);
    case 'or_set':
      return fc
        .tuple(fc.constantFrom('add' as const, 'remove' as const), fc.constantFrom(...elems))
        .map(([op, elem]) => ({ crdt: 'or_set', op, elem }) as CrdtOp);
    case 'lww_map':
      return fc.oneof(
        fc
          .tuple(fc.constantFrom(...elems), fc.constantFrom('x', 'y', 'z'))
          .map(([field, value]) => ({ crdt: 'lww_map', op: 'set', field, value }) as CrdtOp),
        fc.constantFrom(...elems).map((field) => ({ crdt: 'lww_map', op: 'delete', field }) as CrdtOp),
      );
  }
}

/** A replica's state: a random sequence of ops applied at random replicas with fresh timestamps. */
function stateArb(kind: CrdtKind): fc.Arbitrary<CrdtState> {
  return fc
    .array(fc.tuple(opArb(kind), fc.constantFrom(...ids), fc.integer({ min: 1, max: 50 })), { maxLength: 8 })
    .map((steps) => {
      let s: CrdtState | null = null;
      for (const [op, replica, ts] of steps) s = applyCrdtOp(s, op, replica, ts * 1000 + ids.indexOf(replica));
      return s ?? applyCrdtOp(null, opArb0(kind), 'n1', 1);
    });
}
function opArb0(kind: CrdtKind): CrdtOp {
  switch (kind) {
    case 'g_counter':
      return { crdt: kind, op: 'inc', by: 0 };
    case 'pn_counter':
      return { crdt: kind, op: 'inc', by: 0 };
    case 'or_set':
      return { crdt: kind, op: 'remove', elem: 'a' };
    case 'lww_map':
      return { crdt: kind, op: 'delete', field: 'zz' };
  }
}

function join(a: CrdtState, b: CrdtState): CrdtState {
  const m = mergeCrdt(a, b);
  if (!m) throw new Error('kinds differ');
  return m;
}

t.test('CRDT merges are commutative, associative and idempotent for every kind', async (t) => {
  for (const kind of ['g_counter', 'pn_counter', 'or_set', 'lww_map'] as const) {
    fc.assert(
      fc.property(stateArb(kind), stateArb(kind), stateArb(kind), (a, b, c) => {
        const e = encodeCrdt;
        return (
          e(join(a, b)) === e(join(b, a)) &&
          e(join(join(a, b), c)) === e(join(a, join(b, c))) &&
          e(join(a, a)) === e(a) &&
          e(join(a, join(a, b))) === e(join(a, b))
        );
      }),
      { numRuns: 150 },
    );
    t.pass(`${kind}: merge laws held`);
  }
});

t.test('CRDT values behave as their kinds promise', async (t) => {
  const g1 = applyCrdtOp(null, { crdt: 'g_counter', op: 'inc', by: 2 }, 'n1', 1000);
  const g2 = applyCrdtOp(null, { crdt: 'g_counter', op: 'inc', by: 3 }, 'n2', 1000);
  t.equal(crdtValue(join(g1, g2)), 5, 'concurrent increments on two replicas both count');

  const p1 = applyCrdtOp(null, { crdt: 'pn_counter', op: 'inc', by: 5 }, 'n1', 1000);
  const p2 = applyCrdtOp(p1, { crdt: 'pn_counter', op: 'dec', by: 2 }, 'n2', 2000);
  t.equal(crdtValue(join(p1, p2)), 3, 'a PN-Counter nets increments against decrements');

  const s0 = applyCrdtOp(null, { crdt: 'or_set', op: 'add', elem: 'x' }, 'n1', 1000);
  const removed = applyCrdtOp(s0, { crdt: 'or_set', op: 'remove', elem: 'x' }, 'n2', 2000);
  const readded = applyCrdtOp(s0, { crdt: 'or_set', op: 'add', elem: 'x' }, 'n3', 2000);
  t.same(crdtValue(join(removed, readded)), ['x'], 'an add concurrent with a remove wins in an OR-Set');
  t.same(crdtValue(join(removed, s0)), [], 'a remove of every observed tag removes the element');

  const m1 = applyCrdtOp(null, { crdt: 'lww_map', op: 'set', field: 'f', value: 'old' }, 'n1', 1000);
  const m2 = applyCrdtOp(null, { crdt: 'lww_map', op: 'set', field: 'f', value: 'new' }, 'n2', 2000);
  const m3 = applyCrdtOp(null, { crdt: 'lww_map', op: 'set', field: 'g', value: 'kept' }, 'n3', 500);
  t.same(crdtValue(join(join(m1, m2), m3)), { f: 'new', g: 'kept' }, 'an LWW-Map keeps the latest write per field');
});

t.test('tagged values are decoded strictly and encoded canonically', async (t) => {
  const cases: Array<{ name: string; value: string; kind: 'state' | 'op' | null }> = [
    { name: 'a g_counter state decodes', value: '{"crdt":"g_counter","state":{"n1":3}}', kind: 'state' },
    { name: 'a pn_counter op decodes', value: '{"crdt":"pn_counter","op":"dec","by":2}', kind: 'op' },
    { name: 'an or_set op without an element is untagged', value: '{"crdt":"or_set","op":"add"}', kind: null },
    { name: 'an unknown kind is untagged', value: '{"crdt":"mv_register","state":{}}', kind: null },
    { name: 'a negative count is untagged', value: '{"crdt":"g_counter","state":{"n1":-1}}', kind: null },
    { name: 'plain text is untagged', value: 'hello', kind: null },
    { name: 'broken JSON is untagged', value: '{"crdt":', kind: null },
  ];
  for (const c of cases) t.equal(parseCrdt(c.value)?.kind ?? null, c.kind, c.name);
  const a = parseCrdt('{"state":{"n2":1,"n1":2},"crdt":"g_counter"}');
  const b = parseCrdt('{"crdt":"g_counter","state":{"n1":2,"n2":1},"value":999}');
  t.ok(
    a?.kind === 'state' && b?.kind === 'state' && encodeCrdt(a.state) === encodeCrdt(b.state),
    'key order and a stale value do not matter',
  );
  if (a?.kind === 'state') t.equal(encodeCrdt(a.state), '{"crdt":"g_counter","state":{"n1":2,"n2":1},"value":3}');
});

// ---------------------------------------------------------------- ring

t.test('the ring spreads keys within 25% of the mean share with 128 virtual nodes for 3..10 nodes', async (t) => {
  const keys = Array.from({ length: 20000 }, (_, i) => `key-${i}`);
  fc.assert(
    fc.property(fc.integer({ min: 3, max: 10 }), (count) => {
      // Node ids as the simulator assigns them (n1, n2, ...).
      const members = Array.from({ length: count }, (_, i) => `n${i + 1}`);
      const ring = new HashRing(members);
      const tally = new Map<string, number>();
      for (const k of keys) {
        const owner = ring.preferenceList(k, 1)[0] as string;
        tally.set(owner, (tally.get(owner) ?? 0) + 1);
      }
      const mean = keys.length / count;
      const shares = ring.ownershipShares();
      return members.every(
        (m) =>
          Math.abs((tally.get(m) ?? 0) - mean) <= 0.25 * mean &&
          Math.abs((shares.get(m) ?? 0) - 1 / count) <= 0.25 / count,
      );
    }),
    { numRuns: 16 },
  );
  t.pass('every node count from 3 to 10 was balanced');
});

t.test('preference lists are n distinct members, deterministic and independent of member order', async (t) => {
  const memberArb = fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9]{0,5}$/), { minLength: 1, maxLength: 12 });
  fc.assert(
    fc.property(memberArb, fc.string(), fc.integer({ min: 1, max: 12 }), (members, key, n) => {
      const p = preferenceList(key, n, members);
      const shuffled = [...members].reverse();
      const again = preferenceList(key, n, shuffled);
      return (
        p.length === Math.min(n, members.length) &&
        new Set(p).size === p.length &&
        p.every((m) => members.includes(m)) &&
        JSON.stringify(p) === JSON.stringify(again) &&
        JSON.stringify(p) === JSON.stringify(new HashRing(members).walk(key).slice(0, p.length))
      );
    }),
  );
  t.pass('distinct and deterministic');
});

t.test('adding a node only moves keys onto the new node', async (t) => {
  const before = Array.from({ length: 5 }, (_, i) => `n${i + 1}`);
  const after = [...before, 'n6'];
  let moved = 0;
  const reshuffled: string[] = [];
  for (let i = 0; i < 2000; i++) {
    const k = `k${i}`;
    const a = preferenceList(k, 3, before);
    const b = preferenceList(k, 3, after);
    // Consistent hashing: the new list is the old one with n6 inserted (and the last one pushed out).
    const withoutNew = b.filter((m) => m !== 'n6');
    if (!withoutNew.every((m, j) => a[j] === m)) reshuffled.push(k);
    if (b.includes('n6')) moved++;
  }
  t.same(reshuffled, [], 'every key kept its other replicas in order');
  t.ok(moved > 2000 * 0.3 && moved < 2000 * 0.7, `about N/nodes of the keys gain the new node (${moved}/2000)`);
});

// ---------------------------------------------------------------- phi accrual

t.test('phi accrual', async (t) => {
  t.test('a peer heartbeating every 100 ms is never suspected', async (t) => {
    const d = new PhiAccrualDetector(0);
    let maxPhi = 0;
    for (let now = 0; now <= 10_000; now += 10) {
      if (now % 100 === 0) d.heartbeat(now + (now % 300 === 0 ? 20 : 0));
      maxPhi = Math.max(maxPhi, d.phi(now));
    }
    t.ok(maxPhi < 1, `phi stayed low (max ${maxPhi.toFixed(3)})`);
  });

  t.test('a silent peer is suspected within two seconds and phi only grows while it is silent', async (t) => {
    const d = new PhiAccrualDetector(0);
    for (let now = 100; now <= 5000; now += 100) d.heartbeat(now);
    let prev = -1;
    let monotone = true;
    let suspectedAt = -1;
    for (let now = 5000; now <= 9000; now += 10) {
      const phi = d.phi(now);
      if (phi < prev) monotone = false;
      prev = phi;
      if (suspectedAt < 0 && d.suspected(now)) suspectedAt = now;
    }
    t.ok(monotone, 'phi is monotone in silence');
    t.ok(suspectedAt > 5000 && suspectedAt <= 7000, `suspected ${suspectedAt - 5000} ms after the last heartbeat`);
    t.ok(Number.isFinite(d.phi(1e9)), 'phi stays finite after a very long silence');
  });

  t.test('a peer never heard from is suspected, and a resumed peer is trusted at once', async (t) => {
    const d = new PhiAccrualDetector(0);
    t.ok(d.suspected(3000), 'silent from the start');
    d.heartbeat(60_000);
    t.notOk(d.suspected(60_050), 'one heartbeat after a long pause clears suspicion');
    for (let now = 60_100; now <= 61_000; now += 100) d.heartbeat(now);
    t.ok(d.suspected(63_500), 'the long pause did not enter the window and hide a later failure');
  });
});

// ---------------------------------------------------------------- merkle

t.test('merkle summaries find exactly the buckets that differ', async (t) => {
  const a = Array.from({ length: 300 }, (_, i) => [`k${i}`, `v${i}`] as const);
  const b = a.map(([k, v]) => (k === 'k42' ? ([k, 'other'] as const) : ([k, v] as const)));
  const la = merkleLeaves(a);
  const lb = merkleLeaves(b);
  t.not(merkleRoot(la), merkleRoot(lb), 'roots differ when one key differs');
  t.equal(differingBuckets(la, lb).length, 1, 'one bucket differs');
  t.equal(merkleRoot(merkleLeaves([...a].reverse())), merkleRoot(la), 'order of entries does not matter');
});
