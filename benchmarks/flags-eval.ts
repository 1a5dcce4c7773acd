/**
 * Evaluations per second of simlab's pure flag evaluator against LaunchDarkly's Node server SDK
 * evaluating the same flags for the same contexts offline (TestData source, events off), like for
 * like: synchronous against synchronous (the SDK has no public synchronous evaluation, so this is
 * its internal Evaluator, reached through the client's private fields, which variationDetail calls;
 * fed from its in-memory store, whose callbacks fire synchronously) and awaited against awaited (LD's
 * variationDetail against simlab's lookup + evaluate inside an async function). Two flags: (a) a
 * simple boolean flag, (b) 10 rules, targets, a prerequisite and a segment. Both sides must give
 * the same value and reason kind for every context first. Rounds alternate the order of the four
 * timings; the median and range over rounds are recorded. It does not time HTTP (flags-http does).
 * Also: evaluate-all on a 500-flag prerequisite chain (each flag needs the next), through the
 * prerequisite memo (evaluateAll) against flag-by-flag evaluation without it (what evaluate-all
 * did before issue 20: quadratic), and the memo's cost at 1,000 flags against 500 (2 when linear).
 * And the evaluate endpoint's answer for every flag of flags-http's environment (its 20 flags and
 * segment): the evaluate-all plan (Evaluator.answer) against flag-by-flag evaluate() joining cached
 * JSON fragments (the answer before the plan), for flags-http's one context and 1,000 varied ones.
 * Run: npx tsc -p tsconfig.json && node dist/benchmarks/flags-eval.js [seconds per timing, default 0.5]
 *   [rounds, default 5]
 */
import {
  Context,
  init,
  integrations,
  type LDClient,
  type LDContext,
  type LDEvaluationDetail,
} from '@launchdarkly/node-server-sdk';
import { median, recordResult } from './results.js';
import { compileFlag, evaluate, evaluateAll, EvalMemo, type EvalStore } from '../src/flags/eval/evaluate.js';
import type {
  Clause,
  ClauseOp,
  EvalContext,
  Flag,
  FlagDefinition,
  SegmentDefinition,
} from '../src/flags/model/types.js';
import type { FlagsContext } from '../src/flags/api/context.js';
import { Evaluator } from '../src/flags/api/evaluation.js';
import { EnvState } from '../src/flags/stream/replica.js';
import { benchContext, benchFlagsCount, flagBody } from './flags-lib.js';

const secondsPerCase = Number(process.argv[2] ?? 0.5);
const rounds = Math.max(1, Math.floor(Number(process.argv[3] ?? process.env['BENCH_ROUNDS'] ?? 5)));
const contextsCount = 1000;

// ---- our definitions

const simple: FlagDefinition = {
  key: 'simple-bool',
  name: 'simple-bool',
  type: 'boolean',
  enabled: true,
  defaultVariation: 'on',
  variations: [
    { key: 'on', value: true },
    { key: 'off', value: false },
  ],
  targets: [],
  prerequisites: [],
  rules: [],
  rollout: [],
};

const gate: FlagDefinition = { ...simple, key: 'gate' };

const beta: SegmentDefinition = {
  key: 'beta-testers',
  name: 'beta-testers',
  included: Array.from({ length: 50 }, (_, i) => `user-${i * 17}`),
  excluded: ['user-17'],
  rules: [{ clauses: [{ attribute: 'email', op: 'endsWith', values: ['@beta.example'] }] }],
};

const cl = (attribute: string, op: ClauseOp, values: string[], negate = false): Clause =>
  negate ? { attribute, op, values, negate } : { attribute, op, values };

