import t from 'tap';
import fc from 'fast-check';
import { Lab, type LabConfig } from '../../src/clocklab/lab.js';
import { compareVersionVectors } from '../../src/clocklab/clocks.js';
import type { LabEventType } from '../../src/clocklab/events.js';
import { SeededRng } from '../../src/util/rng.js';

interface Rec {
  type: LabEventType;
  data: any;
}

function newLab(seed: number, config: Partial<LabConfig> = {}): { lab: Lab; events: Rec[] } {
  const events: Rec[] = [];
  const lab = new Lab({
    rng: new SeededRng(seed),
    emit: (type, data) => events.push({ type, data }),
    config: { defaultDelayMs: 5, ...config },
  });
  return { lab, events };
}

/** Ground truth happened-before, rebuilt from the event stream independently of the clocks under test. */
class History {
  events: Array<{ process: string; cause: string; vector: Record<string, number>; lamport: number; preds: number[] }> =
    [];
  sendEvent = new Map<string, number>();
  private last = new Map<string, number>();
  private pending = new Map<string, string[]>();
  private lastDelivered: string | undefined;
  private anc: Array<Set<number>> = [];

  feed(e: Rec): void {
    if (e.type === 'message_sent') {
      const list = this.pending.get(e.data.from) ?? [];
      list.push(e.data.id);
      this.pending.set(e.data.from, list);
    } else if (e.type === 'message_delivered') {
      this.lastDelivered = e.data.id;
    } else if (e.type === 'clock_tick') {
      const p = e.data.process as string;
      const idx = this.events.length;
      const preds: number[] = [];
      const prev = this.last.get(p);
      if (prev !== undefined) preds.push(prev);
      if (e.data.cause === 'send') {
        for (const id of this.pending.get(p) ?? []) this.sendEvent.set(id, idx);
        this.pending.set(p, []);
      } else if (e.data.cause === 'receive') {
        const s = this.sendEvent.get(this.lastDelivered as string);
        if (s !== undefined) preds.push(s);
      }
      const vector = e.data.clock_type === 'vector' ? e.data.clock : e.data.vector;
      this.events.push({ process: p, cause: e.data.cause, vector, lamport: e.data.lamport, preds });
      const anc = new Set<number>();
      for (const q of preds) {
        anc.add(q);
        for (const x of this.anc[q] as Set<number>) anc.add(x);
      }
      this.anc.push(anc);
      this.last.set(p, idx);
    }
  }

  hb(a: number, b: number): boolean {
    return (this.anc[b] as Set<number>).has(a);
  }

  /** m1 causally precedes m2 when send(m1) happened before send(m2). */
  msgBefore(m1: string, m2: string): boolean {
    const a = this.sendEvent.get(m1);
    const b = this.sendEvent.get(m2);
    return a !== undefined && b !== undefined && this.hb(a, b);
  }
}

const ids = ['p1', 'p2', 'p3', 'p4'];
const clockType = fc.constantFrom('scalar' as const, 'vector' as const, 'matrix' as const);
const command = (n: number) =>
  fc.oneof(
    fc.record({ op: fc.constant('internal' as const), p: fc.nat(n - 1) }),
    fc.record({ op: fc.constant('send' as const), p: fc.nat(n - 1), q: fc.nat(n - 1) }),
    fc.record({ op: fc.constant('broadcast' as const), p: fc.nat(n - 1) }),
    fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 60 }) }),
    fc.record({
      op: fc.constant('delay' as const),
      p: fc.nat(n - 1),
      q: fc.nat(n - 1),
      ms: fc.integer({ min: 0, max: 80 }),
      reorder: fc.boolean(),
      drop: fc.constantFrom(0, 0, 0, 0.2),
    }),
  );
const execution = fc.integer({ min: 2, max: 4 }).chain((n) =>
  fc.record({
    n: fc.constant(n),
    seed: fc.nat(),
    types: fc.array(clockType, { minLength: n, maxLength: n }),
    cmds: fc.array(command(n), { minLength: 10, maxLength: 60 }),
  }),
);

