// Write-time rules of ../shared/specs/DECISIONS.md "Feature flags": body shape (TypeBox), defaults of a full
// replacement, every validation rule with the field it names, prerequisite cycles, segments.
import t from 'tap';
import {
  decodeEvaluateBody,
  decodeFlagCreate,
  decodeFlagPut,
  decodeSegmentCreate,
  decodeSegmentPut,
  findPrerequisiteCycle,
  jsonPointerToField,
  normalizeFlag,
  validateFlag,
  validateSegment,
  type FieldError,
  type FlagDefinition,
  type Prerequisite,
  type PrerequisiteView,
} from '../../src/flags/model/index.js';

const base = {
  key: 'checkout',
  type: 'string',
  variations: [
    { key: 'on', value: 'new' },
    { key: 'off', value: 'old' },
  ],
  defaultVariation: 'off',
};

/** The base body with overrides; an override of `undefined` removes the field (as JSON would). */
function body(over: Record<string, unknown> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = { ...structuredClone(base), ...over };
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}

function errorsOf(r: { ok: true } | { ok: false; errors: FieldError[] }): FieldError[] {
  return r.ok ? [] : r.errors;
}

t.test('a minimal create body is valid and gets every default', async (t) => {
  const r = decodeFlagCreate(body());
  t.ok(r.ok, 'valid');
  if (!r.ok) return;
  t.same(r.value, {
    key: 'checkout',
    name: 'checkout',
    type: 'string',
    enabled: false,
    defaultVariation: 'off',
    variations: base.variations,
    targets: [],
    prerequisites: [],
    rules: [],
    rollout: [],
  });
  t.notOk('bucketBy' in r.value || 'seed' in r.value, 'bucketBy and seed are absent');
});

t.test('PUT is a full replacement: a missing optional field resets to its default', async (t) => {
  const full = decodeFlagPut(
    body({
      key: undefined,
      name: 'Checkout',
      enabled: true,
      targets: [{ contextKeys: ['u1'], variation: 'on' }],
      rules: [{ id: 'r1', clauses: [{ attribute: 'country', op: 'in', values: ['NZ'] }], variation: 'on' }],
      rollout: [{ variation: 'on', weight: 100000 }],
      bucketBy: 'org',
      seed: 's',
    }),
    'checkout',
  );
  t.ok(full.ok, 'a full body is valid');
  const { key: _k, ...withoutKey } = body();
  const bare = decodeFlagPut(withoutKey, 'checkout');
  t.ok(bare.ok, 'a bare body is valid');
  if (!bare.ok) return;
  t.same(
    {
      name: bare.value.name,
      enabled: bare.value.enabled,
      targets: bare.value.targets,
      rules: bare.value.rules,
      rollout: bare.value.rollout,
      bucketBy: bare.value.bucketBy,
      seed: bare.value.seed,
    },
    { name: 'checkout', enabled: false, targets: [], rules: [], rollout: [], bucketBy: undefined, seed: undefined },
    'everything omitted is back to its default',
  );
  t.equal(
    normalizeFlag({ ...base, type: 'string' }, { key: 'other' }).key,
    'other',
    'normalizeFlag takes the key from the existing flag',
  );
});

t.test('a GET-edit-PUT round trip is accepted: server-owned fields are ignored', async (t) => {
  const r = decodeFlagPut(
    body({ version: 7, createdAt: '2024-01-01T00:00:00Z', updatedAt: 'x', bucketBy: null, seed: null }),
    'checkout',
  );
  t.ok(r.ok, 'accepted');
  if (r.ok) t.notOk('version' in r.value || 'createdAt' in r.value, 'server-owned fields are dropped');
});

t.test('rules sent without an id get deterministic, non-colliding ids', async (t) => {
  const r = decodeFlagCreate(
    body({
      rules: [
        { clauses: [], variation: 'on' },
        { id: 'rule-1', clauses: [], variation: 'on' },
        { clauses: [], variation: 'off' },
      ],
    }),
  );
  t.ok(r.ok);
  if (r.ok)
    t.same(
      r.value.rules.map((x) => x.id),
      ['rule-2', 'rule-1', 'rule-3'],
    );
});

interface Case {
  name: string;
  body: Record<string, unknown>;
  field: string;
  message: RegExp;
}

