// Evaluation: every operator (negate, missing and array attributes, numeric strings, bad regexes,
// semver edge cases), prerequisites, target/rule priority, segments, rollouts and bucketing.
import t from 'tap';
import { createHash } from 'node:crypto';
import { evaluate, evaluateAll, compileFlag, type EvalStore, type EvalWarning } from '../../src/flags/eval/evaluate.js';
import { bucketOfHashInput, bucketWithSalt } from '../../src/flags/eval/bucket.js';
import type { Clause, EvalContext, FlagDefinition, SegmentDefinition } from '../../src/flags/model/types.js';

function flag(over: Partial<FlagDefinition> = {}): FlagDefinition {
  return {
    key: 'f',
    name: 'f',
    type: 'string',
    enabled: true,
    defaultVariation: 'a',
    variations: [
      { key: 'a', value: 'A' },
      { key: 'b', value: 'B' },
      { key: 'c', value: 'C' },
    ],
    targets: [],
    prerequisites: [],
    rules: [],
    rollout: [],
    ...over,
  };
}

function segment(over: Partial<SegmentDefinition> & { key: string }): SegmentDefinition {
  return { name: over.key, included: [], excluded: [], rules: [], ...over };
}

function storeOf(flags: FlagDefinition[] = [], segments: SegmentDefinition[] = []): EvalStore {
  const fm = new Map(flags.map((f) => [f.key, f]));
  const sm = new Map(segments.map((s) => [s.key, s]));
  return { flag: (k) => fm.get(k), segment: (k) => sm.get(k) };
}

const segments = [
  segment({ key: 'beta', included: ['u-inc', 'u-both'], excluded: ['u-exc', 'u-both'] }),
  segment({
    key: 'ruled',
    excluded: ['u-blocked'],
    rules: [
      // OR between rules, AND inside one.
      {
        clauses: [
          { attribute: 'country', op: 'in', values: ['NZ'] },
          { attribute: 'plan', op: 'in', values: ['pro'] },
        ],
      },
      { clauses: [{ attribute: 'email', op: 'endsWith', values: ['@corp.example'] }] },
    ],
  }),
];

interface OpCase {
  name: string;
  clause: Clause;
  context: EvalContext;
  match: boolean;
}

const c = (attribute: string, op: Clause['op'], values: string[], negate?: boolean): Clause =>
  negate === undefined ? { attribute, op, values } : { attribute, op, values, negate };

