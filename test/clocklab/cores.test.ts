import t from 'tap';
import {
  compareVectors,
  compareVersionVectors,
  lamportReceive,
  lamportTick,
  matrixKnownByAll,
  matrixMergeInto,
  vectorMergeInto,
  vectorTick,
  type Matrix,
  type Vector,
} from '../../src/clocklab/clocks.js';
import { bssBlocker, rstBlocker, rstOnDeliver, settle } from '../../src/clocklab/causal.js';
import { KvStore, resolve, type StoredVersion } from '../../src/clocklab/kv.js';
import { GlobalSnapshot, type RecordedProcess } from '../../src/clocklab/snapshot.js';

t.test('Lamport clocks follow IR1 and IR2', async (t) => {
  const cases = [
    { name: 'a local event adds one', got: lamportTick(4), want: 5 },
    { name: 'a receive of a larger stamp jumps past it', got: lamportReceive(2, 9), want: 10 },
    { name: 'a receive of a smaller stamp still advances', got: lamportReceive(7, 3), want: 8 },
    { name: 'a receive of an equal stamp advances by one', got: lamportReceive(5, 5), want: 6 },
  ];
  for (const c of cases) t.equal(c.got, c.want, c.name);
});

t.test('vector comparison tells before, after, equal and concurrent', async (t) => {
  const cases: Array<{ name: string; a: Vector; b: Vector; want: string }> = [
    { name: 'a strictly smaller vector is before', a: [1, 0, 0], b: [1, 1, 0], want: 'before' },
    { name: 'a strictly larger vector is after', a: [2, 1], b: [1, 1], want: 'after' },
    { name: 'identical vectors are equal', a: [3, 2], b: [3, 2], want: 'equal' },
    { name: 'crossing vectors are concurrent', a: [2, 0], b: [0, 1], want: 'concurrent' },
    { name: 'missing entries read as zero', a: [1], b: [1, 0, 0], want: 'equal' },
    { name: 'a longer vector with a positive tail is after', a: [1, 0, 1], b: [1], want: 'after' },
  ];
  for (const c of cases) t.equal(compareVectors(c.a, c.b), c.want, c.name);
});

t.test('version vectors keyed by process follow the spec rules', async (t) => {
  const cases = [
    {
      name: 'V dominates W when every entry is >= and one is >',
      a: { p1: 2, p2: 1 },
      b: { p1: 1, p2: 1 },
      want: 'after',
    },
    { name: 'equal vectors are equal', a: { p1: 1 }, b: { p1: 1, p2: 0 }, want: 'equal' },
    { name: 'neither dominating is concurrent', a: { p1: 1 }, b: { p2: 1 }, want: 'concurrent' },
    { name: 'a vector missing a positive entry is dominated', a: { p1: 1 }, b: { p1: 1, p2: 1 }, want: 'before' },
  ];
  for (const c of cases) t.equal(compareVersionVectors(c.a, c.b), c.want, c.name);
});

t.test('vector merge takes the element-wise max and the receiver then ticks', async (t) => {
  const v: Vector = [1, 4, 0];
  vectorMergeInto(v, [3, 2, 0, 5]);
  vectorTick(v, 1);
  t.same(v, [3, 5, 0, 5]);
});

t.test('matrix clocks learn what others know and allow garbage collection only when all know', async (t) => {
  // p0 does an event; p0 -> p1; p1 -> p2; p2 -> p0.
  const m0: Matrix = [[0, 0, 0]];
  const m1: Matrix = [[], [0, 0, 0]];
  const m2: Matrix = [[], [], [0, 0, 0]];
  vectorTick(m0[0] as Vector, 0); // event e at p0: mt0[0][0] = 1
  vectorTick(m0[0] as Vector, 0); // send to p1
  const s1 = m0.map((r) => [...r]);
  matrixMergeInto(m1, 1, 0, s1);
  vectorTick(m1[1] as Vector, 1);
  t.equal(matrixKnownByAll(m0, 0, [0, 1, 2]), 0, 'before any reply p0 cannot discard its event');
  vectorTick(m1[1] as Vector, 1); // send to p2
  matrixMergeInto(
    m2,
    2,
    1,
    m1.map((r) => [...(r ?? [])]),
  );
  vectorTick(m2[2] as Vector, 2);
  vectorTick(m2[2] as Vector, 2); // send to p0
  matrixMergeInto(
    m0,
    0,
    2,
    m2.map((r) => [...(r ?? [])]),
  );
  vectorTick(m0[0] as Vector, 0);
  t.ok(matrixKnownByAll(m0, 0, [0, 1, 2]) >= 1, 'after the cycle p0 knows every process has seen its first event');
  t.equal(m0[1]?.[0], 2, 'p0 knows p1 saw both of its first events');
});