const shapeCases: Case[] = [
  { name: 'a missing key is refused', body: body({ key: undefined }), field: 'key', message: /^key: is required$/ },
  { name: 'a missing type is refused', body: body({ type: undefined }), field: 'type', message: /^type: is required$/ },
  {
    name: 'missing variations are refused',
    body: body({ variations: undefined }),
    field: 'variations',
    message: /is required/,
  },
  {
    name: 'a missing defaultVariation is refused',
    body: body({ defaultVariation: undefined }),
    field: 'defaultVariation',
    message: /is required/,
  },
  {
    name: 'an unknown type is refused with the allowed list',
    body: body({ type: 'float' }),
    field: 'type',
    message: /must be one of boolean, string, integer, json/,
  },
  {
    name: 'an unknown operator is refused with the operator list',
    body: body({ rules: [{ id: 'r', clauses: [{ attribute: 'a', op: 'like', values: [] }], variation: 'on' }] }),
    field: 'rules[0].clauses[0].op',
    message: /must be one of in, notIn, .*segmentMatch/,
  },
  {
    name: 'clause values must be strings',
    body: body({ rules: [{ id: 'r', clauses: [{ attribute: 'a', op: 'gt', values: [5] }], variation: 'on' }] }),
    field: 'rules[0].clauses[0].values[0]',
    message: /must be a string/,
  },
  {
    name: 'a misspelt field is refused rather than silently ignored',
    body: body({ rule: [] }),
    field: 'rule',
    message: /is not a known field/,
  },
  {
    name: 'enabled must be a boolean',
    body: body({ enabled: 'yes' }),
    field: 'enabled',
    message: /must be true or false/,
  },
  {
    name: 'a fractional weight is refused',
    body: body({ rollout: [{ variation: 'on', weight: 0.5 }] }),
    field: 'rollout[0].weight',
    message: /must be an integer/,
  },
  {
    name: 'a negative weight is refused',
    body: body({
      rollout: [
        { variation: 'on', weight: -1 },
        { variation: 'off', weight: 100001 },
      ],
    }),
    field: 'rollout[0].weight',
    message: /must be >= 0/,
  },
  {
    name: 'bucketBy must be a string',
    body: body({ bucketBy: 3 }),
    field: 'bucketBy',
    message: /must be a string or null/,
  },
  {
    name: 'the body must be an object',
    body: [] as unknown as Record<string, unknown>,
    field: 'body',
    message: /must be an object/,
  },
];