function run(
  x: { n: number; seed: number; types: Array<'scalar' | 'vector' | 'matrix'>; cmds: Array<any> },
  withReorder: boolean,
) {
  const { lab, events } = newLab(x.seed);
  for (let i = 0; i < x.n; i++) lab.spawn(ids[i] as string, x.types[i] as 'vector');
  for (const c of x.cmds) {
    const p = ids[c.p] as string;
    switch (c.op) {
      case 'internal':
        lab.internalEvent(p);
        break;
      case 'send':
        if (c.p !== c.q) lab.send(p, ids[c.q] as string, `hello ${events.length}`);
        break;
      case 'broadcast':
        lab.broadcast(p, 'all');
        break;
      case 'advance':
        lab.advance(c.ms);
        break;
      case 'delay':
        if (c.p !== c.q)
          lab.setChannelFaults(p, ids[c.q] as string, {
            delay_ms: c.ms,
            reorder: withReorder && c.reorder,
            reorder_window_ms: 50,
            drop_rate: withReorder ? c.drop : 0,
          });
        break;
    }
  }
  const quiet = lab.runUntilQuiet(100_000);
  return { lab, events, quiet };
}

t.test('vector clocks characterize happened-before exactly and Lamport clocks are consistent with it', async (t) => {
  let pairs = 0;
  fc.assert(
    fc.property(execution, (x) => {
      const { events } = run(x, true);
      const h = new History();
      for (const e of events) h.feed(e);
      const n = h.events.length;
      for (let a = 0; a < n; a++) {
        for (let b = 0; b < n; b++) {
          if (a === b) continue;
          const ea = h.events[a]!;
          const eb = h.events[b]!;
          const hb = h.hb(a, b);
          const vcBefore = compareVersionVectors(ea.vector, eb.vector) === 'before';
          if (hb !== vcBefore)
            throw new Error(
              `event ${a} -> ${b} is ${hb} but VC says ${vcBefore} (${JSON.stringify(ea.vector)} vs ` +
                `${JSON.stringify(eb.vector)}), seed ${x.seed}`,
            );
          if (hb && !(ea.lamport < eb.lamport)) throw new Error(`Lamport clock condition broken for ${a} -> ${b}`);
          pairs++;
        }
      }
    }),
    { numRuns: 120 },
  );
  t.ok(pairs > 10_000, `checked ${pairs} ordered pairs of events`);
});

t.test(
  'causal delivery never delivers out of causal order, never holds a message whose ' +
    'predecessors were delivered or lost, and delivers everything not lost',
  async (t) => {
    let held = 0;
    let delivered = 0;
    fc.assert(
      fc.property(execution, (x) => {
        const { lab, events, quiet } = run(x, true);
        if (!quiet) throw new Error('the network did not go quiet');
        const h = new History();
        const deliveredAt = new Map<string, string[]>();
        const sentTo = new Map<string, string>();
        const lost = new Set<string>();
        for (const e of events) {
          h.feed(e);
          if (e.type === 'message_sent') sentTo.set(e.data.id, e.data.to);
          if (e.type === 'message_dropped') lost.add(e.data.id);
          if (e.type === 'message_held') {
            held++;
            const q = e.data.to as string;
            const done = new Set([...(deliveredAt.get(q) ?? []), ...lost]);
            const missing = [...sentTo].some(([id, to]) => to === q && !done.has(id) && h.msgBefore(id, e.data.id));
            if (!missing)
              throw new Error(
                `${e.data.id} was held at ${q} although every causal predecessor was delivered (seed ${x.seed})`,
              );
          }
          if (e.type === 'message_delivered') {
            delivered++;
            const list = deliveredAt.get(e.data.to) ?? [];
            for (const earlier of list) {
              if (h.msgBefore(e.data.id, earlier))
                throw new Error(
                  `${e.data.id} delivered at ${e.data.to} after its causal successor ${earlier} (seed ${x.seed})`,
                );
            }
            list.push(e.data.id);
            deliveredAt.set(e.data.to, list);
          }
        }
        const total = [...deliveredAt.values()].reduce((s, l) => s + l.length, 0);
        if (total + lost.size !== sentTo.size)
          throw new Error(`sent ${sentTo.size} but delivered ${total} and lost ${lost.size}`);
        if (lab.processes().some((p) => p.held.length > 0))
          throw new Error('a hold-back queue is not empty after the network went quiet');
        if (lab.state().undelivered_bytes !== 0)
          throw new Error(
            `undelivered messages still account ${lab.state().undelivered_bytes} bytes after the network went quiet`,
          );
      }),
      { numRuns: 150 },
    );
    t.ok(delivered > 1000, `checked ${delivered} deliveries`);
    t.ok(held > 20, `the random delays and reordering made ${held} messages wait`);
  },
);