const opCases: OpCase[] = [
  // in / notIn, missing attributes, arrays, negate
  {
    name: 'in matches an equal string',
    clause: c('country', 'in', ['NZ', 'AU']),
    context: { key: 'u', country: 'AU' },
    match: true,
  },
  {
    name: 'in does not match a different string',
    clause: c('country', 'in', ['NZ']),
    context: { key: 'u', country: 'nz' },
    match: false,
  },
  { name: 'in matches the context key attribute', clause: c('key', 'in', ['u1']), context: { key: 'u1' }, match: true },
  {
    name: 'in compares a number attribute numerically with a numeric string',
    clause: c('age', 'in', ['30.0']),
    context: { key: 'u', age: 30 },
    match: true,
  },
  {
    name: 'in matches a boolean attribute against "true"',
    clause: c('staff', 'in', ['true']),
    context: { key: 'u', staff: true },
    match: true,
  },
  {
    name: 'in matches an array attribute when any element matches',
    clause: c('groups', 'in', ['beta']),
    context: { key: 'u', groups: ['x', 'beta'] },
    match: true,
  },
  {
    name: 'in does not match an array attribute with no matching element',
    clause: c('groups', 'in', ['beta']),
    context: { key: 'u', groups: ['x', 'y'] },
    match: false,
  },
  {
    name: 'in with no values never matches',
    clause: c('country', 'in', []),
    context: { key: 'u', country: 'NZ' },
    match: false,
  },
  {
    name: 'a missing attribute never matches',
    clause: c('country', 'in', ['NZ']),
    context: { key: 'u' },
    match: false,
  },
  {
    name: 'a missing attribute never matches even negated',
    clause: c('country', 'in', ['NZ'], true),
    context: { key: 'u' },
    match: false,
  },
  {
    name: 'a null attribute counts as missing',
    clause: c('country', 'in', ['NZ'], true),
    context: { key: 'u', country: null },
    match: false,
  },
  {
    name: 'an inherited member such as toString counts as missing',
    clause: c('toString', 'in', ['x'], true),
    context: { key: 'u' },
    match: false,
  },
  {
    name: 'negate inverts a match',
    clause: c('country', 'in', ['NZ'], true),
    context: { key: 'u', country: 'NZ' },
    match: false,
  },
  {
    name: 'negate inverts a non-match',
    clause: c('country', 'in', ['NZ'], true),
    context: { key: 'u', country: 'AU' },
    match: true,
  },
  {
    name: 'notIn matches a value outside the list',
    clause: c('country', 'notIn', ['NZ', 'AU']),
    context: { key: 'u', country: 'FR' },
    match: true,
  },
  {
    name: 'notIn does not match a listed value',
    clause: c('country', 'notIn', ['NZ', 'AU']),
    context: { key: 'u', country: 'NZ' },
    match: false,
  },
  {
    name: 'notIn on an array does not match when any element is listed',
    clause: c('groups', 'notIn', ['internal']),
    context: { key: 'u', groups: ['beta', 'internal'] },
    match: false,
  },
  {
    name: 'notIn on an array matches when no element is listed',
    clause: c('groups', 'notIn', ['internal']),
    context: { key: 'u', groups: ['beta'] },
    match: true,
  },
  {
    name: 'notIn never matches a missing attribute',
    clause: c('country', 'notIn', ['NZ']),
    context: { key: 'u' },
    match: false,
  },
  {
    name: 'negated notIn behaves as in',
    clause: c('country', 'notIn', ['NZ'], true),
    context: { key: 'u', country: 'NZ' },
    match: true,
  },
  // string operators
  {
    name: 'startsWith matches a prefix',
    clause: c('email', 'startsWith', ['zz', 'ad']),
    context: { key: 'u', email: 'admin@x' },
    match: true,
  },
  {
    name: 'startsWith does not match elsewhere',
    clause: c('email', 'startsWith', ['min']),
    context: { key: 'u', email: 'admin@x' },
    match: false,
  },
  {
    name: 'endsWith matches a suffix',
    clause: c('email', 'endsWith', ['@x']),
    context: { key: 'u', email: 'admin@x' },
    match: true,
  },
  {
    name: 'endsWith negated matches another suffix',
    clause: c('email', 'endsWith', ['@y'], true),
    context: { key: 'u', email: 'admin@x' },
    match: true,
  },
  {
    name: 'contains matches a substring',
    clause: c('email', 'contains', ['min@']),
    context: { key: 'u', email: 'admin@x' },
    match: true,
  },
  {
    name: 'string operators ignore number attributes',
    clause: c('age', 'contains', ['3']),
    context: { key: 'u', age: 30 },
    match: false,
  },
  {
    name: 'matches tests a regular expression',
    clause: c('email', 'matches', ['^[a-z]+@x$']),
    context: { key: 'u', email: 'admin@x' },
    match: true,
  },
  {
    name: 'matches does not match a failing expression',
    clause: c('email', 'matches', ['^\\d+$']),
    context: { key: 'u', email: 'admin@x' },
    match: false,
  },
  {
    name: 'an invalid regex never matches and never throws',
    clause: c('email', 'matches', ['([a-z']),
    context: { key: 'u', email: '([a-z' },
    match: false,
  },
  {
    name: 'an invalid regex beside a valid one leaves the valid one working',
    clause: c('email', 'matches', ['(', 'x$']),
    context: { key: 'u', email: 'admin@x' },
    match: true,
  },
  {
    name: 'matches on an array attribute matches any element',
    clause: c('tags', 'matches', ['^v\\d']),
    context: { key: 'u', tags: ['a', 'v2'] },
    match: true,
  },
  // numbers
  {
    name: 'lt compares a number attribute with a numeric string',
    clause: c('age', 'lt', ['18']),
    context: { key: 'u', age: 17 },
    match: true,
  },
  { name: 'lt is strict', clause: c('age', 'lt', ['18']), context: { key: 'u', age: 18 }, match: false },
  { name: 'lte includes equality', clause: c('age', 'lte', ['18']), context: { key: 'u', age: 18 }, match: true },
  {
    name: 'gt accepts a numeric string attribute',
    clause: c('age', 'gt', ['18']),
    context: { key: 'u', age: '18.5' },
    match: true,
  },
  { name: 'gt is strict', clause: c('age', 'gt', ['18']), context: { key: 'u', age: 18 }, match: false },
  {
    name: 'gte includes equality with decimals',
    clause: c('score', 'gte', ['2.5']),
    context: { key: 'u', score: 2.5 },
    match: true,
  },
  {
    name: 'gt matches when any value is exceeded',
    clause: c('age', 'gt', ['99', '10']),
    context: { key: 'u', age: 50 },
    match: true,
  },
  {
    name: 'a non-numeric attribute never matches a number operator',
    clause: c('age', 'gt', ['1']),
    context: { key: 'u', age: 'old' },
    match: false,
  },
  {
    name: 'an empty string is not the number zero',
    clause: c('age', 'lt', ['1']),
    context: { key: 'u', age: '' },
    match: false,
  },
  {
    name: 'a boolean attribute never matches a number operator',
    clause: c('age', 'lt', ['5']),
    context: { key: 'u', age: true },
    match: false,
  },
  {
    name: 'an unparsable clause value never matches',
    clause: c('age', 'lt', ['lots']),
    context: { key: 'u', age: 1 },
    match: false,
  },
  {
    name: 'number operators on arrays match any element',
    clause: c('scores', 'gt', ['90']),
    context: { key: 'u', scores: [10, 95] },
    match: true,
  },
  // dates
  {
    name: 'before compares RFC 3339 date-times',
    clause: c('signup', 'before', ['2024-01-01T00:00:00Z']),
    context: { key: 'u', signup: '2023-12-31T23:59:59Z' },
    match: true,
  },
  {
    name: 'before is strict',
    clause: c('signup', 'before', ['2024-01-01T00:00:00Z']),
    context: { key: 'u', signup: '2024-01-01T00:00:00Z' },
    match: false,
  },
  {
    name: 'after honours time-zone offsets',
    clause: c('signup', 'after', ['2024-01-01T00:00:00Z']),
    context: { key: 'u', signup: '2024-01-01T00:30:00-01:00' },
    match: true,
  },
  {
    name: 'after accepts a Unix-ms number attribute',
    clause: c('signup', 'after', ['2024-01-01T00:00:00Z']),
    context: { key: 'u', signup: 1704067200001 },
    match: true,
  },
  {
    name: 'before accepts Unix-ms clause values',
    clause: c('signup', 'before', ['1704067200000']),
    context: { key: 'u', signup: '2023-06-01T12:00:00.5Z' },
    match: true,
  },
  {
    name: 'an unparsable date attribute never matches',
    clause: c('signup', 'before', ['2024-01-01T00:00:00Z']),
    context: { key: 'u', signup: 'yesterday' },
    match: false,
  },
  {
    name: 'a date without a time zone is not RFC 3339 and never matches',
    clause: c('signup', 'before', ['2030-01-01T00:00:00Z']),
    context: { key: 'u', signup: '2024-01-01T00:00:00' },
    match: false,
  },
  {
    name: 'after reads a lower-case t and z',
    clause: c('signup', 'after', ['2024-01-01 00:00:00Z']),
    context: { key: 'u', signup: '2024-01-01t00:00:00.001z' },
    match: true,
  },
  {
    name: 'fractions beyond milliseconds are truncated',
    clause: c('signup', 'before', ['2024-01-01T00:00:00.124Z']),
    context: { key: 'u', signup: '2024-01-01T00:00:00.123999Z' },
    match: true,
  },
  {
    name: 'a month 13 date never matches',
    clause: c('signup', 'before', ['2030-01-01T00:00:00Z']),
    context: { key: 'u', signup: '2024-13-01T00:00:00Z' },
    match: false,
  },
  {
    name: 'a date in year 0050 is read literally, not as 1950',
    clause: c('signup', 'before', ['1900-01-01T00:00:00Z']),
    context: { key: 'u', signup: '0050-06-15T12:00:00Z' },
    match: true,
  },
  {
    name: 'an unparsable date value never matches',
    clause: c('signup', 'after', ['soon']),
    context: { key: 'u', signup: 1 },
    match: false,
  },
  // semver
  {
    name: 'semverEq reads 2 as 2.0.0',
    clause: c('version', 'semverEq', ['2']),
    context: { key: 'u', version: '2.0.0' },
    match: true,
  },
  {
    name: 'semverEq reads 2.1 as 2.1.0 on the attribute side too',
    clause: c('version', 'semverEq', ['2.1.0']),
    context: { key: 'u', version: '2.1' },
    match: true,
  },
  {
    name: 'semverEq ignores build metadata',
    clause: c('version', 'semverEq', ['1.2.3+build.5']),
    context: { key: 'u', version: '1.2.3' },
    match: true,
  },
  {
    name: 'semverLt orders a prerelease before its release',
    clause: c('version', 'semverLt', ['2.0.0']),
    context: { key: 'u', version: '2.0.0-rc.1' },
    match: true,
  },
  {
    name: 'semverLt is strict',
    clause: c('version', 'semverLt', ['2.0.0']),
    context: { key: 'u', version: '2.0.0' },
    match: false,
  },
  {
    name: 'semverLte includes equality',
    clause: c('version', 'semverLte', ['2.0']),
    context: { key: 'u', version: '2.0.0' },
    match: true,
  },
  {
    name: 'semverGt compares numerically, not as text',
    clause: c('version', 'semverGt', ['1.9.0']),
    context: { key: 'u', version: '1.10.0' },
    match: true,
  },
  {
    name: 'semverGte accepts a partial version with a prerelease',
    clause: c('version', 'semverGte', ['2-beta']),
    context: { key: 'u', version: '2.0.0-beta' },
    match: true,
  },
  {
    name: 'semverGt accepts a leading v',
    clause: c('version', 'semverGt', ['1.0.0']),
    context: { key: 'u', version: 'v1.0.1' },
    match: true,
  },
  {
    name: 'an unparsable version attribute never matches',
    clause: c('version', 'semverGt', ['1.0.0']),
    context: { key: 'u', version: 'latest' },
    match: false,
  },
  {
    name: 'an unparsable version value never matches',
    clause: c('version', 'semverLt', ['x.y']),
    context: { key: 'u', version: '1.0.0' },
    match: false,
  },
  {
    name: 'a four-part version is unparsable',
    clause: c('version', 'semverGt', ['1.0.0']),
    context: { key: 'u', version: '1.2.3.4' },
    match: false,
  },
  // segmentMatch
  {
    name: 'segmentMatch matches an included key',
    clause: c('', 'segmentMatch', ['beta']),
    context: { key: 'u-inc' },
    match: true,
  },
  {
    name: 'segmentMatch: excluded overrides included',
    clause: c('', 'segmentMatch', ['beta']),
    context: { key: 'u-both' },
    match: false,
  },
  {
    name: 'segmentMatch: an excluded key is out',
    clause: c('', 'segmentMatch', ['beta']),
    context: { key: 'u-exc' },
    match: false,
  },
  {
    name: 'segmentMatch: a key in no list and no rule is out',
    clause: c('', 'segmentMatch', ['beta']),
    context: { key: 'u-other' },
    match: false,
  },
  {
    name: 'segmentMatch: a rule matches when all its clauses match',
    clause: c('', 'segmentMatch', ['ruled']),
    context: { key: 'u', country: 'NZ', plan: 'pro' },
    match: true,
  },
  {
    name: 'segmentMatch: a rule with one failing clause does not match',
    clause: c('', 'segmentMatch', ['ruled']),
    context: { key: 'u', country: 'NZ', plan: 'free' },
    match: false,
  },
  {
    name: 'segmentMatch: any matching rule suffices',
    clause: c('', 'segmentMatch', ['ruled']),
    context: { key: 'u', email: 'a@corp.example' },
    match: true,
  },
  {
    name: 'segmentMatch: excluded overrides rules',
    clause: c('', 'segmentMatch', ['ruled']),
    context: { key: 'u-blocked', email: 'a@corp.example' },
    match: false,
  },
  {
    name: 'segmentMatch: rules apply to a context without a key',
    clause: c('', 'segmentMatch', ['ruled']),
    context: { email: 'a@corp.example' },
    match: true,
  },
  {
    name: 'segmentMatch matches membership of any listed segment',
    clause: c('', 'segmentMatch', ['beta', 'ruled']),
    context: { key: 'u', email: 'a@corp.example' },
    match: true,
  },
  {
    name: 'segmentMatch negated matches a non-member',
    clause: c('', 'segmentMatch', ['beta'], true),
    context: { key: 'u-other' },
    match: true,
  },
  {
    name: 'segmentMatch negated does not match a member',
    clause: c('', 'segmentMatch', ['beta'], true),
    context: { key: 'u-inc' },
    match: false,
  },
];

