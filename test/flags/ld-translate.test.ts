/**
 * Unit tests of the pure simlab → LaunchDarkly translation (src/flags/ld/translate.ts), table-driven,
 * and of the relay's per-environment diff (src/flags/ld/relay.ts): which changes are re-sent, with
 * which versions. Evaluation equality with the real LD SDK is ld-relay.test.ts's job.
 */
import t from 'tap';
import type { Clause, Flag, Segment } from '../../src/flags/model/types.js';
import { ldRulesPerSimlabRuleMax } from '../../src/flags/limits.js';
import { LdRelay } from '../../src/flags/ld/relay.js';
import {
  translateClause,
  translateClauses,
  translateFlag,
  translateSegment,
  type LdClause,
} from '../../src/flags/ld/translate.js';
import { EnvState } from '../../src/flags/stream/replica.js';

const c = (op: string, values: string[], negate = false, attribute = 'a'): Clause =>
  ({ attribute, op, values, negate }) as Clause;
const ld = (op: string, values: unknown[], negate = false, attribute = 'a'): LdClause =>
  ({ attribute, op, values, negate }) as LdClause;
const never = ld('in', [], false, 'key');

t.test('clauses: operator names, typed values, negation, expansions', async (t) => {
  const cases: Array<[string, Clause, boolean, LdClause[][]]> = [
    ['in adds numbers and booleans', c('in', ['x', '5', 'true']), false, [[ld('in', ['x', '5', 5, 'true', true])]]],
    ['notIn is a negated in', c('notIn', ['x']), false, [[ld('in', ['x'], true)]]],
    ['negated notIn is in', c('notIn', ['x'], true), false, [[ld('in', ['x'], false)]]],
    ['startsWith', c('startsWith', ['a']), false, [[ld('startsWith', ['a'])]]],
    ['endsWith', c('endsWith', ['a']), false, [[ld('endsWith', ['a'])]]],
    ['contains', c('contains', ['a']), false, [[ld('contains', ['a'])]]],
    ['matches', c('matches', ['^a']), false, [[ld('matches', ['^a'])]]],
    ['lt: numbers, unparsable dropped', c('lt', ['1', 'x', '2.5']), false, [[ld('lessThan', [1, 2.5])]]],
    ['lte', c('lte', ['1']), false, [[ld('lessThanOrEqual', [1])]]],
    ['gt', c('gt', ['1']), false, [[ld('greaterThan', [1])]]],
    ['gte negated', c('gte', ['1'], true), false, [[ld('greaterThanOrEqual', [1], true)]]],
    ['before: epoch ms', c('before', ['1970-01-01T00:00:01Z']), false, [[ld('before', [1000])]]],
    ['after: unix ms string', c('after', ['1500']), false, [[ld('after', [1500])]]],
    [
      'semverEq: canonical versions',
      c('semverEq', ['2', 'v1.2', 'x']),
      false,
      [[ld('semVerEqual', ['2.0.0', '1.2.0'])]],
    ],
    ['semverLt', c('semverLt', ['1.0.0']), false, [[ld('semVerLessThan', ['1.0.0'])]]],
    ['semverGt', c('semverGt', ['1.0.0']), false, [[ld('semVerGreaterThan', ['1.0.0'])]]],
    [
      'semverLte: lt or eq (two alternatives)',
      c('semverLte', ['1.0.0']),
      false,
      [[ld('semVerLessThan', ['1.0.0'])], [ld('semVerEqual', ['1.0.0'])]],
    ],
    [
      'semverGte negated: not gt and not eq',
      c('semverGte', ['1.0.0'], true),
      false,
      [[ld('semVerGreaterThan', ['1.0.0'], true), ld('semVerEqual', ['1.0.0'], true)]],
    ],
    [
      'segmentMatch',
      c('segmentMatch', ['s1', 's2'], true, ''),
      false,
      [[ld('segmentMatch', ['s1', 's2'], true, 'key')]],
    ],
    ['segmentMatch inside a segment never matches', c('segmentMatch', ['s1'], true, ''), true, [[never]]],
    ['an unknown operator never matches', c('bogus', ['x'], true), false, [[never]]],
  ];
  for (const [what, clause, inSegment, want] of cases) t.same(translateClause(clause, inSegment), want, what);
});

t.test('a rule expands to the product of its alternatives, up to ldRulesPerSimlabRuleMax', async (t) => {
  const lte = c('semverLte', ['1.0.0']);
  t.equal(translateClauses([lte, c('in', ['x']), lte], false)?.length, 4);
  const n = Math.floor(Math.log2(ldRulesPerSimlabRuleMax));
  t.equal(translateClauses(Array(n).fill(lte), false)?.length, ldRulesPerSimlabRuleMax, 'at the limit');
  t.equal(translateClauses(Array(n + 1).fill(lte), false), undefined, 'past the limit');
});

const base: Flag = {
  key: 'f',
  name: 'f',
  type: 'string',
  enabled: true,
  defaultVariation: 'b',
  variations: [
    { key: 'a', value: 'A' },
    { key: 'b', value: 'B' },
  ],
  targets: [],
  prerequisites: [],
  rules: [],
  rollout: [],
  version: 3,
  createdAt: '',
  updatedAt: '',
};
const noPrereqs = (): number => -1;

