// Evaluate-all plans (src/flags/eval/plan.ts, issue 20): the planned path answers exactly what the
// general evaluator answers, on random flag sets (targets, rules over every operator, segments
// present and deleted, prerequisites, rollouts, disabled and malformed flags, broken clauses) and
// random contexts: the same bytes, the same shared result objects, the same reason counts in the
// same order, the same warnings; and a plan follows the environment's changes.
import t from 'tap';
import type { FlagsContext } from '../../src/flags/api/context.js';
import { Evaluator } from '../../src/flags/api/evaluation.js';
import { bulkBody, bulkView } from '../../src/flags/api/ofrep-routes.js';
import { evaluate } from '../../src/flags/eval/evaluate.js';
import { EvalPlan } from '../../src/flags/eval/plan.js';
import type { Clause, ClauseOp, EvalContext, Flag, Segment } from '../../src/flags/model/types.js';
import type { Change } from '../../src/flags/store/types.js';
import { EnvState } from '../../src/flags/stream/replica.js';

/** mulberry32: a small seeded generator, so a failure names a reproducible case. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const stamp = { version: 1, createdAt: '2026-01-01T00:00:00Z', updatedAt: '2026-01-01T00:00:00Z' };
const keys = ['u-1', 'u-2', 'u-3', 'vip', 'u-in', 'u-out', '7'];
const countries = ['NL', 'BE', 'DE', 'FR'];
const versions = ['1.0.0', '2.1', '2.3.0', '3.0.0-beta', 'bogus'];

function gen(seed: number) {
  const r = rng(seed);
  const int = (n: number): number => Math.floor(r() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  const some = <T>(xs: readonly T[], max: number): T[] => Array.from({ length: int(max + 1) }, () => pick(xs));

  const attributeClause = (): Clause => {
    const op = pick<ClauseOp>(['in', 'notIn', 'startsWith', 'gt', 'lte', 'semverGte', 'semverLt', 'matches']);
    const values =
      op === 'in' || op === 'notIn'
        ? some(countries, 2)
        : op === 'startsWith'
          ? some(['u-', 'v', 'N'], 2)
          : op === 'gt' || op === 'lte'
            ? some(['10', '30', 'x'], 2)
            : op === 'matches'
              ? some(['^u-\\d$', '[', 'L$'], 2)
              : some(versions, 2);
    const attribute =
      op === 'in' || op === 'notIn'
        ? 'country'
        : op.startsWith('semver')
          ? 'version'
          : pick(['key', 'age', 'tags', 'country']);
    return { attribute, op, values, ...(r() < 0.2 ? { negate: true } : {}) };
  };

  const segmentKeys = ['s1', 's2', 's3', 'gone'];
  const segments: Segment[] = ['s1', 's2', 's3'].map((key) => ({
    key,
    name: key,
    included: some(keys, 2),
    excluded: some(keys, 1),
    rules: Array.from({ length: int(3) }, () => ({
      clauses:
        r() < 0.1
          ? [{ attribute: '', op: 'segmentMatch' as const, values: ['s1'] }] // never matches, warns
          : Array.from({ length: 1 + int(2) }, attributeClause),
    })),
    ...stamp,
  }));

  const n = 1 + int(12);
  const flagKeys = Array.from({ length: n }, (_, i) => (r() < 0.05 ? `${i}x` : `f${i}`));
  const flags: Flag[] = flagKeys.map((key, i) => {
    const variations = [
      { key: 'a', value: 'alpha' },
      { key: 'b', value: r() < 0.5 ? { nested: [1, 'two', null] } : true },
      { key: 'c', value: 3 },
    ];
    const variation = (): string => (r() < 0.03 ? 'missing' : pick(['a', 'b', 'c']));
    const clause = (): Clause => {
      const x = r();
      if (x < 0.3)
        return {
          attribute: '',
          op: 'segmentMatch',
          values: some(segmentKeys, 2),
          ...(r() < 0.2 ? { negate: true } : {}),
        };
      if (x < 0.33) return { attribute: 'country', op: 'nosuchop' as ClauseOp, values: ['NL'] };
      return attributeClause();
    };
    const split = int(100001);
    return {
      key,
      name: key,
      type: 'string',
      enabled: r() < 0.85,
      defaultVariation: r() < 0.03 ? 'missing' : 'a',
      variations,
      targets: Array.from({ length: int(3) }, () => ({ contextKeys: some(keys, 2), variation: variation() })),
      prerequisites:
        r() < 0.25 && i + 1 < n ? [{ flagKey: pick(flagKeys.slice(i + 1)), variation: pick(['a', 'b']) }] : [],
      rules: Array.from({ length: int(4) }, (_, j) => ({
        id: `r${j}`,
        clauses: Array.from({ length: int(3) }, clause),
        variation: variation(),
      })),
      rollout:
        r() < 0.5
          ? [
              { variation: variation(), weight: split },
              { variation: variation(), weight: 100000 - split },
            ]
          : [],
      ...(r() < 0.3 ? { bucketBy: pick(['key', 'age', 'country', 'nope']) } : {}),
      ...(r() < 0.2 ? { seed: `seed-${int(5)}` } : {}),
      ...stamp,
    };
  });

  const context = (): EvalContext => {
    const c: Record<string, EvalContext[string]> = {};
    const k = r();
    if (k < 0.8) c['key'] = pick(keys);
    else if (k < 0.9) c['key'] = 7 as unknown as string;
    if (r() < 0.8) c['country'] = r() < 0.2 ? some(countries, 2) : pick(countries);
    if (r() < 0.7) c['version'] = pick(versions);
    if (r() < 0.5) c['age'] = r() < 0.5 ? int(50) : String(int(50));
    if (r() < 0.3) c['tags'] = some(['u-1', 'vip', 'x'], 3);
    return c as EvalContext;
  };
  return { flags, segments, context };
}

function evaluator(): {
  evaluator: Evaluator;
  warnings: string[];
  byReason: Map<string, number>;
  codes: Map<string, number>;
} {
  const warnings: string[] = [];
  const byReason = new Map<string, number>();
  const codes = new Map<string, number>();
  const ctx = {
    metrics: { evalCounts: { byReason, warnings: codes } },
    logger: { warn: (_fields: unknown, message: string) => warnings.push(message) },
    now: () => 0,
  } as unknown as FlagsContext;
  return { evaluator: new Evaluator(ctx), warnings, byReason, codes };
}

t.test('the planned answer equals the general evaluator on random flags and contexts', async (t) => {
  let checked = 0;
  let planned = 0;
  let general = 0;
  for (let seed = 1; seed <= 400; seed++) {
    const g = gen(seed);
    const env = new EnvState('p', 'e', { flags: g.flags, segments: g.segments, seq: 1 });
    const fast = evaluator();
    const slow = evaluator();
    const plan = new EvalPlan(env.flags.values(), env);
    for (const e of plan.entries) e.fast === undefined ? general++ : planned++;
    for (let i = 0; i < 12; i++) {
      // Every context twice in a row now and then: the second answer may be the reused one.
      const context = g.context();
      for (const repeat of i % 3 === 0 ? [0, 1] : [0]) {
        const got = fast.evaluator.answer(env, { context }).raw;
        const want = JSON.stringify(slow.evaluator.run(env, { context }));
        if (got !== want) {
          t.equal(got, want, `seed ${seed} context ${JSON.stringify(context)}${repeat ? ' (repeated)' : ''}`);
          return;
        }
        checked++;
      }
      // The plan's shared results are the evaluator's, object for object.
      const run = plan.begin(context);
      for (const e of plan.entries) {
        if (e.fast === undefined) continue;
        const r = run.result(e.fast);
        if (r !== evaluate(e.flag, context, env)) {
          t.fail(`seed ${seed} flag ${e.flag.key}: ${JSON.stringify(r)} from the plan`);
          return;
        }
      }
      // OFREP's bulk walk (eachAnswer) sees the same answers in the same order.
      const seen: string[] = [];
      fast.evaluator.eachAnswer(env, { context }, (key, r) => seen.push(`${key}=${JSON.stringify(r)}`));
      const flags = slow.evaluator.run(env, { context }).flags;
      const expected = Object.keys(flags).map((k) => `${k}=${JSON.stringify(flags[k])}`);
      if (seen.join('\n') !== expected.join('\n')) {
        t.same(seen, expected, `seed ${seed}: eachAnswer`);
        return;
      }
    }
    // Reason counts: each context went through answer and eachAnswer on `fast`, run twice on `slow`.
    const got = [...fast.byReason];
    const want = [...slow.byReason];
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      t.same(got, want, `seed ${seed}: reason counts, in the order they were first met`);
      return;
    }
    if (JSON.stringify([...fast.codes]) !== JSON.stringify([...slow.codes])) {
      t.same([...fast.codes], [...slow.codes], `seed ${seed}: warning counts`);
      return;
    }
    if (fast.warnings.join('\n') !== slow.warnings.join('\n')) {
      t.same(fast.warnings, slow.warnings, `seed ${seed}: warnings logged`);
      return;
    }
  }
  t.ok(checked > 5000, `${checked} answers compared`);
  t.ok(planned > 500 && general > 300, `both paths taken (${planned} planned flags, ${general} general)`);
});

t.test('a plan follows the changes applied to its environment', async (t) => {
  const { flags, segments } = gen(7);
  const base = flags.map((f) => ({ ...f, prerequisites: [], enabled: true }));
  const env = new EnvState('p', 'e', { flags: base, segments, seq: 1 });
  const fast = evaluator();
  const slow = evaluator();
  const context = { key: 'u-1', country: 'NL', version: '2.3.0' };
  const same = (what: string): void =>
    t.equal(fast.evaluator.answer(env, { context }).raw, JSON.stringify(slow.evaluator.run(env, { context })), what);
  same('before any change');
  let seq = 1;
  const change = (c: Pick<Change, 'resource' | 'op' | 'key' | 'data'>): void =>
    env.apply({ seq: ++seq, projectKey: 'p', environmentKey: c.resource === 'flag' ? 'e' : null, version: seq, ...c });
  const first = base[0] as Flag;
  change({
    resource: 'flag',
    op: 'upsert',
    key: first.key,
    data: { ...first, version: 2, targets: [{ contextKeys: ['u-1'], variation: 'c' }] },
  });
  same('after a flag update (a new target for the context)');
  t.match(fast.evaluator.answer(env, { context }).raw, /"variation":"c","reason":\{"kind":"TARGET_MATCH"\}/);
  change({
    resource: 'segment',
    op: 'upsert',
    key: 's1',
    data: { ...(segments[0] as Segment), included: ['u-1'], excluded: [], version: 2 },
  });
  same('after a segment update');
  change({ resource: 'segment', op: 'delete', key: 's2', data: null });
  same('after a segment delete (its clauses now warn and do not match)');
  change({ resource: 'flag', op: 'upsert', key: 'added', data: { ...first, key: 'added', name: 'added' } });
  same('after a flag create');
  change({ resource: 'flag', op: 'delete', key: first.key, data: null });
  same('after a flag delete');
  t.same(fast.warnings, slow.warnings, 'the same warnings logged');
});

t.test(
  "OFREP's bulk answer from the plan equals the one written flag by flag; its ETag follows its body",
  async (t) => {
    let planned = 0;
    let general = 0;
    let distinct = 0;
    /** Every ETag met, with its body: one body per ETag across every environment and revision. */
    const bodyOf = new Map<string, string>();
    for (let seed = 1; seed <= 800; seed++) {
      const g = gen(seed >> 1);
      // Odd seeds: the same flags without prerequisites or keys JSON.stringify reorders (mostly planned).
      const flags =
        seed % 2 === 0
          ? g.flags
          : g.flags.map((f) => ({ ...f, key: /^\d/.test(f.key) ? `k${f.key}` : f.key, prerequisites: [] }));
      const env = new EnvState('p', 'e', { flags, segments: g.segments, seq: 1 });
      const fast = evaluator();
      const slow = evaluator();
      /** Within one revision: one ETag per body. */
      const etagOf = new Map<string, string>();
      for (let i = 0; i < 12; i++) {
        const context = g.context();
        for (const repeat of i % 3 === 0 ? [0, 1] : [0]) {
          const got = fast.evaluator.planned(env, context, bulkView);
          const want = bulkBody(slow.evaluator, env, context);
          if (got === undefined) {
            general++;
            bulkBody(fast.evaluator, env, context); // counted as the route counts it
            continue;
          }
          planned++;
          const where = `seed ${seed} context ${JSON.stringify(context)}${repeat ? ' (repeated)' : ''}`;
          if (got.body !== want) {
            t.equal(got.body, want, where);
            return;
          }
          if (!/^"[\w-]{27}\.\w+"$/.test(got.etag)) {
            t.fail(`${where}: ETag ${got.etag}`);
            return;
          }
          if ((bodyOf.get(got.etag) ?? got.body) !== got.body || (etagOf.get(got.body) ?? got.etag) !== got.etag) {
            t.fail(`${where}: ETag ${got.etag} for ${got.body}`);
            return;
          }
          if (!etagOf.has(got.body)) distinct++;
          bodyOf.set(got.etag, got.body);
          etagOf.set(got.body, got.etag);
          if (!got.bytes.equals(Buffer.from(want))) {
            t.fail(`${where}: the bytes are not the body's`);
            return;
          }
          if (got.ok['etag'] !== got.etag || got.notModified['etag'] !== got.etag) {
            t.same(
              [got.ok, got.notModified],
              [{ 'content-type': 'application/json', etag: got.etag }, { etag: got.etag }],
            );
            return;
          }
        }
        // evaluate-all between two OFREP answers: each keeps its own last answer.
        if (i % 4 === 1) {
          const all = fast.evaluator.answer(env, { context }).raw;
          if (all !== JSON.stringify(slow.evaluator.run(env, { context }))) {
            t.equal(all, JSON.stringify(slow.evaluator.run(env, { context })), `seed ${seed}: evaluate-all between`);
            return;
          }
        }
      }
      if (JSON.stringify([...fast.byReason]) !== JSON.stringify([...slow.byReason])) {
        t.same([...fast.byReason], [...slow.byReason], `seed ${seed}: reason counts, in the order they were first met`);
        return;
      }
      if (fast.warnings.join('\n') !== slow.warnings.join('\n')) {
        t.same(fast.warnings, slow.warnings, `seed ${seed}: warnings logged`);
        return;
      }
    }
    t.ok(planned > 1500 && general > 1500, `both paths taken (${planned} planned answers, ${general} flag by flag)`);
    t.ok(distinct > 300, `${distinct} distinct bodies, each with its own ETag`);
  },
);