t.test('each operator matches or not as ../shared/specs/DECISIONS.md defines', async (t) => {
  const store = storeOf([], segments);
  for (const oc of opCases) {
    const f = flag({ rules: [{ id: 'r', clauses: [oc.clause], variation: 'b' }] });
    const warnings: EvalWarning[] = [];
    let r;
    try {
      r = evaluate(f, oc.context, store, { onWarning: (w) => warnings.push(w) });
    } catch (e) {
      t.fail(`${oc.name}: threw ${String(e)}`);
      continue;
    }
    t.equal(r.variation, oc.match ? 'b' : 'a', oc.name);
    t.same(r.reason, oc.match ? { kind: 'RULE_MATCH', ruleId: 'r' } : { kind: 'FALLTHROUGH' }, `${oc.name} (reason)`);
    t.equal(warnings.length, 0, `${oc.name} (no warnings)`);
  }
});

t.test('a segmentMatch on a deleted segment does not match and reports a warning', async (t) => {
  const f = flag({ rules: [{ id: 'seg', clauses: [c('', 'segmentMatch', ['gone', 'beta'])], variation: 'b' }] });
  const cases = [
    { name: 'a non-member of the remaining segment falls through', key: 'u-other', variation: 'a' },
    { name: 'a member of the remaining segment still matches', key: 'u-inc', variation: 'b' },
  ];
  for (const cs of cases) {
    const warnings: EvalWarning[] = [];
    const r = evaluate(f, { key: cs.key }, storeOf([], segments), { onWarning: (w) => warnings.push(w) });
    t.equal(r.variation, cs.variation, cs.name);
    t.equal(warnings.length, 1, `${cs.name}: one warning`);
    t.match(
      warnings[0],
      { code: 'SEGMENT_NOT_FOUND', flagKey: 'f', segmentKey: 'gone' },
      `${cs.name}: the warning names the segment`,
    );
  }
  const negated = flag({ rules: [{ id: 'seg', clauses: [c('', 'segmentMatch', ['gone'], true)], variation: 'b' }] });
  t.equal(
    evaluate(negated, { key: 'u' }, storeOf()).variation,
    'b',
    'a negated clause on only-deleted segments matches (no membership) and needs no onWarning to run',
  );
});