const ruleCases: Case[] = [
  {
    name: 'a key with a space is refused',
    body: body({ key: 'check out' }),
    field: 'key',
    message: /must be 1 to 128 letters/,
  },
  {
    name: 'a key starting with a dash is refused',
    body: body({ key: '-x' }),
    field: 'key',
    message: /starting with a letter or digit/,
  },
  { name: 'a 129-character key is refused', body: body({ key: 'k'.repeat(129) }), field: 'key', message: /1 to 128/ },
  {
    name: 'duplicate variation keys are refused',
    body: body({
      variations: [
        { key: 'on', value: 'a' },
        { key: 'on', value: 'b' },
      ],
      defaultVariation: 'on',
    }),
    field: 'variations[1].key',
    message: /duplicate variation key "on"/,
  },
  {
    name: 'an empty variation list is refused',
    body: body({ variations: [] }),
    field: 'variations',
    message: /at least one variation/,
  },
  {
    name: 'a string value on a boolean flag is refused',
    body: body({ type: 'boolean' }),
    field: 'variations[0].value',
    message: /must be true or false for a boolean flag \(got "new"\)/,
  },
  {
    name: 'a fractional value on an integer flag is refused',
    body: body({
      type: 'integer',
      variations: [
        { key: 'on', value: 1 },
        { key: 'off', value: 1.5 },
      ],
    }),
    field: 'variations[1].value',
    message: /must be an integer for an? integer flag/,
  },
  {
    name: 'a number on a string flag is refused',
    body: body({
      variations: [
        { key: 'on', value: 1 },
        { key: 'off', value: 'x' },
      ],
    }),
    field: 'variations[0].value',
    message: /must be a string/,
  },
  {
    name: 'a defaultVariation that does not exist is refused',
    body: body({ defaultVariation: 'maybe' }),
    field: 'defaultVariation',
    message: /no variation with key "maybe" \(variations are "on", "off"\)/,
  },
  {
    name: 'a target naming a missing variation is refused',
    body: body({ targets: [{ contextKeys: ['u'], variation: 'nope' }] }),
    field: 'targets[0].variation',
    message: /no variation with key "nope"/,
  },
  {
    name: 'a context key in two targets is refused',
    body: body({
      targets: [
        { contextKeys: ['u'], variation: 'on' },
        { contextKeys: ['u'], variation: 'off' },
      ],
    }),
    field: 'targets[1].contextKeys[0]',
    message: /already targeted by targets\[0\]/,
  },
  {
    name: 'a rule naming a missing variation is refused',
    body: body({ rules: [{ id: 'r', clauses: [], variation: 'nope' }] }),
    field: 'rules[0].variation',
    message: /no variation/,
  },
  {
    name: 'a rollout entry naming a missing variation is refused',
    body: body({ rollout: [{ variation: 'nope', weight: 100000 }] }),
    field: 'rollout[0].variation',
    message: /no variation/,
  },
  {
    name: 'rollout weights summing to 99999 are refused',
    body: body({
      rollout: [
        { variation: 'on', weight: 50000 },
        { variation: 'off', weight: 49999 },
      ],
    }),
    field: 'rollout',
    message: /^rollout: weights must sum to 100000 \(got 99999\)$/,
  },
  {
    name: 'rollout weights summing to 100001 are refused',
    body: body({ rollout: [{ variation: 'on', weight: 100001 }] }),
    field: 'rollout',
    message: /got 100001/,
  },
  {
    name: 'duplicate rule ids are refused',
    body: body({
      rules: [
        { id: 'r', clauses: [], variation: 'on' },
        { id: 'r', clauses: [], variation: 'off' },
      ],
    }),
    field: 'rules[1].id',
    message: /duplicate rule id "r"/,
  },
  {
    name: 'an empty rule id is refused',
    body: body({ rules: [{ id: '', clauses: [], variation: 'on' }] }),
    field: 'rules[0].id',
    message: /non-empty/,
  },
  {
    name: 'a clause without an attribute is refused',
    body: body({ rules: [{ id: 'r', clauses: [{ attribute: '', op: 'in', values: ['x'] }], variation: 'on' }] }),
    field: 'rules[0].clauses[0].attribute',
    message: /must name a context attribute/,
  },
  {
    name: 'a segmentMatch without segment keys is refused',
    body: body({ rules: [{ id: 'r', clauses: [{ attribute: '', op: 'segmentMatch', values: [] }], variation: 'on' }] }),
    field: 'rules[0].clauses[0].values',
    message: /at least one segment key/,
  },
  {
    name: 'a flag cannot be its own prerequisite',
    body: body({ prerequisites: [{ flagKey: 'checkout', variation: 'on' }] }),
    field: 'prerequisites[0].flagKey',
    message: /cannot be its own prerequisite/,
  },
  {
    name: 'a prerequisite listed twice is refused',
    body: body({
      prerequisites: [
        { flagKey: 'p', variation: 'on' },
        { flagKey: 'p', variation: 'on' },
      ],
    }),
    field: 'prerequisites[1].flagKey',
    message: /already a prerequisite/,
  },
  {
    name: 'a malformed prerequisite key is refused',
    body: body({ prerequisites: [{ flagKey: 'a/b', variation: 'on' }] }),
    field: 'prerequisites[0].flagKey',
    message: /must be 1 to 128/,
  },
  {
    name: 'an empty bucketBy is refused',
    body: body({ bucketBy: '' }),
    field: 'bucketBy',
    message: /must name a context attribute/,
  },
];

t.test('malformed bodies are refused by the schema, naming the field', async (t) => {
  for (const cs of shapeCases) {
    const errors = errorsOf(decodeFlagCreate(cs.body));
    const hit = errors.find((e) => e.field === cs.field);
    t.ok(hit, `${cs.name}: reports ${cs.field} (got ${JSON.stringify(errors)})`);
    t.match(hit?.message ?? '', cs.message, `${cs.name}: message`);
    t.ok(hit?.message.startsWith(`${cs.field}: `), `${cs.name}: the message opens with the field`);
  }
});

