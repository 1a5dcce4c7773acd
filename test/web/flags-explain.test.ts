// The debugger's rule trace (web/flags/explain.ts) without a browser: each clause's outcome and the
// value singled out as the one that matched, table-driven over every operator family (semver and
// dates included), negation, arrays, missing attributes and segment membership, each case checked
// against the service's own evaluator (src/flags/eval/evaluate.ts) so the page and the service agree;
// then explainReason, which picks the rule the service names and the clause that failed each earlier one.
import t from 'tap';
import { evaluate } from '../../src/flags/eval/evaluate.js';
import type { Clause, FlagDefinition, Segment } from '../../src/flags/model/types.js';
import { explainClause, explainReason, segmentMembership } from '../../web/flags/explain.js';

function segment(key: string, over: Partial<Segment> = {}): Segment {
  return {
    key,
    name: key,
    included: [],
    excluded: [],
    rules: [],
    version: 1,
    createdAt: '2026-01-01T00:00:00Z',
    updatedAt: '2026-01-01T00:00:00Z',
    ...over,
  };
}

const segments = new Map<string, Segment>([
  ['beta', segment('beta', { included: ['u1'], excluded: ['u9'] })],
  ['fr', segment('fr', { rules: [{ clauses: [{ attribute: 'country', op: 'in', values: ['fr'] }] }] })],
]);

function flagWith(rules: FlagDefinition['rules']): FlagDefinition {
  return {
    key: 'f',
    name: 'f',
    type: 'boolean',
    enabled: true,
    defaultVariation: 'off',
    variations: [
      { key: 'on', value: true },
      { key: 'off', value: false },
    ],
    targets: [],
    prerequisites: [],
    rules,
    rollout: [],
  };
}

/** The service's verdict on one clause: a one-rule flag matches by that rule or not. */
function serviceMatches(clause: Clause, context: Record<string, unknown>): boolean {
  const store = { flag: () => undefined, segment: (k: string) => segments.get(k) };
  const r = evaluate(flagWith([{ id: 'r', clauses: [clause], variation: 'on' }]), context as never, store);
  return r.reason.kind === 'RULE_MATCH';
}