t.test('a segmentMatch clause inside a segment never matches and warns', async (t) => {
  const nested = segment({ key: 'outer', rules: [{ clauses: [c('', 'segmentMatch', ['beta'])] }] });
  const f = flag({ rules: [{ id: 'r', clauses: [c('', 'segmentMatch', ['outer'])], variation: 'b' }] });
  const warnings: EvalWarning[] = [];
  const r = evaluate(f, { key: 'u-inc' }, storeOf([], [...segments, nested]), { onWarning: (w) => warnings.push(w) });
  t.equal(r.variation, 'a');
  t.equal(warnings[0]?.code, 'SEGMENT_IN_SEGMENT');
});

t.test('evaluation follows the order off, prerequisites, targets, rules, rollout, default', async (t) => {
  const always: Clause = c('key', 'startsWith', ['']);
  const cases: { name: string; f: FlagDefinition; ctx: EvalContext; variation: string; reason: object }[] = [
    {
      name: 'a disabled flag serves the default variation with reason OFF, whatever its targets',
      f: flag({ enabled: false, targets: [{ contextKeys: ['u'], variation: 'b' }] }),
      ctx: { key: 'u' },
      variation: 'a',
      reason: { kind: 'OFF' },
    },
    {
      name: 'a target beats a matching rule',
      f: flag({
        targets: [{ contextKeys: ['x', 'u'], variation: 'c' }],
        rules: [{ id: 'r', clauses: [always], variation: 'b' }],
      }),
      ctx: { key: 'u' },
      variation: 'c',
      reason: { kind: 'TARGET_MATCH' },
    },
    {
      name: 'the first target listing a key wins',
      f: flag({
        targets: [
          { contextKeys: ['u'], variation: 'c' },
          { contextKeys: ['u'], variation: 'b' },
        ],
      }),
      ctx: { key: 'u' },
      variation: 'c',
      reason: { kind: 'TARGET_MATCH' },
    },
    {
      name: 'an untargeted key goes on to the rules',
      f: flag({
        targets: [{ contextKeys: ['x'], variation: 'c' }],
        rules: [{ id: 'r', clauses: [always], variation: 'b' }],
      }),
      ctx: { key: 'u' },
      variation: 'b',
      reason: { kind: 'RULE_MATCH', ruleId: 'r' },
    },
    {
      name: 'rules are tried in order and the first match wins',
      f: flag({
        rules: [
          { id: 'r1', clauses: [c('plan', 'in', ['pro'])], variation: 'c' },
          { id: 'r2', clauses: [always], variation: 'b' },
          { id: 'r3', clauses: [always], variation: 'c' },
        ],
      }),
      ctx: { key: 'u', plan: 'free' },
      variation: 'b',
      reason: { kind: 'RULE_MATCH', ruleId: 'r2' },
    },
    {
      name: 'a rule needs all of its clauses',
      f: flag({ rules: [{ id: 'r1', clauses: [always, c('plan', 'in', ['pro'])], variation: 'c' }] }),
      ctx: { key: 'u', plan: 'free' },
      variation: 'a',
      reason: { kind: 'FALLTHROUGH' },
    },
    {
      name: 'a rule with no clauses matches every context',
      f: flag({ rules: [{ id: 'all', clauses: [], variation: 'c' }] }),
      ctx: {},
      variation: 'c',
      reason: { kind: 'RULE_MATCH', ruleId: 'all' },
    },
    {
      name: 'a rule match beats the rollout',
      f: flag({
        rules: [{ id: 'r', clauses: [always], variation: 'b' }],
        rollout: [{ variation: 'c', weight: 100000 }],
      }),
      ctx: { key: 'u' },
      variation: 'b',
      reason: { kind: 'RULE_MATCH', ruleId: 'r' },
    },
    {
      name: 'with no match a rollout serves its bucket, reason FALLTHROUGH in rollout',
      f: flag({ rollout: [{ variation: 'c', weight: 100000 }] }),
      ctx: { key: 'u' },
      variation: 'c',
      reason: { kind: 'FALLTHROUGH', inRollout: true },
    },
    {
      name: 'a context without a key matches no target and still evaluates',
      f: flag({ targets: [{ contextKeys: ['u'], variation: 'c' }] }),
      ctx: { country: 'NZ' },
      variation: 'a',
      reason: { kind: 'FALLTHROUGH' },
    },
    {
      name: 'a flag naming a variation it lacks yields ERROR with the default value',
      f: flag({ rules: [{ id: 'r', clauses: [], variation: 'zzz' }] }),
      ctx: { key: 'u' },
      variation: 'a',
      reason: { kind: 'ERROR', errorKind: 'MALFORMED_FLAG' },
    },
  ];
  for (const cs of cases) {
    const r = evaluate(cs.f, cs.ctx, storeOf());
    t.equal(r.variation, cs.variation, cs.name);
    t.same(r.reason, cs.reason, `${cs.name} (reason)`);
    t.equal(r.value, cs.f.variations.find((v) => v.key === cs.variation)?.value, `${cs.name} (value)`);
  }
});