// Ten rules that most contexts fail (each looks at its attribute), so evaluation walks them all
// and ends in the rollout: the expensive path.
const complexRules: FlagDefinition['rules'] = [
  { id: 'r1', clauses: [cl('country', 'in', ['AQ', 'BV', 'HM'])], variation: 'red' },
  { id: 'r2', clauses: [cl('email', 'endsWith', ['@competitor.example'])], variation: 'red' },
  { id: 'r3', clauses: [cl('email', 'startsWith', ['admin+'])], variation: 'green' },
  { id: 'r4', clauses: [cl('name', 'matches', ['^Test User \\d+$'])], variation: 'green' },
  { id: 'r5', clauses: [cl('age', 'gt', ['120'])], variation: 'red' },
  { id: 'r6', clauses: [cl('version', 'semverGt', ['9.0.0'])], variation: 'blue' },
  { id: 'r7', clauses: [cl('signup', 'before', ['2001-01-01T00:00:00Z'])], variation: 'blue' },
  { id: 'r8', clauses: [cl('plan', 'in', ['enterprise']), cl('country', 'in', ['NZ'])], variation: 'green' },
  { id: 'r9', clauses: [cl('', 'segmentMatch', ['beta-testers'])], variation: 'blue' },
  { id: 'r10', clauses: [cl('groups', 'contains', ['internal-'])], variation: 'red' },
];

const complex: FlagDefinition = {
  key: 'complex-string',
  name: 'complex-string',
  type: 'string',
  enabled: true,
  defaultVariation: 'red',
  variations: [
    { key: 'red', value: 'red' },
    { key: 'green', value: 'green' },
    { key: 'blue', value: 'blue' },
  ],
  targets: [
    { contextKeys: Array.from({ length: 20 }, (_, i) => `vip-${i}`), variation: 'green' },
    { contextKeys: ['user-5', 'user-500'], variation: 'blue' },
  ],
  prerequisites: [{ flagKey: 'gate', variation: 'on' }],
  rules: complexRules,
  rollout: [
    { variation: 'red', weight: 34000 },
    { variation: 'green', weight: 33000 },
    { variation: 'blue', weight: 33000 },
  ],
};

const flags = new Map([simple, gate, complex].map((f) => [f.key, f]));
const segments = new Map([[beta.key, beta]]);
const store: EvalStore = { flag: (k) => flags.get(k), segment: (k) => segments.get(k) };

// ---- LaunchDarkly's raw format for the same flags

const LD_OPS: Partial<Record<ClauseOp, string>> = {
  in: 'in',
  startsWith: 'startsWith',
  endsWith: 'endsWith',
  contains: 'contains',
  matches: 'matches',
  lt: 'lessThan',
  lte: 'lessThanOrEqual',
  gt: 'greaterThan',
  gte: 'greaterThanOrEqual',
  before: 'before',
  after: 'after',
  semverEq: 'semVerEqual',
  semverLt: 'semVerLessThan',
  semverGt: 'semVerGreaterThan',
  segmentMatch: 'segmentMatch',
};
const NUMERIC: ReadonlySet<ClauseOp> = new Set<ClauseOp>(['lt', 'lte', 'gt', 'gte']);

function ldClause(c: Clause) {
  const op = LD_OPS[c.op];
  if (op === undefined) throw new Error(`no LaunchDarkly operator for ${c.op}`);
  // LaunchDarkly compares numbers as JSON numbers; ours are sent as strings.
  const values = NUMERIC.has(c.op) ? c.values.map(Number) : c.values;
  return {
    attribute: c.op === 'segmentMatch' ? 'key' : c.attribute,
    op,
    values,
    negate: c.negate === true,
    contextKind: 'user',
  };
}

function ldFlag(f: FlagDefinition) {
  const index = (key: string) => f.variations.findIndex((v) => v.key === key);
  return {
    key: f.key,
    version: 1,
    on: f.enabled,
    salt: f.key, // our salt is the flag key
    variations: f.variations.map((v) => v.value),
    offVariation: index(f.defaultVariation),
    fallthrough:
      f.rollout.length > 0
        ? { rollout: { variations: f.rollout.map((r) => ({ variation: index(r.variation), weight: r.weight })) } }
        : { variation: index(f.defaultVariation) },
    targets: f.targets.map((t) => ({ values: t.contextKeys, variation: index(t.variation) })),
    contextTargets: [],
    rules: f.rules.map((r) => ({
      id: r.id,
      clauses: r.clauses.map(ldClause),
      variation: index(r.variation),
      trackEvents: false,
    })),
    prerequisites: f.prerequisites.map((p) => ({
      key: p.flagKey,
      variation: (flags.get(p.flagKey) as FlagDefinition).variations.findIndex((v) => v.key === p.variation),
    })),
    trackEvents: false,
    trackEventsFallthrough: false,
    clientSide: false,
    deleted: false,
  };
}