t.test('the RST condition holds back exactly the messages with undelivered causal predecessors', async (t) => {
  // ST_m is the sender's SENT matrix after the send: it counts m itself (sender is process 0 here).
  const cases: Array<{ name: string; deliv: Vector; stm: Matrix; self: number; blocked: boolean }> = [
    {
      name: 'no predecessors sent to me: deliverable',
      deliv: [],
      stm: [
        [0, 0, 1],
        [0, 0, 0],
      ],
      self: 2,
      blocked: false,
    },
    {
      name: 'FIFO: an earlier message from the sender is missing',
      deliv: [0],
      stm: [[0, 0, 2]],
      self: 2,
      blocked: true,
    },
    {
      name: 'a third process sent me a predecessor I have not delivered',
      deliv: [0, 0],
      stm: [
        [0, 0, 1],
        [0, 0, 1],
      ],
      self: 2,
      blocked: true,
    },
    {
      name: 'every predecessor delivered: deliverable',
      deliv: [1, 1],
      stm: [
        [0, 0, 2],
        [0, 0, 1],
      ],
      self: 2,
      blocked: false,
    },
  ];
  for (const c of cases) t.equal(rstBlocker(c.deliv, c.stm, c.self, 0) !== undefined, c.blocked, c.name);
  const deliv: Vector = [2];
  const sent: Matrix = [];
  rstOnDeliver(deliv, [], sent, [[0, 0, 3]], 2, 0, 3);
  t.same([deliv[0], sent[0]?.[2]], [3, 3], 'delivery settles the message and learns the sender’s counts');
});

t.test('settled counters advance over a contiguous prefix of delivered or lost messages', async (t) => {
  const count: Vector = [];
  const ahead: Array<Set<number> | undefined> = [];
  const steps: Array<{ name: string; n: number; want: number }> = [
    { name: 'message 2 settled first leaves the prefix at 0', n: 2, want: 0 },
    { name: 'message 4 settled leaves it at 0 too', n: 4, want: 0 },
    { name: 'message 1 closes the gap up to 2', n: 1, want: 2 },
    { name: 'a repeat of message 1 changes nothing', n: 1, want: 2 },
    { name: 'message 3 absorbs the waiting 4', n: 3, want: 4 },
  ];
  for (const s of steps) {
    settle(count, ahead, 0, s.n);
    t.equal(count[0] ?? 0, s.want, s.name);
  }
});

t.test('the BSS condition waits for the sender’s earlier broadcasts and those it had delivered', async (t) => {
  const cases: Array<{ name: string; vc: Vector; ts: Vector; sender: number; blocked: boolean }> = [
    {
      name: 'the next broadcast of the sender with nothing else needed',
      vc: [0, 0],
      ts: [1, 0],
      sender: 0,
      blocked: false,
    },
    { name: 'a gap in the sender’s broadcasts', vc: [0, 0], ts: [2, 0], sender: 0, blocked: true },
    { name: 'the sender had delivered a broadcast I have not', vc: [0, 0, 0], ts: [1, 1, 0], sender: 1, blocked: true },
    {
      name: 'everything the sender had delivered is delivered here',
      vc: [1, 0, 0],
      ts: [1, 1, 0],
      sender: 1,
      blocked: false,
    },
  ];
  for (const c of cases) t.equal(bssBlocker(c.vc, c.ts, c.sender) !== undefined, c.blocked, c.name);
});

function version(value: string, writer: string, vector: Record<string, number>, lamport: number): StoredVersion {
  return { value, writer, vector, lamport, dot: { replica: writer, counter: vector[writer] ?? 0 } };
}

t.test('the KV store follows the spec state table', async (t) => {
  const kv = new KvStore('keep_all');
  const a = kv.write('x', version('a', 'p1', { p1: 1 }, 1));
  t.equal(a.outcome, 'created', 'a first write creates one version');
  const b = kv.write('x', version('b', 'p2', { p1: 1, p2: 1 }, 3));
  t.equal(b.outcome, 'replaced', 'a dominating write replaces');
  const stale = kv.write('x', version('old', 'p1', { p1: 1 }, 1));
  t.equal(stale.outcome, 'stale', 'a dominated write is stale and dropped');
  t.same(
    kv.read('x')?.map((v) => v.value),
    ['b'],
    'the stale write left the key unchanged',
  );
  const c = kv.write('x', version('c', 'p3', { p3: 1 }, 1));
  t.equal(c.outcome, 'conflict', 'a concurrent write is a conflict');
  t.same(
    kv.read('x')?.map((v) => v.value),
    ['b', 'c'],
    'keep_all keeps both siblings',
  );
  const d = kv.write('x', version('d', 'p1', { p1: 2, p2: 1, p3: 1 }, 5));
  t.equal(d.outcome, 'replaced', 'a write that saw both siblings replaces them both');
  t.same(kv.read('x')?.length, 1);
});