t.test('every ../shared/specs/DECISIONS.md validation rule refuses its violation, naming the field', async (t) => {
  for (const cs of ruleCases) {
    const errors = errorsOf(decodeFlagCreate(cs.body));
    const hit = errors.find((e) => e.field === cs.field);
    t.ok(hit, `${cs.name}: reports ${cs.field} (got ${JSON.stringify(errors)})`);
    t.match(hit?.message ?? '', cs.message, `${cs.name}: message`);
  }
});

t.test('valid edge cases are accepted', async (t) => {
  const cases: { name: string; body: Record<string, unknown> }[] = [
    {
      name: 'weights [0, 100000]',
      body: body({
        rollout: [
          { variation: 'on', weight: 0 },
          { variation: 'off', weight: 100000 },
        ],
      }),
    },
    { name: 'a 128-character key with dots, dashes and underscores', body: body({ key: `A1._-${'x'.repeat(123)}` }) },
    {
      name: 'a json flag with object, array and null values',
      body: body({
        type: 'json',
        variations: [
          { key: 'on', value: { a: [1] } },
          { key: 'off', value: null },
        ],
      }),
    },
    {
      name: 'an integer flag with negative integers',
      body: body({
        type: 'integer',
        variations: [
          { key: 'on', value: -3 },
          { key: 'off', value: 0 },
        ],
      }),
    },
    {
      name: 'a boolean flag',
      body: body({
        type: 'boolean',
        variations: [
          { key: 'on', value: true },
          { key: 'off', value: false },
        ],
      }),
    },
    {
      name: 'a bad regex (it simply never matches)',
      body: body({
        rules: [{ id: 'r', clauses: [{ attribute: 'a', op: 'matches', values: ['('] }], variation: 'on' }],
      }),
    },
    {
      name: 'a negated segmentMatch on an unknown segment',
      body: body({
        rules: [
          { id: 'r', clauses: [{ attribute: '', op: 'segmentMatch', values: ['s'], negate: true }], variation: 'on' },
        ],
      }),
    },
    {
      name: 'a prerequisite on a flag that does not exist yet',
      body: body({ prerequisites: [{ flagKey: 'later', variation: 'on' }] }),
    },
  ];
  for (const cs of cases) {
    const r = decodeFlagCreate(cs.body);
    t.ok(r.ok, `${cs.name} (${JSON.stringify(errorsOf(r))})`);
  }
});

t.test('a PUT body may resend the key only unchanged', async (t) => {
  t.ok(decodeFlagPut(body(), 'checkout').ok, 'the same key is accepted');
  const errors = errorsOf(decodeFlagPut(body(), 'other'));
  t.equal(errors[0]?.field, 'key');
  t.match(errors[0]?.message, /cannot be renamed/);
});

t.test('prerequisites are checked against the other flags of the environment', async (t) => {
  const others = new Map<string, PrerequisiteView>([
    ['a', { variations: [{ key: 'on' }, { key: 'off' }], prerequisites: [{ flagKey: 'b', variation: 'on' }] }],
    ['b', { variations: [{ key: 'on' }], prerequisites: [{ flagKey: 'checkout', variation: 'on' }] }],
    ['c', { variations: [{ key: 'on' }], prerequisites: [] }],
  ]);
  const ctx = { lookupFlag: (k: string) => others.get(k) };
  const cases: { name: string; prereqs: Prerequisite[]; field: string | null; message?: RegExp }[] = [
    {
      name: 'a prerequisite variation that exists is accepted',
      prereqs: [{ flagKey: 'c', variation: 'on' }],
      field: null,
    },
    {
      name: 'a prerequisite variation the other flag lacks is refused',
      prereqs: [{ flagKey: 'c', variation: 'maybe' }],
      field: 'prerequisites[0].variation',
      message: /flag "c" has no variation "maybe" \(its variations are "on"\)/,
    },
    {
      name: 'a cycle through two other flags is refused and spelled out',
      prereqs: [{ flagKey: 'a', variation: 'on' }],
      field: 'prerequisites',
      message: /cycle checkout -> a -> b -> checkout/,
    },
    {
      name: 'a direct two-flag cycle is refused',
      prereqs: [{ flagKey: 'b', variation: 'on' }],
      field: 'prerequisites',
      message: /cycle checkout -> b -> checkout/,
    },
  ];
  for (const cs of cases) {
    const r = decodeFlagCreate(body({ prerequisites: cs.prereqs }), ctx);
    if (cs.field === null) {
      t.ok(r.ok, cs.name);
      continue;
    }
    const hit = errorsOf(r).find((e) => e.field === cs.field);
    t.ok(hit, cs.name);
    t.match(hit?.message ?? '', cs.message ?? /./, `${cs.name}: message`);
  }
});