t.test('prerequisites gate a flag recursively', async (t) => {
  const on = (key: string, over: Partial<FlagDefinition> = {}) => flag({ key, defaultVariation: 'b', ...over });
  const target = (prereqs: FlagDefinition['prerequisites']) =>
    flag({ key: 'main', prerequisites: prereqs, rules: [{ id: 'r', clauses: [], variation: 'c' }] });
  const cases: {
    name: string;
    prereqs: FlagDefinition['prerequisites'];
    others: FlagDefinition[];
    variation: string;
    reason: object;
  }[] = [
    {
      name: 'a satisfied prerequisite lets evaluation continue',
      prereqs: [{ flagKey: 'p', variation: 'b' }],
      others: [on('p')],
      variation: 'c',
      reason: { kind: 'RULE_MATCH', ruleId: 'r' },
    },
    {
      name: 'a missing prerequisite fails',
      prereqs: [{ flagKey: 'p', variation: 'b' }],
      others: [],
      variation: 'a',
      reason: { kind: 'PREREQUISITE_FAILED', prerequisiteKey: 'p' },
    },
    {
      name: 'a disabled prerequisite fails even when its default is the named variation',
      prereqs: [{ flagKey: 'p', variation: 'b' }],
      others: [on('p', { enabled: false })],
      variation: 'a',
      reason: { kind: 'PREREQUISITE_FAILED', prerequisiteKey: 'p' },
    },
    {
      name: 'a prerequisite yielding another variation fails',
      prereqs: [{ flagKey: 'p', variation: 'c' }],
      others: [on('p')],
      variation: 'a',
      reason: { kind: 'PREREQUISITE_FAILED', prerequisiteKey: 'p' },
    },
    {
      name: 'the first failing prerequisite is the one reported',
      prereqs: [
        { flagKey: 'p', variation: 'b' },
        { flagKey: 'q', variation: 'b' },
        { flagKey: 'r', variation: 'b' },
      ],
      others: [on('p'), on('q', { enabled: false })],
      variation: 'a',
      reason: { kind: 'PREREQUISITE_FAILED', prerequisiteKey: 'q' },
    },
    {
      name: 'a prerequisite is evaluated with its own targets for this context',
      prereqs: [{ flagKey: 'p', variation: 'c' }],
      others: [on('p', { targets: [{ contextKeys: ['u'], variation: 'c' }] })],
      variation: 'c',
      reason: { kind: 'RULE_MATCH', ruleId: 'r' },
    },
    {
      name: 'nested: a prerequisite whose own prerequisite fails serves its default, failing the outer one',
      prereqs: [{ flagKey: 'p', variation: 'c' }],
      others: [
        on('p', {
          prerequisites: [{ flagKey: 'q', variation: 'b' }],
          rules: [{ id: 'x', clauses: [], variation: 'c' }],
        }),
        on('q', { enabled: false }),
      ],
      variation: 'a',
      reason: { kind: 'PREREQUISITE_FAILED', prerequisiteKey: 'p' },
    },
    {
      name: 'nested: a chain of satisfied prerequisites passes',
      prereqs: [{ flagKey: 'p', variation: 'c' }],
      others: [
        on('p', {
          prerequisites: [{ flagKey: 'q', variation: 'b' }],
          rules: [{ id: 'x', clauses: [], variation: 'c' }],
        }),
        on('q'),
      ],
      variation: 'c',
      reason: { kind: 'RULE_MATCH', ruleId: 'r' },
    },
  ];
  for (const cs of cases) {
    const r = evaluate(target(cs.prereqs), { key: 'u' }, storeOf(cs.others));
    t.equal(r.variation, cs.variation, cs.name);
    t.same(r.reason, cs.reason, `${cs.name} (reason)`);
  }
});

