/**
 * The second round of swarm-speed changes (issue 20, point 6) give what they replace: each
 * strategy's own clone of its durable fold equals structuredClone's copy; the multi_leader core's
 * clockSamples() shows the clocks its storeView() and status() show; the phi detector's ring of
 * samples and its per-instant memo answer exactly as a list with push and shift; and a trace log
 * that hands its write buffer on (TraceLog.digest) still hashes and keeps exactly its own lines.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import t from 'tap';
import type { DetCluster } from '../../src/fabric/deterministic.js';
import { TraceLog } from '../../src/fabric/trace-log.js';
import { kvStrategies, persistedCloneOf, runKvSwarm } from '../../src/replication/swarm/kv-swarm.js';
import { PhiAccrualDetector, defaultPhiOptions, type PhiOptions } from '../../src/replication/dynamo/phi.js';
import type { KeyClocks } from '../../src/replication/cores/multi-leader/clock-samples.js';
import type { NodeCore, Version } from '../../src/replication/core.js';
import { SeededRng } from '../../src/util/rng.js';

/** Runs one seed and returns its cluster afterwards (every node back up after the heal). */
function clusterAfter(strategy: (typeof kvStrategies)[number], seed: number): DetCluster {
  let cluster: DetCluster | undefined;
  runKvSwarm(strategy, seed, { observe: (c) => (cluster = c) });
  if (!cluster) throw new Error('no cluster observed');
  return cluster;
}

t.test("each strategy's clone of its fold is structuredClone's copy, sharing no container", async (t) => {
  for (const strategy of kvStrategies) {
    let checked = 0;
    for (let seed = 1; seed <= 6; seed++) {
      const c = clusterAfter(strategy, seed);
      for (const id of c.nodeIds()) {
        if (c.state(id) === 'offline') continue;
        const persisted = c.core(id).persistentState?.();
        if (persisted === undefined) continue;
        const copy = persistedCloneOf[strategy](persisted);
        t.ok(isDeepStrictEqual(copy, structuredClone(persisted)), `${strategy} seed ${seed} ${id}: equal`);
        t.not(copy, persisted, 'a new object');
        checked++;
      }
    }
    t.ok(checked > 0, `${strategy}: ${checked} folds compared`);
  }
  // A version's fields keep their order, and its clock is a copy.
  const v: Version = {
    key: 'k',
    value: 'v',
    tombstone: false,
    timestamp: 7,
    node_id: 'n2',
    version: 3,
    vclock: { n2: 3 },
  };
  const p = { store: new Map([['k', v]]), hints: new Map([['n3', new Map([['k', v]])]]) };
  const copy = persistedCloneOf.leaderless(p) as typeof p;
  const cv = copy.store.get('k') as Version;
  t.same(Object.keys(cv), Object.keys(v));
  t.not(cv.vclock, v.vclock);
  t.not(copy.hints.get('n3'), p.hints.get('n3'));
  // A version with a field of its own, or its fields in another order: still structuredClone's copy.
  const odd = {
    store: new Map([
      ['k', { ...v, extra: 1 }],
      ['j', { vclock: { n1: 1 }, ...v }],
    ]),
    hints: new Map(),
  };
  t.ok(isDeepStrictEqual(persistedCloneOf.leaderless(odd), structuredClone(odd)), 'odd versions');
  t.same(Object.keys((persistedCloneOf.leaderless(odd) as typeof odd).store.get('k') ?? {}), [
    ...Object.keys(v),
    'extra',
  ]);
  // Not its shape: the generic clone.
  t.same(persistedCloneOf.single_leader({ a: [1, 2] }), { a: [1, 2] });
});

t.test('clockSamples() shows the clocks storeView() and status() show', async (t) => {
  let compared = 0;
  for (let seed = 1; seed <= 12; seed++) {
    const c = clusterAfter('multi_leader', seed);
    for (const id of c.nodeIds()) {
      if (c.state(id) === 'offline') continue;
      const core = c.core(id) as NodeCore & { clockSamples?: () => KeyClocks[] | undefined };
      const samples = core.clockSamples?.();
      if (!t.ok(samples, 'the wrapped core passes clockSamples on')) return;
      const store = core.storeView();
      const siblings = (core.status(c.now).extra?.['siblings'] ?? {}) as Record<string, Array<{ vclock: unknown }>>;
      t.same(
        samples?.map((s) => s.key),
        Object.keys(store),
        'the same keys, in the same order',
      );
      for (const s of samples ?? []) {
        t.same(s.winner, store[s.key]?.vclock);
        t.same(
          s.siblings,
          siblings[s.key]?.map((x) => x.vclock),
        );
        compared++;
      }
    }
  }
  t.ok(compared > 0, `${compared} keys compared`);
});