t.test('every snapshot taken under random transfers and delays is consistent and conserves the money', async (t) => {
  let snapshots = 0;
  let inTransit = 0;
  fc.assert(
    fc.property(
      fc.integer({ min: 2, max: 5 }),
      fc.nat(),
      fc.array(
        fc.oneof(
          fc.record({
            op: fc.constant('transfer' as const),
            p: fc.nat(4),
            q: fc.nat(4),
            amount: fc.integer({ min: 0, max: 30 }),
          }),
          fc.record({ op: fc.constant('snapshot' as const), p: fc.nat(4) }),
          fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 40 }) }),
          fc.record({
            op: fc.constant('delay' as const),
            p: fc.nat(4),
            q: fc.nat(4),
            ms: fc.integer({ min: 0, max: 100 }),
          }),
        ),
        { maxLength: 60 },
      ),
      (n, seed, cmds) => {
        const { lab } = newLab(seed);
        for (let i = 0; i < n; i++) lab.spawn(`p${i}`, 'vector');
        const started: string[] = [];
        for (const c of cmds) {
          if (c.op === 'advance') lab.advance(c.ms);
          else if (c.op === 'snapshot') {
            const r = lab.startSnapshot(`p${c.p % n}`);
            if (r.ok) started.push(r.value.id);
          } else if (c.op === 'transfer') {
            if (c.p % n !== c.q % n) lab.send(`p${c.p % n}`, `p${c.q % n}`, 'transfer', c.amount);
          } else if (c.p % n !== c.q % n) lab.setChannelFaults(`p${c.p % n}`, `p${c.q % n}`, { delay_ms: c.ms });
        }
        lab.runUntilQuiet(100_000);
        if (lab.totalBalance() !== n * 100) throw new Error('money was created or lost outside snapshots');
        for (const id of started) {
          const v = lab.verifySnapshot(id);
          const s = lab.snapshot(id);
          if (!v.ok || !s.ok) throw new Error(`snapshot ${id} vanished`);
          if (!v.value.consistent)
            throw new Error(`snapshot ${id} inconsistent: ${v.value.reasons.join('; ')} (seed ${seed})`);
          if (s.value.total_balance !== n * 100)
            throw new Error(`snapshot ${id} records ${s.value.total_balance}, not ${n * 100} (seed ${seed})`);
          snapshots++;
          inTransit += v.value.in_transit;
        }
      },
    ),
    { numRuns: 150 },
  );
  t.ok(snapshots > 100, `verified ${snapshots} snapshots`);
  t.ok(inTransit > 10, `${inTransit} in-transit messages were recorded and counted in the totals`);
});