t.test('a prerequisite cycle that slipped past validation fails instead of recursing forever', async (t) => {
  const a = flag({ key: 'a', defaultVariation: 'b', prerequisites: [{ flagKey: 'b', variation: 'b' }] });
  const b = flag({ key: 'b', defaultVariation: 'b', prerequisites: [{ flagKey: 'a', variation: 'b' }] });
  const warnings: EvalWarning[] = [];
  const r = evaluate(a, { key: 'u' }, storeOf([a, b]), { onWarning: (w) => warnings.push(w) });
  t.same(
    r.reason,
    { kind: 'PREREQUISITE_FAILED', prerequisiteKey: 'b' },
    'a two-flag loop fails at the flag asked for',
  );
  t.equal(r.variation, 'b', 'and serves its default variation');
  t.equal(warnings[0]?.code, 'PREREQUISITE_CYCLE', 'the loop is reported');
  const self = flag({ key: 's', prerequisites: [{ flagKey: 's', variation: 'a' }] });
  t.same(
    evaluate(self, { key: 'u' }, storeOf([self])).reason,
    { kind: 'PREREQUISITE_FAILED', prerequisiteKey: 's' },
    'a flag that is its own prerequisite fails',
  );
});

t.test("bucketing reproduces LaunchDarkly's published values", async (t) => {
  const cases = [
    { value: 'userKeyA', bucket: 0.42157587 },
    { value: 'userKeyB', bucket: 0.6708485 },
    { value: 'userKeyC', bucket: 0.10343106 },
  ];
  for (const cs of cases) {
    const b = bucketWithSalt('hashKey', 'saltyA', cs.value);
    t.ok(Math.abs(b - cs.bucket) < 1e-7, `hashKey.saltyA.${cs.value} buckets to ${cs.bucket} (got ${b})`);
  }
});