t.test('findPrerequisiteCycle finds loops back to the flag and nothing else', async (t) => {
  const graph: Record<string, string[]> = {
    a: ['b'],
    b: ['c', 'd'],
    c: [],
    d: ['x'],
    e: ['f'],
    f: ['e'],
    g: ['x', 'c'],
  };
  const lookup = (k: string) =>
    graph[k] ? { prerequisites: graph[k].map((flagKey) => ({ flagKey, variation: 'on' })) } : undefined;
  const pre = (...keys: string[]) => keys.map((flagKey) => ({ flagKey, variation: 'on' }));
  const cases: { name: string; flag: string; prereqs: Prerequisite[]; cycle: string[] | null }[] = [
    { name: 'no prerequisites, no cycle', flag: 'x', prereqs: [], cycle: null },
    { name: 'a chain that never returns is no cycle', flag: 'x', prereqs: pre('c'), cycle: null },
    {
      name: 'a path through several flags back to the flag is found',
      flag: 'x',
      prereqs: pre('c', 'a'),
      cycle: ['x', 'a', 'b', 'd', 'x'],
    },
    { name: 'a self-reference is a cycle of one', flag: 'x', prereqs: pre('x'), cycle: ['x', 'x'] },
    {
      name: 'a loop among other flags that never reaches this one is not its cycle',
      flag: 'y',
      prereqs: pre('e'),
      cycle: null,
    },
    { name: 'missing flags end a path', flag: 'x', prereqs: pre('nope'), cycle: null },
    { name: "the flag's old prerequisites in the lookup are not used", flag: 'g', prereqs: pre('c'), cycle: null },
  ];
  for (const cs of cases) t.same(findPrerequisiteCycle(cs.flag, cs.prereqs, lookup), cs.cycle, cs.name);
});

t.test('validateFlag guards values that did not come through the schema', async (t) => {
  const f: FlagDefinition = {
    key: 'k',
    name: 'k',
    type: 'string',
    enabled: true,
    defaultVariation: 'a',
    variations: [{ key: 'a', value: 'x' }],
    targets: [],
    prerequisites: [],
    rules: [{ id: 'r', clauses: [{ attribute: 'x', op: 'like' as never, values: [] }], variation: 'a' }],
    rollout: [{ variation: 'a', weight: 1.5 }],
  };
  const fields = validateFlag(f).map((e) => e.field);
  t.same(fields, ['rules[0].clauses[0].op', 'rollout[0].weight']);
});