t.test('flags: indexes, off/fallthrough, targets, rules, rollouts, seeds, prerequisites', async (t) => {
  const r = translateFlag(
    {
      ...base,
      enabled: false,
      targets: [{ contextKeys: ['u1'], variation: 'a' }],
      rules: [{ id: 'r', clauses: [c('semverLte', ['1'])], variation: 'a' }],
      prerequisites: [{ flagKey: 'p', variation: 'y' }],
      rollout: [
        { variation: 'a', weight: 40000 },
        { variation: 'b', weight: 60000 },
      ],
      bucketBy: 'org',
    },
    7,
    (k, v) => (k === 'p' && v === 'y' ? 2 : -1),
  );
  t.ok(r.ok);
  if (!r.ok) return;
  t.match(r.value, {
    key: 'f',
    version: 7,
    on: false,
    salt: 'f',
    variations: ['A', 'B'],
    offVariation: 1,
    targets: [{ values: ['u1'], variation: 0 }],
    prerequisites: [{ key: 'p', variation: 2 }],
    fallthrough: {
      rollout: {
        variations: [
          { variation: 0, weight: 40000 },
          { variation: 1, weight: 60000 },
        ],
        bucketBy: 'org',
      },
    },
  });
  t.same(
    r.value.rules.map((x) => [x.id, x.variation, x.clauses[0]?.op]),
    [
      ['r', 0, 'semVerLessThan'],
      ['r#2', 0, 'semVerEqual'],
    ],
  );
  t.same((translateFlag(base, 1, noPrereqs) as { value: { fallthrough: unknown } }).value.fallthrough, {
    variation: 1,
  });

  const seeded = (seed: string) =>
    translateFlag({ ...base, seed, rollout: [{ variation: 'a', weight: 100000 }] }, 1, noPrereqs);
  const cases: Array<[string, unknown]> = [
    ['42', { ok: true, value: { salt: 'f', fallthrough: { rollout: { seed: 42 } } } }],
    ['f.x', { ok: true, value: { salt: 'x', fallthrough: { rollout: {} } } }],
    ['042', { ok: false, code: 'unrepresentable' }],
    ['0', { ok: false, code: 'unrepresentable' }],
    ['campaign', { ok: false, code: 'unrepresentable' }],
  ];
  for (const [seed, want] of cases) t.match(seeded(seed), want, `seed ${seed}`);
  t.notOk(
    (seeded('f.x') as { value: { fallthrough: { rollout: { seed?: number } } } }).value.fallthrough.rollout.seed,
    'a key-prefixed seed is a salt, not a seed',
  );
  t.match(translateFlag({ ...base, defaultVariation: 'zz' }, 1, noPrereqs), { ok: false });
  t.match(translateFlag({ ...base, rules: [{ id: 'r', clauses: [], variation: 'zz' }] }, 1, noPrereqs), { ok: false });
});

t.test('segments: excluded beats included; rules expand', async (t) => {
  const s = translateSegment(
    {
      key: 's',
      included: ['a', 'b'],
      excluded: ['b'],
      rules: [{ clauses: [c('semverGte', ['1'])] }, { id: 'x', clauses: [c('in', ['1'])] }],
    },
    5,
  );
  t.match(s, { key: 's', version: 5, salt: 's', included: ['a'], excluded: ['b'] });
  t.same(
    s.rules.map((r) => r.id),
    ['rule-0', 'rule-0#2', 'x'],
  );
});

t.test('relay: a change re-sends the flag and the flags whose prerequisite indexes moved', async (t) => {
  const p: Flag = { ...base, key: 'p' };
  const dependent: Flag = { ...base, key: 'd', prerequisites: [{ flagKey: 'p', variation: 'b' }] };
  const other: Flag = { ...base, key: 'o' };
  const seg: Segment = {
    key: 's',
    name: 's',
    included: [],
    excluded: [],
    rules: [],
    version: 1,
    createdAt: '',
    updatedAt: '',
  };
  const state = new EnvState('pr', 'e', { flags: [p, dependent, other], segments: [seg], seq: 10 });
  const relay = new LdRelay({ heartbeatMs: 0, drainTimeoutMs: 1000, clientsMax: 10 });
  t.teardown(() => relay.close());
  const all = JSON.parse(relay.allData(state)) as {
    flags: Record<string, { version: number; prerequisites: unknown }>;
  };
  t.same(Object.keys(all.flags).sort(), ['d', 'o', 'p']);
  t.equal(all.flags['d']?.version, 10);

  // p's variations swap: p changes, and d's prerequisite index moves with it; o is untouched.
  const p2: Flag = { ...p, version: 2, variations: [...p.variations].reverse() };
  state.apply({
    seq: 11,
    projectKey: 'pr',
    environmentKey: 'e',
    resource: 'flag',
    op: 'upsert',
    key: 'p',
    version: 2,
    data: p2,
  });
  const changes = relay.refresh(state);
  t.same(
    changes.map((x) => [x.key, x.version]),
    [
      ['p', 11],
      ['d', 11],
    ],
  );
  t.same((changes[1]?.entry?.value as { prerequisites: unknown }).prerequisites, [{ key: 'p', variation: 0 }]);
  t.same(relay.refresh(state), [], 'nothing new without a change');

  // A flag that becomes unrepresentable is deleted from the LD view.
  state.apply({
    seq: 12,
    projectKey: 'pr',
    environmentKey: 'e',
    resource: 'flag',
    op: 'upsert',
    key: 'o',
    version: 2,
    data: { ...other, seed: 'text', version: 2 },
  });
  t.same(
    relay.refresh(state).map((x) => [x.key, x.entry === undefined, x.version]),
    [['o', true, 12]],
  );
  t.notOk('o' in (JSON.parse(relay.allData(state)) as { flags: object }).flags);
});