t.test('immediate delivery shows the causal violation the hold-back queue prevents', async (t) => {
  for (const mode of ['immediate', 'causal'] as const) {
    const { lab, events } = newLab(1, { deliveryMode: mode });
    for (const p of ['p1', 'p2', 'p3']) lab.spawn(p, 'vector');
    lab.setChannelFaults('p1', 'p3', { delay_ms: 200 });
    const m1 = lab.send('p1', 'p3', 'first');
    lab.send('p1', 'p2', 'second');
    lab.advance(10);
    const m3 = lab.send('p2', 'p3', 'caused by second');
    lab.runUntilQuiet(10_000);
    const order = events.filter((e) => e.type === 'message_delivered' && e.data.to === 'p3').map((e) => e.data.id);
    const ids1 = m1.ok ? m1.value.id : '';
    const ids3 = m3.ok ? m3.value.id : '';
    if (mode === 'immediate') {
      t.same(order, [ids3, ids1], 'immediate: the effect is delivered before its cause');
      t.equal(
        events.filter((e) => e.type === 'causal_violation').length,
        1,
        'immediate: one causal violation is reported',
      );
    } else {
      t.same(order, [ids1, ids3], 'causal: the effect waits for its cause');
      t.ok(
        events.some((e) => e.type === 'message_held' && e.data.id === ids3),
        'causal: the effect was held',
      );
      t.equal(events.filter((e) => e.type === 'causal_violation').length, 0, 'causal: no violation');
    }
  }
});

t.test('a broadcast is held back by the BSS rule until the broadcast it depends on arrives', async (t) => {
  const { lab, events } = newLab(2);
  for (const p of ['p1', 'p2', 'p3']) lab.spawn(p, 'vector');
  lab.setChannelFaults('p1', 'p3', { delay_ms: 300 });
  const b1 = lab.broadcast('p1', 'question');
  lab.advance(20);
  const b2 = lab.broadcast('p2', 'answer');
  lab.runUntilQuiet(10_000);
  t.ok(b1.ok && b2.ok);
  const atP3 = events.filter((e) => e.type === 'message_delivered' && e.data.to === 'p3').map((e) => e.data.payload);
  t.same(atP3, ['question', 'answer'], 'p3 delivers the question before the answer');
  const heldB2 = events.find((e) => e.type === 'message_held' && e.data.payload === 'answer');
  t.ok(heldB2, 'the answer was held at p3');
});

t.test('a process spawned late receives later broadcasts without waiting for earlier ones', async (t) => {
  const { lab, events } = newLab(3);
  lab.spawn('p1', 'vector');
  lab.spawn('p2', 'vector');
  lab.broadcast('p1', 'before p3');
  lab.runUntilQuiet(1000);
  lab.setChannelFaults('p1', 'p2', { delay_ms: 200 });
  lab.broadcast('p1', 'slow to p2');
  lab.spawn('p3', 'vector');
  lab.broadcast('p1', 'after p3');
  lab.broadcast('p3', 'from the newcomer');
  lab.runUntilQuiet(1000);
  t.same(
    events.filter((e) => e.type === 'message_delivered' && e.data.to === 'p3').map((e) => e.data.payload),
    ['after p3'],
  );
  const atP2 = events.filter((e) => e.type === 'message_delivered' && e.data.to === 'p2').map((e) => e.data.payload);
  t.same(
    atP2.slice(1),
    ['from the newcomer', 'slow to p2', 'after p3'],
    'p2 does not hold the newcomer’s broadcast for one it never saw',
  );
  t.equal(
    events.filter((e) => e.type === 'message_held').length,
    0,
    'nothing was held (the fabric keeps p1→p2 FIFO by itself)',
  );
});

