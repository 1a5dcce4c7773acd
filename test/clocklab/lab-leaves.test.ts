// Unit tests for the leaves lab.ts delegates to: the process rules (process.ts), the causal
// delivery decisions (delivery.ts), the send pipeline (channels.ts) and the message cost. The
// Lab-level behaviour stays covered by lab.test.ts; these pin each rule on its own.
import t from 'tap';
import {
  Channels,
  dropReasonOf,
  reorderInsertIndex,
  type DropReason,
  type Packet,
} from '../../src/clocklab/channels.js';
import { arrivalDecision, takeDeliverable } from '../../src/clocklab/delivery.js';
import { Lab, messageCostBytes } from '../../src/clocklab/lab.js';
import { holdBackDepthMax } from '../../src/clocklab/limits.js';
import { countSend, newProc, receiveClocks, tick, type AppMessage, type Proc } from '../../src/clocklab/process.js';
import { clockOf } from '../../src/clocklab/views.js';
import { SeededRng } from '../../src/util/rng.js';

function procs(n: number, clock: 'scalar' | 'vector' | 'matrix' = 'vector'): Proc[] {
  const out: Proc[] = [];
  for (let i = 0; i < n; i++)
    out.push(newProc({ id: `p${i}`, clockType: clock, existing: out, nowMs: 0, balance: 100 }));
  return out;
}

function message(from: Proc, to: Proc, over: Partial<AppMessage> = {}): AppMessage {
  return {
    kind: 'app',
    id: 'm1',
    from: from.slot,
    to: to.slot,
    payload: '',
    amount: 0,
    cast: 'unicast',
    broadcastId: undefined,
    lamport: from.lamport,
    vector: [...from.vector],
    matrix: undefined,
    stm: [],
    bss: undefined,
    seq: 1,
    sentAtMs: 0,
    arrivedAtMs: -1,
    cost: 0,
    ...over,
  };
}

t.test('newProc starts every clock at zero in the next slot', async (t) => {
  const [a, b, c] = procs(3, 'matrix') as [Proc, Proc, Proc];
  const cases = [
    { name: 'slots follow spawn order', got: [a.slot, b.slot, c.slot], want: [0, 1, 2] },
    { name: 'the vector has one entry per process spawned so far', got: c.vector, want: [0, 0, 0] },
    { name: 'a matrix process shares its own row with its vector', got: c.matrix?.[2] === c.vector, want: true },
    { name: 'the balance is the configured one', got: b.balance, want: 100 },
  ];
  for (const k of cases) t.same(k.got, k.want, k.name);
  // BSS: a broadcast made before c joined is settled at c, but not in c's causal past.
  const [x] = procs(1);
  x!.bcast[0] = 2;
  const late = newProc({ id: 'late', clockType: 'vector', existing: [x!], nowMs: 7, balance: 0 });
  t.same(late.bcastSettled, [2, 0], 'broadcasts before joining are settled');
  t.same(late.bcast, [0, 0], 'and not in the causal past');
  t.equal(late.spawnedAtMs, 7, 'spawn time is recorded');
});

t.test('tick, countSend and receiveClocks are the clock rules', async (t) => {
  const [a, b] = procs(2) as [Proc, Proc];
  tick(a);
  t.same(
    [a.lamport, a.vector],
    [1, [1]],
    'a local event ticks Lamport and the own vector entry (slot 0 was spawned alone)',
  );
  const cases = [
    { name: 'the first send on a channel is seq 1', got: countSend(a, b), want: 1 },
    { name: 'the second is seq 2', got: countSend(a, b), want: 2 },
    { name: 'SENT[a][b] counts both', got: a.sent[0]?.[1], want: 2 },
    { name: 'the send count follows', got: a.sentCount, want: 2 },
  ];
  for (const k of cases) t.equal(k.got, k.want, k.name);
  b.lamport = 5;
  receiveClocks(b, message(a, b, { lamport: 9, vector: [3, 0], amount: 4 }));
  t.same(
    { lamport: b.lamport, vector: b.vector, balance: b.balance, delivered: b.deliveredCount },
    { lamport: 10, vector: [3, 1], balance: 104, delivered: 1 },
    'a receive is IR2, merge then tick, and credits the amount',
  );
});