t.test("the one-shot bucket equals LaunchDarkly's definition computed with createHash", async (t) => {
  let mismatches = 0;
  for (let i = 0; i < 2000; i++) {
    const input = `flag.flag.user-${i}-${(i * 7919) % 104729}`;
    const hex = createHash('sha1').update(input).digest('hex');
    const expected = parseInt(hex.substring(0, 15), 16) / 0xfffffffffffffff;
    if (bucketOfHashInput(input) !== expected) mismatches++;
  }
  t.equal(mismatches, 0);
});

t.test('rollouts pick the entry whose running sum first exceeds the bucket', async (t) => {
  const ab = (w1: number, w2: number, over: Partial<FlagDefinition> = {}) =>
    flag({
      key: 'ro',
      rollout: [
        { variation: 'b', weight: w1 },
        { variation: 'c', weight: w2 },
      ],
      ...over,
    });
  const bucketU = bucketWithSalt('ro', 'ro', 'u'); // salt = flag key
  const at = Math.floor(bucketU * 100000);
  const cases: { name: string; f: FlagDefinition; ctx: EvalContext; variation: string }[] = [
    { name: '[0, 100000] always serves the second entry', f: ab(0, 100000), ctx: { key: 'u' }, variation: 'c' },
    { name: '[0, 100000] serves the second entry even for bucket 0', f: ab(0, 100000), ctx: {}, variation: 'c' },
    { name: '[100000, 0] always serves the first entry', f: ab(100000, 0), ctx: { key: 'u' }, variation: 'b' },
    {
      name: 'the hash input is flagKey.flagKey.key: a first share just above the bucket serves it',
      f: ab(at + 1, 100000 - at - 1),
      ctx: { key: 'u' },
      variation: 'b',
    },
    {
      name: 'the hash input is flagKey.flagKey.key: a first share just below the bucket does not',
      f: ab(at, 100000 - at),
      ctx: { key: 'u' },
      variation: 'c',
    },
    {
      name: 'a context without the bucketBy attribute buckets to 0',
      f: ab(1, 99999, { bucketBy: 'org' }),
      ctx: { key: 'u' },
      variation: 'b',
    },
    {
      name: 'a fractional bucketBy value buckets to 0',
      f: ab(1, 99999, { bucketBy: 'org' }),
      ctx: { key: 'u', org: 1.5 },
      variation: 'b',
    },
    {
      name: 'a boolean bucketBy value buckets to 0',
      f: ab(1, 99999, { bucketBy: 'org' }),
      ctx: { key: 'u', org: true },
      variation: 'b',
    },
    {
      name: 'an array bucketBy value buckets to 0',
      f: ab(1, 99999, { bucketBy: 'org' }),
      ctx: { key: 'u', org: ['x'] },
      variation: 'b',
    },
    {
      name: 'bucketBy uses the named attribute, not the key',
      f: ab(at + 1, 100000 - at - 1, { bucketBy: 'org' }),
      ctx: { key: 'someone-else', org: 'u' },
      variation: 'b',
    },
    {
      name: 'bucketBy uses the named attribute (other side)',
      f: ab(at, 100000 - at, { bucketBy: 'org' }),
      ctx: { key: 'someone-else', org: 'u' },
      variation: 'c',
    },
  ];
  for (const cs of cases) {
    const r = evaluate(cs.f, cs.ctx, storeOf());
    t.equal(r.variation, cs.variation, cs.name);
    t.same(r.reason, { kind: 'FALLTHROUGH', inRollout: true }, `${cs.name} (reason)`);
  }

  // An integer bucketBy value hashes as its decimal string.
  const bucket42 = bucketWithSalt('ro', 'ro', '42');
  const at42 = Math.floor(bucket42 * 100000);
  t.equal(
    evaluate(ab(at42 + 1, 100000 - at42 - 1, { bucketBy: 'org' }), { key: 'x', org: 42 }, storeOf()).variation,
    'b',
    'an integer bucketBy value hashes as its decimal form (above)',
  );
  t.equal(
    evaluate(ab(at42, 100000 - at42, { bucketBy: 'org' }), { key: 'x', org: 42 }, storeOf()).variation,
    'c',
    'an integer bucketBy value hashes as its decimal form (below)',
  );

  // A seed replaces "flagKey.flagKey." with "seed.".
  const seeded = bucketOfHashInput('s33d.u');
  const atSeed = Math.floor(seeded * 100000);
  t.equal(
    evaluate(ab(atSeed + 1, 100000 - atSeed - 1, { seed: 's33d' }), { key: 'u' }, storeOf()).variation,
    'b',
    'a seed sets the hash input to seed.value (above)',
  );
  t.equal(
    evaluate(ab(atSeed, 100000 - atSeed, { seed: 's33d' }), { key: 'u' }, storeOf()).variation,
    'c',
    'a seed sets the hash input to seed.value (below)',
  );
});