t.test("OFREP's planned ETag: a long list of outcomes is hashed, and a change of the body changes it", async (t) => {
  const { flags, segments } = gen(11);
  const first = { ...(flags[0] as Flag), prerequisites: [], enabled: true };
  const many = Array.from({ length: 70 }, (_, i) => ({ ...first, key: `k${i}`, name: `k${i}` }));
  const env = new EnvState('p', 'e', { flags: many, segments, seq: 1 });
  const { evaluator: e } = evaluator();
  const context = { key: 'u-1', country: 'NL', version: '2.3.0' };
  const a = e.planned(env, context, bulkView);
  t.ok(a);
  t.match(a?.etag, /^"[\w-]{27}"$/, 'seventy flags: the codes hashed');
  t.equal(e.planned(env, context, bulkView), a, 'the same outcomes: the last answer');
  t.equal(a?.body, bulkBody(evaluator().evaluator, env, context));
  const change = (seq: number, data: Flag): void =>
    env.apply({
      seq,
      projectKey: 'p',
      environmentKey: 'e',
      version: seq,
      resource: 'flag',
      op: 'upsert',
      key: data.key,
      data,
    });
  // A change the answer does not show (the name): the same body, the same ETag.
  change(2, { ...(many[3] as Flag), name: 'renamed', version: 2 });
  const renamed = e.planned(env, context, bulkView);
  t.not(renamed, a, 'a new revision writes its answer again');
  t.equal(renamed?.body, a?.body);
  t.equal(renamed?.etag, a?.etag, 'same body, same ETag');
  // A change the answer shows (the context is now a target): another body, another ETag.
  change(3, { ...(many[3] as Flag), targets: [{ contextKeys: ['u-1'], variation: 'c' }], version: 3 });
  const targeted = e.planned(env, context, bulkView);
  t.not(targeted?.body, a?.body);
  t.not(targeted?.etag, a?.etag, 'another body, another ETag');
  t.equal(targeted?.body, bulkBody(evaluator().evaluator, env, context));
});