t.test('arrivalDecision delivers, holds or drops', async (t) => {
  const [a, b, c] = procs(3) as [Proc, Proc, Proc];
  // c has been told a sent it one message before this one: RST blocks until it arrives.
  const blocked = message(b, c, {
    stm: [
      [0, 0, 1],
      [0, 0, 1],
    ],
  });
  const free = message(a, c, { stm: [[0, 0, 1]] });
  const cases = [
    {
      name: 'immediate mode delivers everything, without draining',
      m: blocked,
      mode: 'immediate' as const,
      want: 'deliver',
    },
    { name: 'a message with no missing predecessor is delivered', m: free, mode: 'causal' as const, want: 'deliver' },
    { name: 'a message with a missing predecessor is held', m: blocked, mode: 'causal' as const, want: 'hold' },
  ];
  for (const k of cases) t.equal(arrivalDecision(c, k.m, k.mode).action, k.want, k.name);
  const d = arrivalDecision(c, blocked, 'causal');
  t.same(
    d.action === 'hold' ? d.blocker : undefined,
    { rule: 'rst', from: 0, need: 1, have: 0 },
    'the hold names what it waits for',
  );
  for (let i = 0; i < holdBackDepthMax; i++) c.holdBack.push(blocked);
  t.same(
    arrivalDecision(c, blocked, 'causal'),
    { action: 'drop', reason: 'holdback_full' },
    `a blocked message past ${holdBackDepthMax} held is dropped`,
  );
  t.equal(arrivalDecision(c, free, 'causal').action, 'deliver', 'a full queue does not stop a deliverable message');
});

t.test('takeDeliverable takes the first unblocked held message, in arrival order', async (t) => {
  const [a, b, c] = procs(3) as [Proc, Proc, Proc];
  const waiting = message(b, c, {
    id: 'waiting',
    stm: [
      [0, 0, 1],
      [0, 0, 1],
    ],
  });
  const ready1 = message(a, c, { id: 'ready1', stm: [[0, 0, 1]] });
  c.holdBack = [waiting, ready1];
  t.equal(takeDeliverable(c)?.id, 'ready1', 'a blocked head does not block a later deliverable one');
  t.same(
    c.holdBack.map((m) => m.id),
    ['waiting'],
    'the taken message leaves the queue',
  );
  t.equal(takeDeliverable(c), undefined, 'nothing deliverable: undefined');
});

t.test('the fabric refusals map to the lab drop reasons', async (t) => {
  const cases = [
    { outcome: 'dropped_partition' as const, want: 'partition' },
    { outcome: 'dropped_full' as const, want: 'queue_full' },
    { outcome: 'dropped_rate' as const, want: 'drop_rate' },
    { outcome: 'dropped_unknown_node' as const, want: 'unknown_node' },
  ];
  for (const k of cases) t.equal(dropReasonOf(k.outcome), k.want, `${k.outcome} is ${k.want}`);
});

t.test('reorderInsertIndex keeps the stage sorted by release time, then arrival', async (t) => {
  const stage = [
    { releaseAtMs: 10, order: 1 },
    { releaseAtMs: 10, order: 3 },
    { releaseAtMs: 20, order: 2 },
  ];
  const cases = [
    { name: 'earlier than all goes first', r: { releaseAtMs: 5, order: 9 }, want: 0 },
    { name: 'a tie on time goes after the earlier arrivals', r: { releaseAtMs: 10, order: 4 }, want: 2 },
    { name: 'a tie on time before a later arrival goes ahead of it', r: { releaseAtMs: 10, order: 2 }, want: 1 },
    { name: 'later than all goes last', r: { releaseAtMs: 30, order: 0 }, want: 3 },
  ];
  for (const k of cases) t.equal(reorderInsertIndex(stage, k.r), k.want, k.name);
});