function ldSegment(s: SegmentDefinition) {
  return {
    key: s.key,
    version: 1,
    included: s.included,
    excluded: s.excluded,
    includedContexts: [],
    excludedContexts: [],
    rules: s.rules.map((r, i) => ({ id: `s${i}`, clauses: r.clauses.map(ldClause) })),
    salt: s.key,
    deleted: false,
  };
}

// ---- contexts: a pool of varied users, most of which walk every rule into the rollout

const countries = ['NZ', 'AU', 'US', 'FR', 'JP', 'BR'];
const contexts: EvalContext[] = Array.from({ length: contextsCount }, (_, i) => ({
  key: i % 97 === 0 ? `vip-${i % 20}` : `user-${i}`,
  name: `User ${i}`,
  email: i % 41 === 0 ? `u${i}@beta.example` : `u${i}@mail.example`,
  country: countries[i % countries.length] as string,
  plan: i % 3 === 0 ? 'enterprise' : 'free',
  age: 18 + (i % 60),
  version: `${1 + (i % 9)}.${i % 13}.${i % 7}`,
  signup: `20${10 + (i % 14)}-0${1 + (i % 9)}-1${i % 9}T10:00:00Z`,
  groups: ['users', i % 5 === 0 ? 'staff' : 'public'],
}));
const ldContexts = contexts.map((c) => ({ ...c, kind: 'user', key: c.key as string }));

// ---- LaunchDarkly's synchronous path: not public API. LDClientImpl keeps its Evaluator and its
// feature store in private fields; variationDetail looks the flag up in the store and calls
// evaluator.evaluateCb with a callback. With the in-memory store every callback fires before the
// call returns, so evaluateCb is synchronous here (checked below: it throws if it is not).

interface LdEvalResult {
  detail: LDEvaluationDetail;
}
interface LdInternals {
  _evaluator: { evaluateCb(flag: unknown, context: unknown, cb: (r: LdEvalResult) => void): void };
  _featureStore: { get(kind: { namespace: string }, key: string, cb: (item: unknown) => void): void };
}

function ldSyncPath(client: LDClient): {
  flag(key: string): unknown;
  evaluate(flag: unknown, context: LDContext): LDEvaluationDetail;
} {
  const internals = client as unknown as Partial<LdInternals>;
  const evaluator = internals._evaluator;
  const store = internals._featureStore;
  if (evaluator === undefined || store === undefined)
    throw new Error('this LaunchDarkly SDK version has no reachable synchronous evaluator');
  return {
    flag(key) {
      let item: unknown;
      store.get({ namespace: 'features' }, key, (f) => {
        item = f;
      });
      if (item === undefined) throw new Error(`LaunchDarkly store lookup of ${key} is not synchronous`);
      return item;
    },
    evaluate(flag, context) {
      let detail: LDEvaluationDetail | undefined;
      evaluator.evaluateCb(flag, Context.fromLDContext(context), (r) => {
        detail = r.detail;
      });
      if (detail === undefined) throw new Error('LaunchDarkly evaluateCb did not call back synchronously');
      return detail;
    },
  };
}

// ---- timing

let sink = 0;

function timeSync(run: (i: number) => unknown): number {
  const deadline = process.hrtime.bigint() + BigInt(Math.round(secondsPerCase * 1e9));
  const start = process.hrtime.bigint();
  let n = 0;
  for (;;) {
    for (let j = 0; j < 1000; j++, n++) if (run(n % contextsCount) !== undefined) sink++;
    const now = process.hrtime.bigint();
    if (now >= deadline) return n / (Number(now - start) / 1e9);
  }
}

async function timeAsync(run: (i: number) => Promise<unknown>): Promise<number> {
  const deadline = process.hrtime.bigint() + BigInt(Math.round(secondsPerCase * 1e9));
  const start = process.hrtime.bigint();
  let n = 0;
  for (;;) {
    for (let j = 0; j < 1000; j++, n++) if ((await run(n % contextsCount)) !== undefined) sink++;
    const now = process.hrtime.bigint();
    if (now >= deadline) return n / (Number(now - start) / 1e9);
  }
}

const silent = { error() {}, warn() {}, info() {}, debug() {} };