const cases: Array<{ name: string; clause: Clause; context: Record<string, unknown>; matched: boolean; by?: RegExp }> =
  [
    {
      name: 'in: the value equal to the attribute is singled out',
      clause: { attribute: 'country', op: 'in', values: ['de', 'fr'] },
      context: { country: 'fr' },
      matched: true,
      by: /\(in fr\)/,
    },
    {
      name: 'in: a number attribute equals a numeric value',
      clause: { attribute: 'age', op: 'in', values: ['5.0'] },
      context: { age: 5 },
      matched: true,
    },
    {
      name: 'notIn: matched when no value is in',
      clause: { attribute: 'country', op: 'notIn', values: ['de'] },
      context: { country: 'fr' },
      matched: true,
    },
    {
      name: 'notIn: fails on the value that is in, which is named',
      clause: { attribute: 'country', op: 'notIn', values: ['de', 'fr'] },
      context: { country: 'fr' },
      matched: false,
      by: /\(in fr\)/,
    },
    {
      name: 'an array attribute matches by the element singled out',
      clause: { attribute: 'groups', op: 'in', values: ['admins'] },
      context: { groups: ['staff', 'admins'] },
      matched: true,
      by: /element "admins"/,
    },
    {
      name: 'a missing attribute never matches',
      clause: { attribute: 'plan', op: 'in', values: ['pro'] },
      context: {},
      matched: false,
      by: /missing/,
    },
    {
      name: 'a missing attribute never matches, negated either',
      clause: { attribute: 'plan', op: 'in', values: ['pro'], negate: true },
      context: {},
      matched: false,
    },
    {
      name: 'negation inverts a match',
      clause: { attribute: 'country', op: 'in', values: ['fr'], negate: true },
      context: { country: 'fr' },
      matched: false,
    },
    {
      name: 'startsWith',
      clause: { attribute: 'email', op: 'startsWith', values: ['x', 'ad'] },
      context: { email: 'admin@x' },
      matched: true,
      by: /startsWith ad\)/,
    },
    {
      name: 'endsWith',
      clause: { attribute: 'email', op: 'endsWith', values: ['@example.com'] },
      context: { email: 'a@example.org' },
      matched: false,
    },
    {
      name: 'contains',
      clause: { attribute: 'name', op: 'contains', values: ['li'] },
      context: { name: 'alice' },
      matched: true,
    },
    {
      name: 'matches a regular expression',
      clause: { attribute: 'email', op: 'matches', values: ['^[a-z]+@corp\\.'] },
      context: { email: 'bob@corp.io' },
      matched: true,
    },
    {
      name: 'a backreference never matches (the service runs the linear engine)',
      clause: { attribute: 'w', op: 'matches', values: ['^(a)\\1$'] },
      context: { w: 'aa' },
      matched: false,
    },
    {
      name: 'gte with a numeric string attribute',
      clause: { attribute: 'age', op: 'gte', values: ['18'] },
      context: { age: '18' },
      matched: true,
    },
    {
      name: 'lt fails past the bound',
      clause: { attribute: 'age', op: 'lt', values: ['18'] },
      context: { age: 30 },
      matched: false,
    },
    {
      name: 'semverGte with a partial version (2 reads as 2.0.0)',
      clause: { attribute: 'version', op: 'semverGte', values: ['2'] },
      context: { version: '2.1.0' },
      matched: true,
      by: /semverGte 2\)/,
    },
    {
      name: 'semverLt: a prerelease is below its release',
      clause: { attribute: 'version', op: 'semverLt', values: ['2.0.0'] },
      context: { version: '2.0.0-rc.1' },
      matched: true,
    },
    {
      name: 'semverEq with a negation',
      clause: { attribute: 'version', op: 'semverEq', values: ['1.2.3'], negate: true },
      context: { version: '1.2.3' },
      matched: false,
    },
    {
      name: 'an unparsable version never matches',
      clause: { attribute: 'version', op: 'semverGt', values: ['1.0.0'] },
      context: { version: 'latest' },
      matched: false,
    },
    {
      name: 'before an RFC 3339 date',
      clause: { attribute: 'signup', op: 'before', values: ['2026-01-01T00:00:00Z'] },
      context: { signup: '2025-12-31T23:30:00-01:00' },
      matched: false,
    },
    {
      name: 'after, with Unix ms on the context side',
      clause: { attribute: 'signup', op: 'after', values: ['2026-01-01T00:00:00Z'] },
      context: { signup: Date.UTC(2026, 5, 1) },
      matched: true,
      by: /after 2026-01-01T00:00:00Z\)/,
    },
    {
      name: 'a date with month 13 never matches',
      clause: { attribute: 'signup', op: 'after', values: ['2020-01-01T00:00:00Z'] },
      context: { signup: '2026-13-01T00:00:00Z' },
      matched: false,
    },
    {
      name: 'segmentMatch by inclusion, naming the segment and why',
      clause: { attribute: '', op: 'segmentMatch', values: ['beta', 'fr'] },
      context: { key: 'u1' },
      matched: true,
      by: /in segment beta \(included\)/,
    },
    {
      name: "segmentMatch by a segment's rule",
      clause: { attribute: '', op: 'segmentMatch', values: ['beta', 'fr'] },
      context: { key: 'u2', country: 'fr' },
      matched: true,
      by: /in segment fr \(rule 1\)/,
    },
    {
      name: 'segmentMatch: excluded wins over the other rules',
      clause: { attribute: '', op: 'segmentMatch', values: ['beta'] },
      context: { key: 'u9' },
      matched: false,
    },
    {
      name: 'segmentMatch negated, with a missing segment named',
      clause: { attribute: '', op: 'segmentMatch', values: ['gone', 'beta'], negate: true },
      context: { key: 'u2' },
      matched: true,
      by: /no segment gone/,
    },
  ];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const e = explainClause(c.clause, 0, c.context, segments);
    t.equal(e.matched, c.matched, 'the page says so');
    t.equal(serviceMatches(c.clause, c.context), c.matched, 'and the service agrees');
    if (c.by) t.match(e.detail, c.by, 'the value that decided it is named');
  });
}