t.test('channels name the packet lost in flight and count what they hold', async (t) => {
  const ps = procs(2);
  const ids = ps.map((p) => p.id);
  const dropped: Array<[string, DropReason]> = [];
  const arrived: string[] = [];
  const name = (p: Packet): string => (p.kind === 'app' ? p.id : `marker:${p.snapshotId}`);
  const ch = new Channels({
    rng: new SeededRng(1),
    ids,
    dropped: (p, reason) => (dropped.push([name(p), reason]), reason),
    arrived: (p) => void arrived.push(name(p)),
  });
  for (const id of ids) ch.addProcess(id, ids.slice(0, ids.indexOf(id) + 1), 10);
  const [a, b] = ps as [Proc, Proc];
  t.equal(ch.transmit(message(a, b, { id: 'm1', amount: 3 }), 0), 'in_flight', 'a message enters the fabric');
  t.equal(ch.transmit(message(a, b, { id: 'm2', amount: 4 }), 0), 'in_flight', 'a second one follows');
  ch.submit({ kind: 'marker', snapshotId: 's1', from: 0, to: 1 }, 0);
  t.same(
    [ch.inFlightCount(), ch.inFlightAmount(), ch.views(ps)[0]?.in_flight],
    [3, 7, 3],
    'three packets, 7 units, all on a→b',
  );
  ch.partition(['p0'], ['p1']);
  ch.deliverDue(10);
  t.same(
    dropped,
    [
      ['m1', 'partition'],
      ['m2', 'partition'],
      ['marker:s1', 'partition'],
    ],
    'each lost packet is named, in link order',
  );
  t.same(arrived, [], 'nothing arrived');
  t.same(
    [ch.inFlightCount(), ch.inFlightAmount(), ch.views(ps).length],
    [0, 0, 0],
    'nothing is counted in flight any more',
  );
  t.equal(ch.transmit(message(a, b, { id: 'm3' }), 10), 'partition', 'a send into the partition is refused at submit');
  t.same(dropped.at(-1), ['m3', 'partition'], 'and reported once');
});

t.test(
  'a marker forwarded while delivering into a new partition is dropped once, not mistaken for an in-flight loss',
  async (t) => {
    // Before the fabric's drop callback carried the payload, this run failed an invariant inside advanceTo.
    const events: string[] = [];
    const lab = new Lab({ rng: new SeededRng(1), emit: (type) => events.push(type) });
    for (const id of ['a', 'b', 'c']) lab.spawn(id, 'vector');
    const s = lab.startSnapshot('a');
    t.ok(s.ok, 'the snapshot starts');
    lab.partition(['c'], ['a', 'b']);
    t.equal(lab.runUntilQuiet(10_000), true, 'the network drains without an assertion failure');
    const view = s.ok ? lab.snapshot(s.value.id) : undefined;
    t.equal(
      view?.ok ? view.value.status : undefined,
      'incomplete',
      'the snapshot is incomplete: markers to c were lost',
    );
    t.equal(
      events.filter((e) => e === 'message_dropped').length,
      2,
      'a→c in flight and b→c at submit, each reported once',
    );
    t.equal(lab.state().in_flight, 0, 'nothing is left counted in flight');
  },
);

t.test('messageCostBytes counts the payload, the vector and the matrices', async (t) => {
  const [a, b] = procs(2) as [Proc, Proc];
  const [m0] = procs(1, 'matrix') as [Proc];
  countSend(a, b);
  const cases = [
    {
      name: 'a fresh process, empty payload, two processes',
      p: b,
      payload: '',
      copies: 1,
      n: 2,
      want: 256 + 8 * (2 + 2),
    },
    {
      name: 'two characters of payload add 4 bytes',
      p: b,
      payload: 'hi',
      copies: 1,
      n: 2,
      want: 256 + 4 + 8 * (2 + 2),
    },
    { name: 'the SENT row counts its cells', p: a, payload: '', copies: 1, n: 2, want: 256 + 8 * (2 + 4) },
    { name: 'copies share the SENT matrix', p: a, payload: '', copies: 2, n: 2, want: 256 + 8 * (2 + 2) },
    { name: 'a matrix clock adds its cells', p: m0, payload: '', copies: 1, n: 1, want: 256 + 8 * (1 + 1 + 1) },
  ];
  for (const k of cases) t.equal(messageCostBytes(k.p, k.payload, k.copies, k.n), k.want, k.name);
});

t.test('clockOf shows the clock of the process type', async (t) => {
  const ids = ['p0', 'p1'];
  const scalar = newProc({ id: 'p0', clockType: 'scalar', existing: [], nowMs: 0, balance: 0 });
  tick(scalar);
  const [, v] = procs(2) as [Proc, Proc];
  tick(v);
  t.equal(clockOf(scalar, ids), 1, 'scalar: the Lamport number');
  t.same(clockOf(v, ids), { p0: 0, p1: 1 }, 'vector: one entry per process, by id');
});
