// The evaluate endpoint's hot path (src/flags/api/evaluation.ts, issue 20): the answer written from
// per-outcome JSON fragments is byte for byte JSON.stringify of the evaluated object (key order,
// repeated and unknown keys, integer-like keys, prerequisites), and the one-pass body check accepts
// only what the full path (depth, schema, limits) accepts, so every refusal keeps its wording.
import t from 'tap';
import type { FlagsContext } from '../../src/flags/api/context.js';
import {
  decodeEvaluateBody,
  decodeEvaluateBodyByRules,
  Evaluator,
  isWellFormedEvaluateBody,
  type EvaluateRequest,
} from '../../src/flags/api/evaluation.js';
import * as L from '../../src/flags/limits.js';
import type { Flag, FlagDefinition, Segment } from '../../src/flags/model/types.js';
import { EnvState } from '../../src/flags/stream/replica.js';

function flag(key: string, over: Partial<FlagDefinition> = {}): Flag {
  return {
    key,
    name: key,
    type: 'string',
    enabled: true,
    defaultVariation: 'a',
    variations: [
      { key: 'a', value: 'alpha' },
      { key: 'b', value: { nested: ['json', 1, true, null] } },
    ],
    targets: [{ contextKeys: ['vip'], variation: 'b' }],
    prerequisites: [],
    rules: [{ id: 'seg', clauses: [{ attribute: '', op: 'segmentMatch', values: ['beta', 'gone'] }], variation: 'b' }],
    rollout: [
      { variation: 'a', weight: 50_000 },
      { variation: 'b', weight: 50_000 },
    ],
    version: 1,
    createdAt: '2026-01-01T00:00:00Z',
    updatedAt: '2026-01-01T00:00:00Z',
    ...over,
  };
}

const beta: Segment = {
  key: 'beta',
  name: 'beta',
  included: ['u-in'],
  excluded: [],
  rules: [],
  version: 1,
  createdAt: '2026-01-01T00:00:00Z',
  updatedAt: '2026-01-01T00:00:00Z',
};

function evaluator(): { evaluator: Evaluator; warnings: string[]; byReason: Map<string, number> } {
  const warnings: string[] = [];
  const byReason = new Map<string, number>();
  const ctx = {
    metrics: { evalCounts: { byReason, warnings: new Map<string, number>() } },
    logger: { warn: (_fields: unknown, message: string) => warnings.push(message) },
    now: () => 0,
  } as unknown as FlagsContext;
  return { evaluator: new Evaluator(ctx), warnings, byReason };
}

function env(flags: Flag[]): EnvState {
  return new EnvState('p', 'e', { flags, segments: [beta], seq: 1 });
}

t.test('the written answer is exactly JSON.stringify of the evaluated flags', async (t) => {
  const plain = [flag('zeta'), flag('alpha'), flag('mid-1', { enabled: false })];
  const numeric = [flag('b2'), flag('10'), flag('2'), flag('a1'), flag('0')];
  const chained = [
    flag('top', { prerequisites: [{ flagKey: 'gate', variation: 'b' }] }),
    flag('gate', { prerequisites: [{ flagKey: 'root', variation: 'a' }], rules: [] }),
    flag('root', { rollout: [], rules: [] }),
  ];
  const cases: Array<{ name: string; flags: Flag[]; req: EvaluateRequest }> = [
    { name: 'every flag, in insertion order', flags: plain, req: { context: { key: 'u-1' } } },
    { name: 'every flag with integer-like keys (written first, ascending)', flags: numeric, req: { context: {} } },
    { name: 'one flag', flags: plain, req: { context: { key: 'vip' }, flagKeys: ['alpha'] } },
    { name: 'one unknown flag', flags: plain, req: { context: { key: 'u' }, flagKeys: ['nope"\\'] } },
    { name: 'one key named __proto__', flags: plain, req: { context: { key: 'u' }, flagKeys: ['__proto__'] } },
    {
      name: 'several keys, repeated, unknown and integer-like',
      flags: numeric,
      req: { context: { key: 'u-in' }, flagKeys: ['a1', '10', 'x', 'a1', '2', '__proto__', 'constructor'] },
    },
    { name: 'no keys at all', flags: plain, req: { context: { key: 'u' }, flagKeys: [] } },
    { name: 'a prerequisite chain, every flag', flags: chained, req: { context: { key: 'u-in' } } },
    { name: 'a prerequisite chain, one flag', flags: chained, req: { context: { key: 'u-2' }, flagKeys: ['top'] } },
    { name: 'no flags', flags: [], req: { context: { key: 'u' } } },
  ];
  for (const cs of cases) {
    const state = env(cs.flags);
    const { evaluator: e } = evaluator();
    const expected = JSON.stringify(e.run(state, cs.req));
    for (let round = 0; round < 2; round++) {
      // Twice: the second answer comes from the fragment caches.
      const got = e.answer(state, cs.req);
      t.equal(got.raw, expected, `${cs.name}${round === 1 ? ' (cached fragments)' : ''}`);
      t.same(got.headers, { 'content-type': 'application/json' }, `${cs.name}: a JSON content type`);
    }
  }
});

t.test('the answer counts outcomes by reason and reports warnings as before', async (t) => {
  const { evaluator: e, warnings, byReason } = evaluator();
  const state = env([flag('one'), flag('two'), flag('off', { enabled: false })]);
  e.answer(state, { context: { key: 'u-1' } });
  e.answer(state, { context: { key: 'vip' }, flagKeys: ['one', 'missing'] });
  t.same(
    Object.fromEntries(byReason),
    { FALLTHROUGH: 2, OFF: 1, TARGET_MATCH: 1, ERROR: 1 },
    'every answered flag counted once by its reason (an unknown key as ERROR)',
  );
  t.ok(
    warnings.some((w) => w.includes('"gone" not found')),
    'a clause naming a deleted segment is logged',
  );
});