// ---- evaluate-all on a prerequisite chain

/** f0 → f1 → … → f(n-1), each needing the next one's variation `on`; listed root first. */
function prerequisiteChain(n: number): { flags: FlagDefinition[]; store: EvalStore } {
  const chain = Array.from(
    { length: n },
    (_, i): FlagDefinition => ({
      ...simple,
      key: `chain-${i}`,
      name: `chain-${i}`,
      prerequisites: i + 1 < n ? [{ flagKey: `chain-${i + 1}`, variation: 'on' }] : [],
    }),
  );
  const byKey = new Map(chain.map((f) => [f.key, f]));
  return { flags: chain, store: { flag: (k) => byKey.get(k), segment: () => undefined } };
}

/** Calls of `run` per second over about `secondsPerCase` (at least 3 calls). */
function timeCalls(run: () => unknown): number {
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(secondsPerCase * 1e9));
  let n = 0;
  for (;;) {
    if (run() !== undefined) sink++;
    n++;
    const now = process.hrtime.bigint();
    if (now >= deadline && n >= 3) return n / (Number(now - start) / 1e9);
  }
}

function chainBenchmark(): void {
  const context = contexts[0] as EvalContext;
  const c500 = prerequisiteChain(500);
  const c1000 = prerequisiteChain(1000);
  for (const f of [...c500.flags, ...c1000.flags]) compileFlag(f);
  const memo = new EvalMemo();
  const all = evaluateAll(c500.flags, context, c500.store, undefined, undefined, memo);
  for (const f of c500.flags) {
    if (evaluate(f, context, c500.store) !== all[f.key])
      throw new Error(`chain: evaluateAll and evaluate disagree on ${f.key}`);
  }
  const timings = {
    memo500: () => timeCalls(() => evaluateAll(c500.flags, context, c500.store)),
    flagByFlag500: () =>
      timeCalls(() => {
        const out: Record<string, unknown> = {};
        for (const f of c500.flags) out[f.key] = evaluate(f, context, c500.store);
        return out;
      }),
    memo1000: () => timeCalls(() => evaluateAll(c1000.flags, context, c1000.store)),
  };
  type Key = keyof typeof timings;
  const runs: Record<Key, number[]> = { memo500: [], flagByFlag500: [], memo1000: [] };
  const order: Key[] = ['memo500', 'flagByFlag500', 'memo1000'];
  for (let round = 0; round < rounds; round++) {
    for (const k of round % 2 === 0 ? order : [...order].reverse()) runs[k].push(timings[k]());
  }
  const speedups = runs.memo500.map((x, i) => x / (runs.flagByFlag500[i] as number));
  const growth = runs.memo500.map((x, i) => x / (runs.memo1000[i] as number));
  const ms = (xs: number[]) => (1000 / median(xs)).toFixed(3);
  console.log('\nevaluate-all on a prerequisite chain (each flag needs the next):');
  console.log(
    `  500 flags   memo ${ms(runs.memo500)} ms (${memo.evaluations} evaluations)   flag by flag ` +
      `${ms(runs.flagByFlag500)} ms (${(500 * 501) / 2} evaluations)   speed-up ${median(speedups).toFixed(1)}x`,
  );
  console.log(
    `  1000 flags  memo ${ms(runs.memo1000)} ms: ${median(growth).toFixed(2)}x the 500-flag time (2 = linear)`,
  );
  const method =
    `One context, a chain of flags each with one prerequisite on the next (listed root first), ${rounds} ` +
    `rounds of ${secondsPerCase} s per timing in alternating order, flags compiled beforehand`;
  recordResult({
    benchmark: 'flags-eval',
    measure: 'evaluate-all on a 500-flag prerequisite chain',
    subject: 'evaluateAll with the prerequisite memo (each flag evaluated once)',
    baseline: 'flag-by-flag evaluate() without a memo (evaluate-all before issue 20: quadratic)',
    unit: 'evaluate-all/s',
    runs: runs.memo500,
    baselineRuns: runs.flagByFlag500,
    ratio: median(speedups),
    ratioRuns: speedups,
    method: `${method}; ratio = memo ÷ flag by flag (> 1: the memo is faster).`,
  });
  recordResult({
    benchmark: 'flags-eval',
    measure: 'evaluate-all on a prerequisite chain: 1,000 flags against 500',
    subject: 'evaluateAll, 1,000-flag chain',
    baseline: 'evaluateAll, 500-flag chain',
    unit: 'evaluate-all/s',
    runs: runs.memo1000,
    baselineRuns: runs.memo500,
    ratio: median(growth),
    ratioRuns: growth,
    method: `${method}; ratio = time at 1,000 ÷ time at 500 (2 when linear, 4 when quadratic).`,
    target: { op: '<=', value: 3, met: median(growth) <= 3 },
  });
}