t.test('segments: create defaults, full-replacement PUT and their rules', async (t) => {
  const created = decodeSegmentCreate({ key: 'beta' });
  t.same(
    created.ok ? created.value : null,
    { key: 'beta', name: 'beta', included: [], excluded: [], rules: [] },
    'a key alone is a valid segment with defaults',
  );
  const put = decodeSegmentPut(
    { name: 'Beta', included: ['u1'], rules: [{ clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }] }] },
    'beta',
  );
  t.same(
    put.ok ? put.value : null,
    {
      key: 'beta',
      name: 'Beta',
      included: ['u1'],
      excluded: [],
      rules: [{ clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }] }],
    },
    'PUT replaces and resets omitted lists',
  );
  const cases: { name: string; r: ReturnType<typeof decodeSegmentCreate>; field: string; message: RegExp }[] = [
    {
      name: 'a bad segment key is refused',
      r: decodeSegmentCreate({ key: 'a b' }),
      field: 'key',
      message: /must be 1 to 128/,
    },
    {
      name: 'a missing segment key is refused',
      r: decodeSegmentCreate({ name: 'x' }),
      field: 'key',
      message: /is required/,
    },
    {
      name: 'included must hold strings',
      r: decodeSegmentCreate({ key: 's', included: [1] }),
      field: 'included[0]',
      message: /must be a string/,
    },
    {
      name: 'an empty excluded key is refused',
      r: decodeSegmentCreate({ key: 's', excluded: [''] }),
      field: 'excluded[0]',
      message: /non-empty/,
    },
    {
      name: 'an unknown operator in a segment rule is refused',
      r: decodeSegmentCreate({ key: 's', rules: [{ clauses: [{ attribute: 'a', op: 'eq', values: [] }] }] }),
      field: 'rules[0].clauses[0].op',
      message: /must be one of/,
    },
    {
      name: 'segmentMatch inside a segment is refused',
      r: decodeSegmentCreate({
        key: 's',
        rules: [{ clauses: [{ attribute: '', op: 'segmentMatch', values: ['t'] }] }],
      }),
      field: 'rules[0].clauses[0].op',
      message: /cannot be used inside a segment/,
    },
    {
      name: 'a renamed segment key on PUT is refused',
      r: decodeSegmentPut({ key: 'other' }, 's'),
      field: 'key',
      message: /cannot be renamed/,
    },
  ];
  for (const cs of cases) {
    const hit = errorsOf(cs.r).find((e) => e.field === cs.field);
    t.ok(hit, `${cs.name} (${JSON.stringify(errorsOf(cs.r))})`);
    t.match(hit?.message ?? '', cs.message, `${cs.name}: message`);
  }
  t.same(
    validateSegment({ key: 'ok', name: 'ok', included: ['a'], excluded: ['a'], rules: [] }),
    [],
    'a key both included and excluded is allowed (excluded wins)',
  );
});

t.test('JSON pointers become readable field paths', async (t) => {
  const cases = [
    ['', 'body'],
    ['/key', 'key'],
    ['/rules/0/clauses/12/op', 'rules[0].clauses[12].op'],
    ['/a~1b', 'a/b'],
  ] as const;
  for (const [pointer, field] of cases)
    t.equal(jsonPointerToField(pointer), field, `${JSON.stringify(pointer)} → ${field}`);
});

t.test('evaluate request bodies: a flat context with scalar or array attributes', async (t) => {
  const ok = decodeEvaluateBody({
    context: { key: 'u1', kind: 'user', age: 30, beta: true, groups: ['a', 'b'], nick: null },
    flagKeys: ['f'],
  });
  t.same(
    ok.ok ? ok.value : null,
    { context: { key: 'u1', kind: 'user', age: 30, beta: true, groups: ['a', 'b'], nick: null }, flagKeys: ['f'] },
    'a valid body passes through',
  );
  t.ok(decodeEvaluateBody({ context: {} }).ok, 'a context without a key is allowed (rules can still match)');
  const cases: { name: string; body: unknown; field: string; message: RegExp }[] = [
    { name: 'a missing context is refused', body: {}, field: 'context', message: /is required/ },
    {
      name: 'a non-object context is refused',
      body: { context: 'u1' },
      field: 'context',
      message: /must be an object/,
    },
    {
      name: 'a numeric key is refused',
      body: { context: { key: 5 } },
      field: 'context.key',
      message: /must be a string/,
    },
    {
      name: 'a nested object attribute is refused',
      body: { context: { key: 'u', address: { city: 'x' } } },
      field: 'context.address',
      message: /string, number, boolean, null or an array of those/,
    },
    {
      name: 'an array of objects is refused',
      body: { context: { key: 'u', tags: [{}] } },
      field: 'context.tags',
      message: /array of those/,
    },
    {
      name: 'flagKeys must be strings',
      body: { context: {}, flagKeys: [1] },
      field: 'flagKeys',
      message: /array of flag keys/,
    },
    {
      name: 'unknown top-level fields are refused',
      body: { context: {}, user: {} },
      field: 'user',
      message: /is not a known field/,
    },
    { name: 'a non-object body is refused', body: null, field: 'body', message: /must be an object/ },
  ];
  for (const cs of cases) {
    const hit = errorsOf(decodeEvaluateBody(cs.body)).find((e) => e.field === cs.field);
    t.ok(hit, cs.name);
    t.match(hit?.message ?? '', cs.message, `${cs.name}: message`);
  }
});
