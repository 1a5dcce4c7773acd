// Evaluate-all's prerequisite memo (src/flags/eval/evaluate.ts EvalMemo): every flag's prerequisites
// are visited a bounded number of times however long the chain (counted through the store's lookups
// and the memo's evaluation counter, not timed), and the results are exactly those of evaluating
// each flag alone, prerequisite cycles included (data that skipped validation).
import t from 'tap';
import { EvalMemo, evaluate, evaluateAll, type EvalStore, type EvalWarning } from '../../src/flags/eval/evaluate.js';
import type { FlagDefinition, Prerequisite } from '../../src/flags/model/types.js';

function flag(key: string, over: Partial<FlagDefinition> = {}): FlagDefinition {
  return {
    key,
    name: key,
    type: 'string',
    enabled: true,
    defaultVariation: 'a',
    variations: [
      { key: 'a', value: 'A' },
      { key: 'b', value: 'B' },
    ],
    targets: [],
    prerequisites: [],
    rules: [{ id: 'r', clauses: [], variation: 'b' }],
    rollout: [],
    ...over,
  };
}

/** A store that counts its flag lookups: one per prerequisite visited. */
function countingStore(flags: FlagDefinition[]): EvalStore & { lookups: number } {
  const byKey = new Map(flags.map((f) => [f.key, f]));
  const store = {
    lookups: 0,
    flag(key: string) {
      store.lookups++;
      return byKey.get(key);
    },
    segment: () => undefined,
  };
  return store;
}

/** f0 → f1 → … → f(n-1): each flag needs the next one's variation b (which every flag serves). */
function chain(n: number): FlagDefinition[] {
  return Array.from({ length: n }, (_, i) =>
    flag(`f${i}`, { prerequisites: i + 1 < n ? [{ flagKey: `f${i + 1}`, variation: 'b' }] : [] }),
  );
}

t.test('evaluate-all on a long prerequisite chain visits each prerequisite a bounded number of times', async (t) => {
  const n = 500;
  const edges = n - 1;
  const cases: Array<{ name: string; order: FlagDefinition[] }> = [
    { name: 'listed root first (each flag needs the rest of the chain)', order: chain(n) },
    { name: 'listed leaf first', order: chain(n).reverse() },
    { name: 'listed in a scrambled order', order: chain(n).map((_, i, c) => c[(i * 7919) % n] as FlagDefinition) },
  ];
  for (const cs of cases) {
    const store = countingStore(cs.order);
    const memo = new EvalMemo();
    const all = evaluateAll(cs.order, { key: 'u' }, store, undefined, undefined, memo);
    t.equal(Object.keys(all).length, n, `${cs.name}: every flag answered`);
    t.ok(memo.evaluations <= n, `${cs.name}: each flag evaluated at most once (${memo.evaluations} for ${n} flags)`);
    t.ok(store.lookups <= 2 * edges, `${cs.name}: ${store.lookups} prerequisite lookups for ${edges} edges`);
    t.equal(all['f0']?.variation, 'b', `${cs.name}: the whole chain is satisfied`);
    t.equal(memo.cycle, false, `${cs.name}: no cycle`);
  }
  // Without the memo the same question costs a lookup per flag below each flag: n(n-1)/2.
  const store = countingStore(chain(n));
  for (const f of chain(n)) evaluate(f, { key: 'u' }, store);
  t.equal(store.lookups, (n * (n - 1)) / 2, 'flag by flag, the chain is walked from every flag (the quadratic cost)');
});

t.test('a prerequisite shared by many flags is evaluated once per evaluate-all', async (t) => {
  const gate = flag('gate', { prerequisites: [{ flagKey: 'deep', variation: 'b' }] });
  const deep = flag('deep');
  const users = Array.from({ length: 100 }, (_, i) =>
    flag(`u${i}`, { prerequisites: [{ flagKey: 'gate', variation: 'b' }] }),
  );
  const flags = [...users, gate, deep];
  const store = countingStore(flags);
  const memo = new EvalMemo();
  const all = evaluateAll(flags, { key: 'u' }, store, undefined, undefined, memo);
  t.equal(memo.evaluations, 102, 'one evaluation per flag');
  t.equal(store.lookups, 101, 'one lookup per prerequisite edge');
  t.equal(all['u99']?.reason.kind, 'RULE_MATCH', 'the shared gate passes for every user of it');
});