t.test('a 50/50 rollout splits many keys roughly evenly and three ways by weight', async (t) => {
  const f = flag({
    key: 'split',
    rollout: [
      { variation: 'a', weight: 50000 },
      { variation: 'b', weight: 30000 },
      { variation: 'c', weight: 20000 },
    ],
  });
  const counts: Record<string, number> = { a: 0, b: 0, c: 0 };
  const n = 20000;
  const store = storeOf();
  for (let i = 0; i < n; i++) {
    const v = evaluate(f, { key: `user-${i}` }, store).variation as string;
    counts[v] = (counts[v] ?? 0) + 1;
  }
  t.ok(Math.abs((counts['a'] ?? 0) / n - 0.5) < 0.02, `about 50% get a (${counts['a']})`);
  t.ok(Math.abs((counts['b'] ?? 0) / n - 0.3) < 0.02, `about 30% get b (${counts['b']})`);
  t.ok(Math.abs((counts['c'] ?? 0) / n - 0.2) < 0.02, `about 20% get c (${counts['c']})`);
});

t.test('compiled flags are cached by identity and results are frozen', async (t) => {
  const f = flag({ rules: [{ id: 'r', clauses: [c('email', 'matches', ['x'])], variation: 'b' }] });
  t.equal(compileFlag(f), compileFlag(f), 'the same object compiles once');
  const r = evaluate(f, { key: 'u', email: 'x' }, storeOf());
  t.ok(Object.isFrozen(r) && Object.isFrozen(r.reason), 'results cannot be mutated by callers');
  t.equal(evaluate(f, { key: 'u', email: 'x' }, storeOf()), r, 'the same outcome is the same shared object');
  const updated = { ...f, enabled: false };
  t.same(
    evaluate(updated, { key: 'u', email: 'x' }, storeOf()).reason,
    { kind: 'OFF' },
    'an updated flag (a new object) is recompiled',
  );
});

t.test('evaluation agrees with the LaunchDarkly SDK on rollout buckets', async (t) => {
  const { init, integrations } = await import('@launchdarkly/node-server-sdk');
  const td = new integrations.TestData();
  const weights = [33000, 33000, 34000];
  td.usePreconfiguredFlag({
    key: 'agree',
    version: 1,
    on: true,
    salt: 'agree',
    variations: ['A', 'B', 'C'],
    offVariation: 0,
    fallthrough: { rollout: { variations: weights.map((weight, variation) => ({ variation, weight })) } },
    targets: [],
    rules: [],
    prerequisites: [],
  });
  const client = init('sdk-key', {
    updateProcessor: td.getFactory(),
    sendEvents: false,
    diagnosticOptOut: true,
    logger: { error() {}, warn() {}, info() {}, debug() {} },
  });
  try {
    await client.waitForInitialization({ timeout: 5 });
    const ours = flag({
      key: 'agree',
      rollout: [
        { variation: 'a', weight: 33000 },
        { variation: 'b', weight: 33000 },
        { variation: 'c', weight: 34000 },
      ],
    });
    let disagree = 0;
    for (let i = 0; i < 500; i++) {
      const key = `ctx-${i}`;
      const theirs = await client.variation('agree', { kind: 'user', key }, 'none');
      if (evaluate(ours, { key }, storeOf()).value !== theirs) disagree++;
    }
    t.equal(disagree, 0, 'the same variation for 500 context keys');
  } finally {
    client.close();
  }
});

t.test('evaluateAll evaluates every flag, or only the named ones, keyed by flag key', async (t) => {
  const gate = flag({ key: 'gate', defaultVariation: 'b' });
  const main = flag({
    key: 'main',
    prerequisites: [{ flagKey: 'gate', variation: 'b' }],
    rules: [{ id: 'r', clauses: [], variation: 'c' }],
  });
  const off = flag({ key: 'off', enabled: false });
  const all = [gate, main, off];
  const store = storeOf(all);
  const every = evaluateAll(all, { key: 'u' }, store);
  t.same(Object.keys(every), ['gate', 'main', 'off'], 'every flag');
  t.same(
    every['main'],
    { value: 'C', variation: 'c', reason: { kind: 'RULE_MATCH', ruleId: 'r' } },
    'with prerequisites resolved through the store',
  );
  t.same(every['off']?.reason, { kind: 'OFF' });
  t.same(
    Object.keys(evaluateAll(all, { key: 'u' }, store, undefined, ['off', 'missing'])),
    ['off'],
    'flagKeys limits the set and skips unknown keys',
  );
  t.equal(JSON.parse(JSON.stringify(every))['gate'].value, 'B', 'results serialise as the API returns them');
});

t.test(
  'a catastrophic-backtracking matches pattern runs in linear time, and unsupported constructs never match',
  async (t) => {
    const { compileRegex } = await import('../../src/flags/eval/operators.js');
    const evil = compileRegex('^(a+)+$');
    t.ok(evil, 'the pattern compiles');
    const started = performance.now();
    t.equal(evil?.test(`${'a'.repeat(5000)}!`), false, 'no match on the adversarial input');
    const elapsed = performance.now() - started;
    t.ok(elapsed < 1000, `and it returns promptly (${elapsed.toFixed(1)} ms; a backtracking engine needs years)`);
    t.equal(evil?.test('aaaa'), true, 'the pattern still matches what it should');
    t.equal(compileRegex('(a)\\1'), undefined, 'a backreference cannot run in linear time: the clause never matches');
    t.equal(compileRegex('[unclosed'), undefined, 'an invalid pattern never matches');
  },
);