/** The detector as it was: a list of samples with push and shift, phi computed on every call. */
class ListPhi {
  private readonly samples: number[] = [];
  private sum = 0;
  private sumSq = 0;
  private last: number;
  constructor(
    now: number,
    readonly opts: PhiOptions,
  ) {
    this.last = now;
    const first = opts.firstIntervalMs;
    this.push(first - first / 4);
    this.push(first + first / 4);
  }
  private push(interval: number): void {
    this.samples.push(interval);
    this.sum += interval;
    this.sumSq += interval * interval;
    if (this.samples.length > this.opts.windowSize) {
      const old = this.samples.shift() as number;
      this.sum -= old;
      this.sumSq -= old * old;
    }
  }
  heartbeat(now: number): void {
    const interval = now - this.last;
    if (interval >= 0 && interval <= this.opts.maxSampleMs) this.push(interval);
    if (now > this.last) this.last = now;
  }
  phi(now: number): number {
    const n = this.samples.length;
    const mean = this.sum / n + this.opts.acceptablePauseMs;
    const variance = Math.max(0, this.sumSq / n - (this.sum / n) ** 2);
    const std = Math.max(Math.sqrt(variance), this.opts.minStdDeviationMs);
    const elapsed = Math.max(0, now - this.last);
    const y = (elapsed - mean) / std;
    const lnE = -y * (1.5976 + 0.070566 * y * y);
    if (elapsed > mean) return (-lnE + Math.log1p(Math.exp(lnE))) / Math.LN10;
    const e = Math.exp(lnE);
    return -Math.log10(1 - 1 / (1 + e));
  }
}

t.test('the phi detector answers exactly as a list of samples with push and shift', async (t) => {
  for (const windowSize of [1, 3, 100]) {
    const opts = { ...defaultPhiOptions, windowSize };
    const r = new SeededRng(windowSize);
    const ring = new PhiAccrualDetector(1000, opts);
    const list = new ListPhi(1000, opts);
    let now = 1000;
    let same = true;
    for (let i = 0; i < 5000 && same; i++) {
      now += r.int(4) === 0 ? 0 : r.range(1, r.chance(0.05) ? 3000 : 250);
      if (r.chance(0.7)) {
        ring.heartbeat(now);
        list.heartbeat(now);
      }
      // Asked twice at one instant (the memo), and again later.
      same = ring.phi(now) === list.phi(now) && ring.phi(now) === list.phi(now);
      same &&= ring.suspected(now + 40) === list.phi(now + 40) >= opts.threshold;
    }
    t.ok(same, `window ${windowSize}: the same phi at every step`);
  }
});

t.test('a trace log that hands its buffer on still hashes and keeps exactly its own lines', async (t) => {
  const sha = (lines: string[]): string => {
    const h = createHash('sha256');
    for (const l of lines) h.update(`${l}\n`);
    return h.digest('hex');
  };
  const a = new TraceLog(1000);
  const aLines = ['1 first line', '2 second é line'];
  for (const l of aLines) a.write(l);
  t.equal(a.digest(), sha(aLines), 'a: hash after its first lines');
  // b starts after a handed its buffer on; a then writes again (a buffer of its own).
  const b = new TraceLog(1000);
  const bLines = Array.from({ length: 3000 }, (_, i) => `${i} b line ${'x'.repeat(i % 50)}`);
  for (const l of bLines.slice(0, 10)) b.write(l);
  const more = ['3 third line', `4 ${'y'.repeat(70_000)}`];
  for (const l of more) a.write(l);
  for (const l of bLines.slice(10)) b.write(l);
  t.equal(a.digest(), sha([...aLines, ...more]), 'a: hash of all its lines');
  t.same(a.keptLines(), [...aLines, ...more], 'a: its kept lines');
  t.equal(b.digest(), sha(bLines), 'b: hash of its lines');
  t.same(b.keptLines(), bLines.slice(0, 1000), 'b: its kept lines (up to its cap)');
  const c = new TraceLog(2);
  c.write('only');
  t.equal(c.digest(), sha(['only']));
  t.equal(c.digest(), sha(['only']), 'asked again');
  c.write('two');
  c.write('three');
  t.equal(c.digest(), sha(['only', 'two', 'three']));
  t.same(c.keptLines(), ['only', 'two'], 'kept up to its cap');
});
