/**
 * Evaluations per second of our pure flag evaluator against LaunchDarkly's Node server SDK
 * evaluating the equivalent flags offline (TestData source, events off), in the same run:
 * (a) a simple boolean flag, (b) a flag with 10 rules, targets, a prerequisite and a segment.
 * It also checks both give the same variation for every context, so the race is between equals.
 * Each figure is the best of 3 interleaved rounds (LD, ours, ours awaited, repeated), so load from
 * other processes on the machine penalises both sides alike.
 * Run: npx tsc -p tsconfig.json && node dist/benchmarks/flags-eval.js [seconds per measurement, default 0.5]
 */
import { init, integrations } from '@launchdarkly/node-server-sdk';
import { compileFlag, evaluate, type EvalStore } from '../src/flags/eval/evaluate.js';
import type { Clause, ClauseOp, EvalContext, FlagDefinition, SegmentDefinition } from '../src/flags/model/types.js';

const secondsPerCase = Number(process.argv[2] ?? 0.5);
const rounds = 3;
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
  return { attribute: c.op === 'segmentMatch' ? 'key' : c.attribute, op, values, negate: c.negate === true, contextKind: 'user' };
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
    rules: f.rules.map((r) => ({ id: r.id, clauses: r.clauses.map(ldClause), variation: index(r.variation), trackEvents: false })),
    prerequisites: f.prerequisites.map((p) => ({ key: p.flagKey, variation: (flags.get(p.flagKey) as FlagDefinition).variations.findIndex((v) => v.key === p.variation) })),
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

// ---- timing

let sink = 0;

function timeSync(run: (i: number) => unknown): number {
  const deadline = process.hrtime.bigint() + BigInt(Math.round(secondsPerCase * 1e9));
  const start = process.hrtime.bigint();
  let n = 0;
  for (;;) {
    for (let j = 0; j < 10000; j++, n++) if (run(n % contextsCount) !== undefined) sink++;
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

async function main(): Promise<void> {
  const td = new integrations.TestData();
  for (const f of [simple, gate, complex]) await td.usePreconfiguredFlag(ldFlag(f));
  await td.usePreconfiguredSegment(ldSegment(beta));
  const client = init('sdk-key', { updateProcessor: td.getFactory(), sendEvents: false, diagnosticOptOut: true, logger: silent });
  await client.waitForInitialization({ timeout: 5 });

  try {
    // Equivalence first: both must serve the same value for every context of the pool.
    const reasons = new Map<string, number>();
    for (const f of [simple, complex]) {
      compileFlag(f);
      let disagree = 0;
      for (let i = 0; i < contextsCount; i++) {
        const ours = evaluate(f, contexts[i] as EvalContext, store);
        const theirs = await client.variationDetail(f.key, ldContexts[i] as (typeof ldContexts)[number], null);
        if (ours.value !== theirs.value || ours.reason.kind !== theirs.reason.kind) disagree++;
        if (f === complex) reasons.set(ours.reason.kind, (reasons.get(ours.reason.kind) ?? 0) + 1);
      }
      if (disagree > 0) throw new Error(`${f.key}: our evaluator and LaunchDarkly's disagree on ${disagree}/${contextsCount} contexts`);
    }
    console.log(`Equivalence: both evaluators agree on value and reason kind for ${contextsCount} contexts on both flags.`);
    console.log(`Complex-flag outcomes over the pool: ${[...reasons].map(([k, n]) => `${k} ${n}`).join(', ')}\n`);

    const rows: { name: string; ours: number; oursAwaited: number; ld: number }[] = [];
    for (const [name, f] of [
      ['simple boolean flag', simple],
      ['10 rules + targets + prerequisite + segment', complex],
    ] as const) {
      const row = { name, ours: 0, oursAwaited: 0, ld: 0 };
      for (let round = 0; round < rounds; round++) {
        row.ld = Math.max(row.ld, await timeAsync((i) => client.variationDetail(f.key, ldContexts[i] as (typeof ldContexts)[number], null)));
        row.ours = Math.max(row.ours, timeSync((i) => evaluate(f, contexts[i] as EvalContext, store)));
        // The same evaluator behind an await, to show the gap is not only LaunchDarkly's async API.
        row.oursAwaited = Math.max(row.oursAwaited, await timeAsync(async (i) => evaluate(f, contexts[i] as EvalContext, store)));
      }
      rows.push(row);
    }

    const fmt = (n: number) => Math.round(n).toLocaleString('en-US').padStart(12);
    console.log(`${'flag'.padEnd(46)}${'ours evals/s'.padStart(14)}${'ours awaited'.padStart(14)}${'LD SDK evals/s'.padStart(16)}${'ours/LD'.padStart(10)}${'awaited/LD'.padStart(12)}`);
    for (const r of rows) {
      console.log(
        `${r.name.padEnd(46)}${fmt(r.ours)}  ${fmt(r.oursAwaited)}  ${fmt(r.ld)}    ${(r.ours / r.ld).toFixed(1).padStart(6)}x${(r.oursAwaited / r.ld).toFixed(1).padStart(10)}x`,
      );
    }
    console.log(`\n(best of ${rounds} rounds of ${secondsPerCase}s, ${contextsCount} distinct contexts, node ${process.version}; sink ${sink > 0 ? 'ok' : 'empty'})`);
  } finally {
    client.close();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