/** A deterministic generator (mulberry32), so a failing graph can be rebuilt from its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** Random prerequisite graphs: acyclic (edges to higher indexes) or with back edges (loops). */
function randomFlags(seed: number, withLoops: boolean): FlagDefinition[] {
  const rand = rng(seed);
  const n = 2 + Math.floor(rand() * 14);
  return Array.from({ length: n }, (_, i) => {
    const prerequisites: Prerequisite[] = [];
    const count = Math.floor(rand() * 3);
    for (let k = 0; k < count; k++) {
      const to = withLoops ? Math.floor(rand() * n) : i + 1 + Math.floor(rand() * (n - i));
      if (to >= n) continue;
      prerequisites.push({ flagKey: `f${to}`, variation: rand() < 0.7 ? 'b' : 'a' });
    }
    if (rand() < 0.1) prerequisites.push({ flagKey: 'missing', variation: 'a' });
    return flag(`f${i}`, {
      enabled: rand() < 0.9,
      defaultVariation: rand() < 0.5 ? 'a' : 'b',
      prerequisites,
      // Some flags name a variation they lack (MALFORMED_FLAG, with a warning).
      rules: [{ id: 'r', clauses: [], variation: rand() < 0.05 ? 'zz' : 'b' }],
    });
  });
}

t.test('evaluate-all answers exactly what evaluating each flag alone answers (500 random graphs)', async (t) => {
  let compared = 0;
  let loopsMet = 0;
  const mismatches: string[] = [];
  for (let seed = 1; seed <= 500; seed++) {
    const withLoops = seed % 2 === 0;
    const flags = randomFlags(seed, withLoops);
    const store = countingStore(flags);
    const memo = new EvalMemo();
    const all = evaluateAll(flags, { key: `user-${seed}` }, store, undefined, undefined, memo);
    if (memo.cycle) loopsMet++;
    if (!memo.cycle && memo.evaluations > flags.length)
      mismatches.push(`seed ${seed}: ${memo.evaluations} evaluations`);
    for (const f of flags) {
      compared++;
      const alone = evaluate(f, { key: `user-${seed}` }, store);
      if (all[f.key] !== alone)
        mismatches.push(`seed ${seed} ${f.key}: ${JSON.stringify(all[f.key])} vs ${JSON.stringify(alone)}`);
    }
  }
  t.same(mismatches, [], `the same shared result object for all ${compared} flags`);
  t.ok(loopsMet > 20, `the graphs with back edges did exercise the cycle fallback (${loopsMet} times)`);
});

t.test('on a prerequisite cycle the warnings are those of evaluating each flag alone, in order', async (t) => {
  const a = flag('a', { defaultVariation: 'b', prerequisites: [{ flagKey: 'b', variation: 'b' }] });
  const b = flag('b', { defaultVariation: 'b', prerequisites: [{ flagKey: 'a', variation: 'b' }] });
  const free = flag('free', { prerequisites: [{ flagKey: 'leaf', variation: 'b' }] });
  const leaf = flag('leaf', { rules: [{ id: 'r', clauses: [], variation: 'nope' }] }); // malformed: warns
  const flags = [free, leaf, a, b];
  const store = countingStore(flags);
  const together: EvalWarning[] = [];
  const all = evaluateAll(flags, { key: 'u' }, store, { onWarning: (w) => together.push(w) });
  const alone: EvalWarning[] = [];
  for (const f of flags) t.equal(all[f.key], evaluate(f, { key: 'u' }, store, { onWarning: (w) => alone.push(w) }));
  t.same(
    together.map((w) => `${w.code} ${w.flagKey}`),
    alone.map((w) => `${w.code} ${w.flagKey}`),
    'the same warnings in the same order (the voided memo attempt reported nothing)',
  );
  t.ok(together.filter((w) => w.code === 'PREREQUISITE_CYCLE').length === 2, 'the loop is reported for a and for b');
  t.same(
    all['a']?.reason,
    { kind: 'PREREQUISITE_FAILED', prerequisiteKey: 'b' },
    'the loop fails at the flag asked for',
  );
});
