/**
 * The swarm-speed changes of session 9 (issue 20, point 6) give what they replace: the swarm's
 * storage folds its records when persistentState() asks and hands back the state folding each as it
 * came gives (checkpoints included); the seeded rng keeps its int32 words and gives the numbers the
 * uint32 ones gave; a single_leader status keeps its followers in an empty plain object; a
 * multi_leader clock sample lists its keys in sorted order.
 */
import { isDeepStrictEqual } from 'node:util';
import t from 'tap';
import type { CoreOptions, CoreOutput, DurableFold, NodeCore } from '../../src/replication/core.js';
import { emptyOutput } from '../../src/replication/core.js';
import { withDurableStorage } from '../../src/replication/swarm/durable-storage.js';
import { SeededRng } from '../../src/util/rng.js';
import { nodeKeyedRecord } from '../../src/replication/cores/single-leader/progress.js';
import { clockSamples } from '../../src/replication/cores/multi-leader/clock-samples.js';
import type { KeyState } from '../../src/replication/cores/multi-leader/key-state.js';

/** A fold of ['add', n] and ['set', n] records (set is a checkpoint), counting its calls. */
function countingFold(): DurableFold & { calls: number } {
  const f = {
    calls: 0,
    fold(state: unknown, record: unknown): unknown {
      f.calls++;
      const [kind, n] = record as [string, number];
      if (kind === 'set') return { total: n, seen: [n] };
      const st = (state as { total: number; seen: number[] } | undefined) ?? { total: 0, seen: [] };
      st.total += n;
      st.seen.push(n);
      return st;
    },
    isCheckpoint: (record: unknown) => (record as [string])[0] === 'set',
  };
  return f;
}

/** A core that emits the durable records it is handed by `emit` on its next drain. */
function recordingCore(opts: CoreOptions): NodeCore & { emit: (r: unknown[]) => void } {
  let queued: unknown[] = [];
  return {
    id: opts.id,
    emit: (r) => {
      queued.push(...r);
    },
    onClient: () => undefined,
    onMessage: () => undefined,
    onTick: () => undefined,
    nextDeadline: () => Infinity,
    drain: (out: CoreOutput) => {
      for (const r of queued) (out.durable ??= []).push(r);
      queued = [];
    },
    control: () => ({ ok: true }),
    status: () => ({ role: 'x', commit_index: 0, last_applied: 0, leader_id: '', lag: 0 }),
    logView: () => [],
    storeView: () => ({}),
  };
}

t.test('withDurableStorage folds on persistentState() what folding each drained record gives', async (t) => {
  const fold = countingFold();
  let inner: ReturnType<typeof recordingCore> | undefined;
  const factory = withDurableStorage((opts) => {
    inner = recordingCore(opts);
    return inner;
  }, fold);
  const opts = { id: 'n1', persisted: undefined } as unknown as CoreOptions;
  const core = factory(opts);
  const batches: unknown[][] = [
    [['add', 1]],
    [
      ['add', 2],
      ['set', 10],
      ['add', 3],
    ],
    [],
    [['add', 4]],
  ];
  let eager: unknown;
  const reference = countingFold();
  for (const batch of batches) {
    inner?.emit(batch);
    const out = emptyOutput();
    out.durable = [['before', 0]];
    core.drain(out);
    t.same(out.durable.slice(1), batch, 'the drained records are handed on');
    for (const r of batch) eager = reference.fold(eager, r);
  }
  t.equal(fold.calls, 0, 'nothing folded before a crash asks');
  const state = core.persistentState?.();
  t.ok(isDeepStrictEqual(state, eager), 'the same state as folding each record as it came');
  t.same(state, { total: 17, seen: [10, 3, 4] }, 'from the checkpoint on');
  t.equal(fold.calls, 3, 'the records before the checkpoint are not folded');
  t.equal(core.persistentState?.(), state, 'asked again: the same state, nothing folded twice');
  t.equal(fold.calls, 3);
  inner?.emit([['add', 5]]);
  core.drain(emptyOutput());
  t.same(core.persistentState?.(), { total: 22, seen: [10, 3, 4, 5] }, 'later records fold onto it');
});

t.test('SeededRng gives the numbers of sfc32 over uint32 words', async (t) => {
  // The reference: the generator as it was written before, with uint32 words.
  const reference = (seed: number): (() => number) => {
    let s = (Math.floor(seed) ^ Math.floor(seed / 0x100000000)) >>> 0;
    const sm = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    let a = sm();
    let b = sm();
    let c = sm();
    let d = sm();
    const u32 = (): number => {
      const x = (((a + b) >>> 0) + d) >>> 0;
      d = (d + 1) >>> 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) >>> 0;
      c = (c << 21) | (c >>> 11);
      c = (c + x) >>> 0;
      return x;
    };
    for (let i = 0; i < 12; i++) u32();
    return () => u32() / 0x100000000;
  };
  for (const seed of [0, 1, 42, -7, 2 ** 31, 2 ** 32 + 5, 1e15 + 3, 123.75]) {
    const rng = new SeededRng(seed);
    const next = reference(seed);
    let same = true;
    for (let i = 0; i < 2000; i++) if (rng.next() !== next()) same = false;
    t.ok(same, `seed ${seed}: the same 2000 numbers`);
  }
});

t.test('nodeKeyedRecord is an empty plain object that keeps its entries in order', async (t) => {
  const r = nodeKeyedRecord<{ n: number }>();
  t.equal(Object.getPrototypeOf(r), Object.prototype);
  t.same(Object.getOwnPropertyNames(r), []);
  r['n3'] = { n: 3 };
  r['n2'] = { n: 2 };
  t.same(Object.keys(r), ['n3', 'n2']);
  t.equal(JSON.stringify(r), '{"n3":{"n":3},"n2":{"n":2}}');
  t.ok(isDeepStrictEqual(r, { n3: { n: 3 }, n2: { n: 2 } }));
});

t.test('clockSamples lists the keys in sorted order, whatever order they were set in', async (t) => {
  const v = (key: string, n: number) => ({
    key,
    value: key,
    tombstone: false,
    timestamp: n,
    node_id: 'n1',
    version: n,
    vclock: { n1: n },
  });
  const keys = new Map<string, KeyState>();
  for (const [i, key] of ['k3', 'a', 'k1', 'zz', 'k10', 'b'].entries()) {
    keys.set(key, { versions: [v(key, i + 1)], parked: null } as unknown as KeyState);
  }
  const samples = clockSamples(keys) ?? [];
  t.same(
    samples.map((s) => s.key),
    [...keys.keys()].sort(),
  );
  t.same(samples[0]?.winner, { n1: 2 }, 'each key with its own clock');
  const many = new Map<string, KeyState>();
  for (let i = 0; i < 1000; i++) {
    const key = `k${(i * 7919) % 1000}`;
    many.set(key, { versions: [v(key, i + 1)], parked: null } as unknown as KeyState);
  }
  t.same(
    (clockSamples(many) ?? []).map((s) => s.key),
    [...many.keys()].sort(),
    'past the insertion threshold (1,000 keys) the same order, sorted once',
  );
  keys.set('7', { versions: [v('7', 9)], parked: null } as unknown as KeyState);
  t.equal(clockSamples(keys), undefined, 'an index-like key: the views order it apart');
});