// ---- the evaluate endpoint's answer for every flag (flags-http's environment, in process)

/**
 * Calls of `run` per second of this process's CPU time over about `secondsPerCase` of it: on a
 * machine shared with other work, CPU time moves far less than wall-clock time.
 */
function timeCpuCalls(run: () => unknown): number {
  const cpu = (): number => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  const start = cpu();
  let n = 0;
  for (;;) {
    for (let i = 0; i < 64; i++) if (run() !== undefined) sink++;
    n += 64;
    const used = cpu() - start;
    if (used >= secondsPerCase) return n / used;
  }
}

function answerBenchmark(): void {
  const stamp = { version: 1, createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z' };
  const flags = Array.from(
    { length: benchFlagsCount },
    // flagBody is what flags-http POSTs: the service fills in name and prerequisites.
    (_, i): Flag => ({ ...(flagBody(i) as FlagDefinition), name: `f${i}`, prerequisites: [], ...stamp }),
  ).sort((a, b) => (a.key < b.key ? -1 : 1)); // the store's order
  const segment = { key: 'bench', name: 'bench', included: ['u-1'], excluded: [], rules: [], ...stamp };
  const env = new EnvState('bench', 'prod', { flags, segments: [segment], seq: 1 });
  const ctx = {
    metrics: { evalCounts: { byReason: new Map(), warnings: new Map() } },
    logger: silent,
    now: () => 0,
  } as unknown as FlagsContext;
  const evaluator = new Evaluator(ctx);
  const countries = ['NL', 'BE', 'DE', 'FR', 'US'];
  const versions = ['1.9.0', '2.0.0', '2.1.0', '2.3.0', '3.0.0'];
  const varied: EvalContext[] = Array.from({ length: 1000 }, (_, i) => ({
    key: `user-${i}`,
    country: countries[i % countries.length] as string,
    version: versions[(i * 7) % versions.length] as string,
  }));
  // The path before the plan: flag by flag through evaluate() (one memo per request), counted by
  // reason, the answer joined from cached per-outcome and per-key JSON fragments.
  const byReason = new Map<string, number>();
  const fragments = new WeakMap<object, string>();
  const fragment = (o: object, make: () => string): string => {
    let f = fragments.get(o);
    if (f === undefined) {
      f = make();
      fragments.set(o, f);
    }
    return f;
  };
  const general = (context: EvalContext): string => {
    const memo = new EvalMemo();
    let out = '{"flags":{';
    let first = true;
    for (const flag of env.flags.values()) {
      const r = evaluate(flag, context, env, undefined, memo);
      byReason.set(r.reason.kind, (byReason.get(r.reason.kind) ?? 0) + 1);
      out += `${first ? '' : ','}${fragment(flag, () => JSON.stringify(flag.key))}:`;
      out += fragment(r, () => JSON.stringify(r));
      first = false;
    }
    return `${out}}}`;
  };
  for (const context of [benchContext, ...varied]) {
    const want = JSON.stringify(evaluator.run(env, { context }));
    if (evaluator.answer(env, { context }).raw !== want || general(context) !== want)
      throw new Error(`answer: the plan and the general evaluator disagree for ${JSON.stringify(context)}`);
  }
  let next = 0;
  const nextContext = (): EvalContext => varied[(next = (next + 1) % varied.length)] as EvalContext;
  const timings = {
    planOne: () => timeCpuCalls(() => evaluator.answer(env, { context: benchContext }).raw),
    generalOne: () => timeCpuCalls(() => general(benchContext)),
    planVaried: () => timeCpuCalls(() => evaluator.answer(env, { context: nextContext() }).raw),
    generalVaried: () => timeCpuCalls(() => general(nextContext())),
  };
  type Key = keyof typeof timings;
  const runs: Record<Key, number[]> = { planOne: [], generalOne: [], planVaried: [], generalVaried: [] };
  const order = Object.keys(timings) as Key[];
  for (let round = 0; round < rounds; round++) {
    for (const k of round % 2 === 0 ? order : [...order].reverse()) runs[k].push(timings[k]());
  }
  const us = (xs: number[]) => (1e6 / median(xs)).toFixed(2);
  console.log(`\nthe evaluate answer for all ${benchFlagsCount} flags of flags-http's environment (in process):`);
  for (const [what, plan, general] of [
    ["flags-http's one context", runs.planOne, runs.generalOne],
    ['1,000 varied contexts', runs.planVaried, runs.generalVaried],
  ] as const) {
    const speedups = plan.map((x, i) => x / (general[i] as number));
    console.log(
      `  ${what}: plan ${us(plan)} µs   general ${us(general)} µs   speed-up ${median(speedups).toFixed(1)}x`,
    );
    recordResult({
      benchmark: 'flags-eval',
      measure: `evaluate answer, all ${benchFlagsCount} flags, ${what}`,
      subject: 'Evaluator.answer through the evaluate-all plan',
      baseline: 'flag-by-flag evaluate() joining cached JSON fragments (the answer before the plan)',
      unit: 'answers/s',
      runs: plan,
      baselineRuns: general,
      ratio: median(speedups),
      ratioRuns: speedups,
      method:
        `flags-http's ${benchFlagsCount} flags and segment in an EnvState, ${what} (for one context ` +
        `every answer after the first reuses the last answer's string; varied contexts mostly do not), ` +
        `${rounds} rounds of ${secondsPerCase} s of CPU time per timing in alternating order (answers per ` +
        'CPU second of the process); both paths checked ' +
        'to give the same bytes first; ratio = plan ÷ general (> 1: the plan is faster).',
    });
  }
}

async function main(): Promise<void> {
  const td = new integrations.TestData();
  for (const f of [simple, gate, complex]) await td.usePreconfiguredFlag(ldFlag(f));
  await td.usePreconfiguredSegment(ldSegment(beta));
  const client = init('sdk-key', {
    updateProcessor: td.getFactory(),
    sendEvents: false,
    diagnosticOptOut: true,
    logger: silent,
  });
  await client.waitForInitialization({ timeout: 5 });
  const ld = ldSyncPath(client);

  try {
    // Equivalence first: all four paths must serve the same value and reason for every context.
    const reasons = new Map<string, number>();
    for (const f of [simple, complex]) {
      compileFlag(f);
      const ldFlagItem = ld.flag(f.key);
      let disagree = 0;
      for (let i = 0; i < contextsCount; i++) {
        const ours = evaluate(f, contexts[i] as EvalContext, store);
        const theirs = await client.variationDetail(f.key, ldContexts[i] as LDContext, null);
        const theirsSync = ld.evaluate(ldFlagItem, ldContexts[i] as LDContext);
        if (ours.value !== theirs.value || ours.reason.kind !== theirs.reason.kind) disagree++;
        if (theirsSync.value !== theirs.value || theirsSync.reason.kind !== theirs.reason.kind) disagree++;
        if (f === complex) reasons.set(ours.reason.kind, (reasons.get(ours.reason.kind) ?? 0) + 1);
      }
      if (disagree > 0)
        throw new Error(
          `${f.key}: simlab's evaluator and LaunchDarkly's disagree on ${disagree} evaluations ` +
            `of ${contextsCount} contexts`,
        );
    }
    console.log(
      'Equivalence: simlab and LaunchDarkly (sync and awaited) agree on value and reason ' +
        `kind for ${contextsCount} contexts on both flags.`,
    );
    console.log(`Complex-flag outcomes over the pool: ${[...reasons].map(([k, n]) => `${k} ${n}`).join(', ')}\n`);

    const cases = [
      ['simple boolean flag', simple],
      ['10 rules + targets + prerequisite + segment', complex],
    ] as const;
    for (const [name, f] of cases) {
      const ldFlagItem = ld.flag(f.key);
      const timings = {
        oursSync: () => Promise.resolve(timeSync((i) => evaluate(f, contexts[i] as EvalContext, store))),
        ldSync: () => Promise.resolve(timeSync((i) => ld.evaluate(ldFlagItem, ldContexts[i] as LDContext))),
        oursAwaited: () =>
          timeAsync(async (i) => evaluate(store.flag(f.key) as FlagDefinition, contexts[i] as EvalContext, store)),
        ldAwaited: () => timeAsync((i) => client.variationDetail(f.key, ldContexts[i] as LDContext, null)),
      };
      type Key = keyof typeof timings;
      const runs: Record<Key, number[]> = { oursSync: [], ldSync: [], oursAwaited: [], ldAwaited: [] };
      const order: Key[] = ['oursSync', 'ldSync', 'oursAwaited', 'ldAwaited'];
      for (let round = 0; round < rounds; round++) {
        // Alternate the order every round, so neither side always runs first (or after a GC).
        const thisRound = round % 2 === 0 ? order : [...order].reverse();
        for (const k of thisRound) runs[k].push(await timings[k]());
      }
      const ratios = (a: number[], b: number[]) => a.map((x, i) => x / (b[i] as number));
      const fmt = (xs: number[]) =>
        `${Math.round(median(xs)).toLocaleString('en-US')} ` +
        `(${Math.round(Math.min(...xs)).toLocaleString('en-US')}–` +
        `${Math.round(Math.max(...xs)).toLocaleString('en-US')})`;
      const syncRatios = ratios(runs.oursSync, runs.ldSync);
      const awaitedRatios = ratios(runs.oursAwaited, runs.ldAwaited);
      console.log(`${name}:`);
      console.log(
        `  sync     simlab evaluate() ${fmt(runs.oursSync)} evals/s  LD Evaluator.evaluateCb ` +
          `${fmt(runs.ldSync)} evals/s  ratio ${median(syncRatios).toFixed(2)}`,
      );
      console.log(
        `  awaited  simlab (async)    ${fmt(runs.oursAwaited)} evals/s  LD variationDetail     ` +
          `${fmt(runs.ldAwaited)} evals/s  ratio ${median(awaitedRatios).toFixed(2)}`,
      );
      const common =
        `${contextsCount} distinct contexts (the same on both sides, both evaluators checked ` +
        `to agree on every one), ${rounds} rounds of ${secondsPerCase} s per path in ` +
        'alternating order, events off, LaunchDarkly fed offline by TestData';
      recordResult({
        benchmark: 'flags-eval',
        measure: `${name}, synchronous`,
        subject: 'simlab evaluate() (sync)',
        baseline: "LaunchDarkly's internal Evaluator.evaluateCb (sync, in-memory store)",
        unit: 'evals/s',
        runs: runs.oursSync,
        baselineRuns: runs.ldSync,
        ratio: median(syncRatios),
        ratioRuns: syncRatios,
        method:
          `Evaluations per second in one thread, ${common}; simlab gets the flag object and a ` +
          'plain context, LaunchDarkly the flag item from its store (looked up once) and builds ' +
          'its Context from the plain context per call; ratio = simlab ÷ LaunchDarkly (> 1: ' +
          'simlab faster).',
      });
      recordResult({
        benchmark: 'flags-eval',
        measure: `${name}, awaited`,
        subject: 'simlab store lookup + evaluate() in an async function, awaited',
        baseline: "LaunchDarkly's client.variationDetail(), awaited",
        unit: 'evals/s',
        runs: runs.oursAwaited,
        baselineRuns: runs.ldAwaited,
        ratio: median(awaitedRatios),
        ratioRuns: awaitedRatios,
        method:
          `Evaluations per second, one awaited call after another in one thread, ${common}; both ` +
          'sides look the flag up by key per call; ratio = simlab ÷ LaunchDarkly (> 1: simlab faster).',
      });
    }
    chainBenchmark();
    answerBenchmark();
    console.log(
      `\n(${rounds} rounds of ${secondsPerCase}s per path, ${contextsCount} distinct ` +
        `contexts, node ${process.version}; sink ${sink > 0 ? 'ok' : 'empty'})`,
    );
  } finally {
    client.close();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