t.test('segmentMembership: excluded beats included, rules come last', async (t) => {
  const s = segment('s', {
    included: ['a', 'b'],
    excluded: ['b'],
    rules: [{ clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }] }],
  });
  t.equal(segmentMembership(s, { key: 'a' }), 'included');
  t.equal(segmentMembership(s, { key: 'b', plan: 'pro' }), undefined);
  t.equal(segmentMembership(s, { key: 'c', plan: 'pro' }), 'rule 1');
  t.equal(segmentMembership(s, { key: 'c' }), undefined);
});

t.test('explainReason: the named rule with its clauses, earlier rules with the clause that failed', async (t) => {
  const flag = flagWith([
    {
      id: 'old-clients',
      variation: 'off',
      clauses: [
        { attribute: 'country', op: 'in', values: ['fr'] },
        { attribute: 'version', op: 'semverLt', values: ['2.0.0'] },
      ],
    },
    {
      id: 'fr-new',
      variation: 'on',
      clauses: [
        { attribute: 'country', op: 'in', values: ['fr'] },
        { attribute: 'signup', op: 'after', values: ['2025-01-01T00:00:00Z'] },
        { attribute: 'plan', op: 'in', values: ['free'], negate: true },
      ],
    },
    { id: 'everyone', variation: 'on', clauses: [{ attribute: 'country', op: 'startsWith', values: [''] }] },
  ]);
  const ctx = { key: 'u', country: 'fr', version: '2.3.0', signup: '2025-06-01T00:00:00Z', plan: 'pro' };
  const store = { flag: () => undefined, segment: (k: string) => segments.get(k) };
  const served = evaluate(flag, ctx as never, store).reason;
  t.same(served, { kind: 'RULE_MATCH', ruleId: 'fr-new' }, 'the service serves rule fr-new');
  const e = explainReason(flag, ctx, segments, served.ruleId);
  t.equal(e.matchedIndex, 1, 'the page finds that rule');
  t.ok(e.agrees, 'and agrees it is the first to match');
  t.equal(e.rules.length, 2, 'rules after it are not listed');
  t.same(
    e.rules[0]?.clauses.map((c) => c.matched),
    [true, false],
    'rule 1 failed at its second clause',
  );
  t.match(e.rules[0]?.clauses[1]?.detail, /version "2\.3\.0" semverLt 2\.0\.0 \(no value satisfies semverLt\)/);
  t.same(
    e.rules[1]?.clauses.map((c) => c.matched),
    [true, true, true],
    'every clause of the matched rule held',
  );
  t.match(e.rules[1]?.clauses[2]?.detail, /plan "pro" not in free/, 'the negated clause is shown as such');

  const none = explainReason(flag, { key: 'u', country: 'de', plan: 'free' }, segments, undefined);
  t.equal(none.matchedIndex, -1);
  t.notOk(none.agrees, 'a fall-through while the page sees rule 3 match is flagged as a disagreement');
  const fall = explainReason(flagWith(flag.rules.slice(0, 2)), { key: 'u', country: 'de' }, segments, undefined);
  t.ok(fall.agrees, 'a fall-through with no rule matching agrees');
  t.equal(fall.rules.length, 2, 'and lists every rule');
  const stale = explainReason(flag, ctx, segments, 'deleted-rule');
  t.equal(stale.matchedIndex, -1, 'a rule id the page does not hold is not invented');
  t.notOk(stale.agrees);
});