t.test('conflict strategies resolve siblings as the spec says', async (t) => {
  const s1 = version('left', 'p1', { p1: 1 }, 4);
  const s2 = version('right', 'p2', { p2: 1 }, 4);
  const s3 = version('late', 'p3', { p3: 2 }, 7);
  const cases = [
    { name: 'lww keeps the higher scalar timestamp', strategy: 'lww' as const, siblings: [s1, s3], want: 'late' },
    {
      name: 'lww breaks a tie toward the greater writer id',
      strategy: 'lww' as const,
      siblings: [s1, s2],
      want: 'right',
    },
    {
      name: 'first_writer keeps the lower scalar timestamp',
      strategy: 'first_writer' as const,
      siblings: [s3, s1],
      want: 'left',
    },
    {
      name: 'first_writer breaks a tie toward the greater writer id',
      strategy: 'first_writer' as const,
      siblings: [s1, s2],
      want: 'right',
    },
    { name: 'merge joins strings with a bar', strategy: 'merge' as const, siblings: [s1, s2], want: 'left|right' },
    {
      name: 'merge sums numeric counters',
      strategy: 'merge' as const,
      siblings: [version('3', 'p1', { p1: 1 }, 1), version('4', 'p2', { p2: 1 }, 1)],
      want: '7',
    },
  ];
  for (const c of cases) {
    const r = resolve(c.strategy, c.siblings, c.siblings[c.siblings.length - 1] as StoredVersion);
    t.equal(r.value, c.want, c.name);
    t.equal(
      compareVersionVectors(r.vector, c.siblings[0]!.vector),
      'after',
      `${c.name}: the result dominates every sibling`,
    );
  }
  const kv = new KvStore('lww');
  kv.write('k', s1);
  const res = kv.write('k', s3);
  t.equal(res.outcome, 'conflict');
  t.same(
    kv.read('k')?.map((v) => v.value),
    ['late'],
    'a strategy other than keep_all leaves a single resolved value',
  );
});

function rec(id: string): RecordedProcess {
  return { id, clock_type: 'vector', lamport: 0, vector: {}, balance: 10, held: [], delivered: 0, recorded_at_ms: 0 };
}

t.test('a global snapshot completes when every channel saw its marker and verifies its cut', async (t) => {
  const s = new GlobalSnapshot('s1', 'a', 0, ['a', 'b']);
  s.record(
    rec('a'),
    () => 2,
    () => 0,
    undefined,
    0,
  );
  t.equal(s.status, 'running');
  s.onArrival({ id: 'm9', from: 'b', to: 'a', payload: '', amount: 5, seq: 1 });
  t.equal(s.onMarker('a', 'b', 1), 'record', 'the first marker at b asks b to record');
  s.record(
    rec('b'),
    () => 1,
    () => 2,
    'a',
    1,
  );
  t.equal(s.onMarker('b', 'a', 2), 'closed', 'the marker back closes a’s incoming channel');
  t.equal(s.status, 'complete');
  const v = s.verify();
  t.same(
    [v.consistent, v.in_transit],
    [true, 1],
    'the message b sent before its cut and a received after its own is in transit',
  );
  t.equal(s.totalBalance(), 25, 'the recorded balances plus the in-transit amount');

  const orphan = new GlobalSnapshot('s2', 'a', 0, ['a', 'b']);
  orphan.record(
    rec('a'),
    () => 1,
    () => 0,
    undefined,
    0,
  );
  orphan.record(
    rec('b'),
    () => 0,
    () => 3,
    'a',
    1,
  );
  orphan.onMarker('b', 'a', 2);
  const ov = orphan.verify();
  t.equal(ov.consistent, false, 'a receive beyond the sender’s cut is inconsistent');
  t.match(ov.reasons.join(' '), /receive whose send is outside the cut/);

  const dead = new GlobalSnapshot('s3', 'a', 0, ['a', 'b']);
  dead.record(
    rec('a'),
    () => 0,
    () => 0,
    undefined,
    0,
  );
  dead.onKilled('b');
  const dv = dead.verify();
  t.same([dv.complete, dv.consistent, dead.status], [false, false, 'incomplete']);
  t.match(dv.reasons[0], /b was killed after the snapshot began/);
});