/** A context with `n` attributes. */
function attrs(n: number): Record<string, string> {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, 'v']));
}

t.test('the one-pass body check accepts only what depth, schema and limits accept', async (t) => {
  const long = (n: number) => 'x'.repeat(n);
  const bodies: Array<[string, unknown]> = [
    [
      'a plain context',
      { context: { key: 'u', country: 'NL', age: 3, beta: true, none: null, tags: ['a', 1, false, null] } },
    ],
    ['with flagKeys', { context: { key: 'u' }, flagKeys: ['f0', 'f1'] }],
    ['an empty context', { context: {} }],
    ['no body', undefined],
    ['null', null],
    ['an array', [{ context: {} }]],
    ['a string', 'context'],
    ['no context', { flagKeys: [] }],
    ['an extra field', { context: {}, extra: 1 }],
    ['a context that is an array', { context: [] }],
    ['a context that is null', { context: null }],
    ['a numeric key', { context: { key: 1 } }],
    ['a null kind', { context: { kind: null } }],
    ['an object attribute', { context: { a: { b: 1 } } }],
    ['an array of arrays', { context: { a: [[1]] } }],
    ['an array holding an object', { context: { a: [{}] } }],
    ['deep nesting', { context: { a: [[[[[1]]]]] } }],
    ['flagKeys not an array', { context: {}, flagKeys: 'f0' }],
    ['flagKeys holding a number', { context: {}, flagKeys: ['f0', 1] }],
    ['flagKeys null', { context: {}, flagKeys: null }],
    [`${L.contextAttributesMax} attributes`, { context: attrs(L.contextAttributesMax) }],
    [`${L.contextAttributesMax + 1} attributes`, { context: attrs(L.contextAttributesMax + 1) }],
    [`an attribute name of ${L.attributeCharsMax}`, { context: { [long(L.attributeCharsMax)]: 1 } }],
    [`an attribute name of ${L.attributeCharsMax + 1}`, { context: { [long(L.attributeCharsMax + 1)]: 1 } }],
    [`a value of ${L.contextValueCharsMax}`, { context: { a: long(L.contextValueCharsMax) } }],
    [`a value of ${L.contextValueCharsMax + 1}`, { context: { a: long(L.contextValueCharsMax + 1) } }],
    [`a key of ${L.contextValueCharsMax + 1}`, { context: { key: long(L.contextValueCharsMax + 1) } }],
    [`an array item of ${L.contextValueCharsMax + 1}`, { context: { a: [long(L.contextValueCharsMax + 1)] } }],
    [`${L.contextArrayItemsMax} items`, { context: { a: Array(L.contextArrayItemsMax).fill(1) } }],
    [`${L.contextArrayItemsMax + 1} items`, { context: { a: Array(L.contextArrayItemsMax + 1).fill(1) } }],
    [`${L.evaluateFlagKeysMax} flag keys`, { context: {}, flagKeys: Array(L.evaluateFlagKeysMax).fill('f') }],
    [`${L.evaluateFlagKeysMax + 1} flag keys`, { context: {}, flagKeys: Array(L.evaluateFlagKeysMax + 1).fill('f') }],
    [`a flag key of ${L.keyCharsMax}`, { context: {}, flagKeys: [long(L.keyCharsMax)] }],
    [`a flag key of ${L.keyCharsMax + 1}`, { context: {}, flagKeys: [long(L.keyCharsMax + 1)] }],
    ['a __proto__ attribute (JSON.parse makes it an own key)', JSON.parse('{"context":{"__proto__":[1]}}')],
    ['a __proto__ field', JSON.parse('{"context":{},"__proto__":1}')],
  ];
  let accepted = 0;
  for (const [name, body] of bodies) {
    let rules: string;
    try {
      rules = `accepted ${JSON.stringify(decodeEvaluateBodyByRules(body))}`;
    } catch (err) {
      rules = `refused: ${(err as Error).message}`;
    }
    let decoded: string;
    try {
      decoded = `accepted ${JSON.stringify(decodeEvaluateBody(body))}`;
    } catch (err) {
      decoded = `refused: ${(err as Error).message}`;
    }
    t.equal(decoded, rules, `${name}: the same outcome and wording as the full path`);
    if (isWellFormedEvaluateBody(body)) {
      accepted++;
      t.match(rules, /^accepted/, `${name}: accepted by the one-pass check, so by the full path too`);
    }
  }
  t.equal(accepted, 10, 'the well-formed bodies (at each limit) take the one-pass path');
});

t.test('the SDK key is read from Authorization raw or as Bearer, as before the hot path', async (t) => {
  const { sdkKeyOf } = await import('../../src/flags/api/guard.js');
  const cases: Array<[string | undefined, string | undefined]> = [
    ['sdk-123', 'sdk-123'],
    ['  sdk-123  ', 'sdk-123'],
    ['Bearer sdk-123', 'sdk-123'],
    ['bearer \t sdk-123', 'sdk-123'],
    ['BEARER sdk-123', 'sdk-123'],
    ['Bearersdk-123', 'Bearersdk-123'],
    ['Bearer', 'Bearer'],
    ['b-key', 'b-key'],
    ['', undefined],
    ['   ', undefined],
    [undefined, undefined],
  ];
  for (const [header, key] of cases) t.equal(sdkKeyOf(header), key, `${JSON.stringify(header)} → ${String(key)}`);
});