t.test('a partition drops messages in flight by name and heals', async (t) => {
  const { lab, events } = newLab(4);
  for (const p of ['p1', 'p2', 'p3']) lab.spawn(p, 'vector');
  lab.setChannelFaults('p1', 'p2', { delay_ms: 50 });
  const inFlight = lab.send('p1', 'p2', 'on the wire');
  const other = lab.send('p1', 'p3', 'other side');
  const part = lab.partition(['p1'], ['p2']);
  t.ok(part.ok);
  const blocked = lab.send('p1', 'p2', 'blocked');
  t.same(blocked.ok && blocked.value.status, 'dropped', 'a send across the partition is dropped at once');
  lab.runUntilQuiet(1000);
  const dropped = events.filter((e) => e.type === 'message_dropped').map((e) => [e.data.id, e.data.reason]);
  t.same(
    dropped,
    [
      [blocked.ok && blocked.value.id, 'partition'],
      [inFlight.ok && inFlight.value.id, 'partition'],
    ],
    'both are named, the one in flight too',
  );
  t.ok(
    events.some((e) => e.type === 'message_delivered' && e.data.id === (other.ok && other.value.id)),
    'p1→p3 is untouched',
  );
  lab.clearFaults();
  lab.send('p1', 'p2', 'healed');
  lab.runUntilQuiet(1000);
  t.ok(
    events.some((e) => e.type === 'message_delivered' && e.data.payload === 'healed'),
    'after healing messages flow',
  );
});

t.test(
  'snapshots: a killed participant leaves one incomplete, reset discards it, a reordering channel breaks the cut',
  async (t) => {
    const { lab, events } = newLab(5);
    for (const p of ['p1', 'p2', 'p3']) lab.spawn(p, 'vector');
    lab.setChannelFaults('p1', 'p3', { delay_ms: 100 });
    const s = lab.startSnapshot('p1');
    t.ok(s.ok);
    const id = s.ok ? s.value.id : '';
    lab.kill('p3');
    lab.runUntilQuiet(1000);
    const v = lab.verifySnapshot(id);
    t.same(v.ok && [v.value.complete, v.value.consistent], [false, false]);
    t.match(v.ok && v.value.reasons[0], /p3 was killed/);
    t.ok(events.some((e) => e.type === 'snapshot_incomplete' && e.data.snapshot === id));
    const r = lab.reset(false);
    t.same(r.discarded_snapshots, [id], 'reset discards the orphaned snapshot');
    t.equal(lab.snapshot(id).ok, false);

    for (const p of ['p1', 'p2']) lab.spawn(p, 'vector');
    lab.setChannelFaults('p1', 'p2', { delay_ms: 1, reorder: true, reorder_window_ms: 100 });
    for (let i = 0; i < 20; i++) lab.send('p1', 'p2', `m${i}`, 1);
    const s2 = lab.startSnapshot('p1');
    lab.runUntilQuiet(1000);
    const v2 = s2.ok ? lab.verifySnapshot(s2.value.id) : undefined;
    t.same(
      v2?.ok && [v2.value.complete, v2.value.consistent],
      [true, false],
      'the snapshot completes but its cut is not consistent',
    );
    t.match(v2?.ok && v2.value.reasons.join(' '), /not FIFO/);

    const s3 = lab.startSnapshot('p2');
    const s4 = lab.startSnapshot('p1');
    lab.runUntilQuiet(1000);
    t.ok(
      s3.ok &&
        s4.ok &&
        lab.verifySnapshot(s3.value.id).ok &&
        lab.snapshotList().filter((x) => x.status === 'complete').length === 3,
      'several snapshots run at once and all complete',
    );
  },
);

t.test('the KV store: the writer’s clock decides, reads make clocks cover writes, strategies apply', async (t) => {
  const { lab, events } = newLab(6);
  for (const p of ['p1', 'p2', 'p3']) lab.spawn(p, 'vector');
  t.equal(lab.kvWrite('x', 'one', 'p1').ok, true);
  lab.kvRead('x', 'p2');
  const w2 = lab.kvWrite('x', 'two', 'p2');
  t.same(
    w2.ok && [w2.value.outcome, w2.value.versions.length, w2.value.conflict],
    ['replaced', 1, false],
    'FalseConflict: after reading, p2 dominates',
  );
  const w3 = lab.kvWrite('x', 'three', 'p3');
  t.same(
    w3.ok && [w3.value.outcome, w3.value.versions.length, w3.value.conflict],
    ['conflict', 2, true],
    'p3 never saw x: a sibling',
  );
  t.ok(events.some((e) => e.type === 'kv_conflict'));
  const stale = lab.kvWrite('x', 'old', 'p1', { p1: 1 });
  t.same(!stale.ok && stale.error.code, 'conflict', 'a replayed old write is stale');
  t.ok(events.some((e) => e.type === 'kv_stale_write'));
  t.same(lab.kvRead('nope').ok, false);

  const l = newLab(7, { conflictStrategy: 'lww' });
  for (const p of ['p1', 'p2']) l.lab.spawn(p, 'vector');
  l.lab.internalEvent('p2');
  l.lab.internalEvent('p2');
  l.lab.kvWrite('k', 'a', 'p1');
  const r = l.lab.kvWrite('k', 'b', 'p2');
  t.same(
    r.ok && [r.value.versions.length, r.value.versions[0]!.value, r.value.resolved_by],
    [1, 'b', 'lww'],
    'lww keeps the higher Lamport timestamp',
  );
  t.ok(l.events.some((e) => e.type === 'kv_resolved'));
});

t.test('bad requests are refused as values, never thrown', async (t) => {
  const { lab } = newLab(8);
  lab.spawn('p1', 'vector');
  lab.spawn('p2', 'scalar');
  const cases: Array<{ name: string; r: { ok: boolean; error?: { code: string } }; code: string }> = [
    { name: 'a duplicate spawn is a conflict', r: lab.spawn('p1', 'vector'), code: 'conflict' },
    { name: 'an unknown sender is not found', r: lab.send('zz', 'p1', 'x'), code: 'not_found' },
    { name: 'sending to oneself is invalid', r: lab.send('p1', 'p1', 'x'), code: 'invalid' },
    { name: 'overdrawing is a conflict', r: lab.send('p1', 'p2', 'x', 1000), code: 'conflict' },
    { name: 'a partition with overlapping sides is invalid', r: lab.partition(['p1'], ['p1', 'p2']), code: 'invalid' },
    { name: 'a snapshot of an unknown process is not found', r: lab.startSnapshot('p9'), code: 'not_found' },
  ];
  for (const c of cases) t.equal(c.r.ok ? 'ok' : c.r.error?.code, c.code, c.name);
  lab.kill('p2');
  t.equal((lab.send('p1', 'p2', 'x') as any).error.code, 'conflict', 'sending to a killed process is a conflict');
  t.equal((lab.spawn('p2', 'vector') as any).error.code, 'conflict', 'a killed id is not reused before reset');
});

t.test('every scenario tells its story and passes its own verdict, under every conflict strategy', async (t) => {
  const { scenarioList, runScenario } = await import('../../src/clocklab/scenarios.js');
  const names = scenarioList().map((s) => s.name);
  t.same(names, [
    'BasicLamport',
    'Snapshot3P',
    'FalseConflict',
    'ConcurrentWrites',
    'CausalViolation',
    'CausalDelivery',
    'MatrixGC',
    'PartitionAndHeal',
  ]);
  for (const strategy of ['keep_all', 'lww', 'first_writer', 'merge'] as const) {
    const { lab } = newLab(11, { conflictStrategy: strategy, initialProcesses: [{ id: 'x1', clock_type: 'vector' }] });
    for (const name of names) {
      const published: Rec[] = [];
      const report = runScenario(lab, name, (type, data) => published.push({ type, data }));
      t.ok(report?.verdict.passed, `${name} under ${strategy}: ${report?.verdict.summary}`);
      t.ok(published.filter((e) => e.type === 'scenario_step').length >= 2, `${name} narrates its steps`);
      t.equal(published.at(-1)?.type, 'scenario_verdict', `${name} ends with its verdict`);
      t.notOk(
        lab.processes().some((p) => p.id === 'x1'),
        `${name} started from a reset simulation`,
      );
    }
  }
  const { lab } = newLab(12);
  t.equal(
    runScenario(lab, 'NoSuchScenario', () => {}),
    undefined,
    'an unknown scenario is reported as missing',
  );
});
