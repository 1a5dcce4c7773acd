// The flags console's pure logic (web/flags/model.ts) without a browser: stream events applied to
// the environment, the list filter and derived tags, rollout checks and percentages, the ruler's
// spans and the bucket's place on it (checked against the service's own bucketing), the audit diff,
// which field an API error names, typed variation parsing, and the token refresh schedule.
import t from 'tap';
import { bucketOfHashInput } from '../../src/flags/eval/bucket.js';
import { createHash } from 'node:crypto';
import {
  applyStreamEvent,
  bucketFromSha1Hex,
  bucketHashInput,
  diffJson,
  emptyEnv,
  errorField,
  fieldForError,
  filterFlags,
  flagRowsPageMax,
  flagsPage,
  flagTags,
  parseContext,
  parseJsonText,
  parseVariationValue,
  percentToWeight,
  recentContextsMax,
  refreshDelayMs,
  rememberContext,
  rolloutProblem,
  rulerSpans,
  spanOfBucket,
  splitList,
  tokenRefreshLeadMs,
  tokenRefreshMinDelayMs,
  weightToPercent,
  type Flag,
} from '../../web/flags/model.js';

function flag(key: string, over: Partial<Flag> = {}): Flag {
  return {
    key,
    name: key,
    type: 'boolean',
    enabled: true,
    defaultVariation: 'off',
    variations: [
      { key: 'on', value: true },
      { key: 'off', value: false },
    ],
    targets: [],
    prerequisites: [],
    rules: [],
    rollout: [],
    version: 1,
    createdAt: '',
    updatedAt: '',
    ...over,
  };
}

t.test(
  'stream events: put replaces, patch sets unless older, delete removes unless the held copy is newer',
  async (t) => {
    let env = applyStreamEvent(
      emptyEnv(),
      'put',
      JSON.stringify({ path: '/', data: { flags: { a: flag('a'), b: flag('b') }, segments: {} } }),
    );
    t.same([...env.flags.keys()], ['a', 'b']);
    const cases: Array<{ name: string; event: string; data: unknown; keys: string[]; aVersion?: number }> = [
      {
        name: 'a newer patch replaces the flag',
        event: 'patch',
        data: { path: '/flags/a', data: flag('a', { version: 3 }) },
        keys: ['a', 'b'],
        aVersion: 3,
      },
      {
        name: 'an older patch is ignored',
        event: 'patch',
        data: { path: '/flags/a', data: flag('a', { version: 2 }) },
        keys: ['a', 'b'],
        aVersion: 3,
      },
      {
        name: 'a patch of a new flag adds it',
        event: 'patch',
        data: { path: '/flags/c', data: flag('c') },
        keys: ['a', 'b', 'c'],
        aVersion: 3,
      },
      {
        name: 'a stale delete is ignored',
        event: 'delete',
        data: { path: '/flags/a', version: 2 },
        keys: ['a', 'b', 'c'],
        aVersion: 3,
      },
      {
        name: 'a delete removes',
        event: 'delete',
        data: { path: '/flags/b', version: 2 },
        keys: ['a', 'c'],
        aVersion: 3,
      },
      {
        name: 'an unknown event changes nothing',
        event: 'ping',
        data: { path: '/flags/a' },
        keys: ['a', 'c'],
        aVersion: 3,
      },
      {
        name: 'an unknown path changes nothing',
        event: 'patch',
        data: { path: '/other/a', data: {} },
        keys: ['a', 'c'],
        aVersion: 3,
      },
    ];
    for (const c of cases) {
      env = applyStreamEvent(env, c.event, JSON.stringify(c.data));
      t.same([...env.flags.keys()].sort(), c.keys, c.name);
      t.equal(env.flags.get('a')?.version, c.aVersion, `${c.name}: version of a`);
    }
    t.equal(applyStreamEvent(env, 'patch', 'not json'), env, 'bad JSON leaves the state as it was');
    const seg = applyStreamEvent(
      env,
      'patch',
      JSON.stringify({ path: '/segments/beta', data: { key: 'beta', version: 1 } }),
    );
    t.ok(seg.segments.has('beta'), 'segments are patched too');
    t.equal(seg.flags, env.flags, 'a segment patch keeps the flags map');
  },
);

t.test('the list filter matches key, name, derived tags and status; tag: is exact', async (t) => {
  const flags = [
    flag('checkout', { rollout: [{ variation: 'on', weight: 100000 }] }),
    flag('beta-banner', {
      enabled: false,
      type: 'string',
      variations: [{ key: 'a', value: 'x' }],
      defaultVariation: 'a',
    }),
    flag('search', {
      rules: [{ id: 'r', variation: 'on', clauses: [{ attribute: '', op: 'segmentMatch', values: ['s'] }] }],
    }),
  ];
  t.same(flagTags(flags[2] as Flag), ['boolean', 'rules', 'segments']);
  const cases: Array<[string, string[]]> = [
    ['', ['beta-banner', 'checkout', 'search']],
    ['CHECK', ['checkout']],
    ['off', ['beta-banner']],
    ['rollout', ['checkout']],
    ['tag:string', ['beta-banner']],
    ['tag:rule', []],
    ['on tag:boolean', ['checkout', 'search']],
    ['nothing-like-this', []],
  ];
  for (const [q, keys] of cases)
    t.same(
      filterFlags(flags, q).map((f) => f.key),
      keys,
      `query ${JSON.stringify(q)}`,
    );
});

t.test('rollouts: problems in the API words, percentages both ways', async (t) => {
  const keys = ['on', 'off'];
  const cases: Array<[string, Array<{ variation: string; weight: number }>, RegExp | undefined]> = [
    ['an empty rollout is fine', [], undefined],
    [
      '30/70 adds up',
      [
        { variation: 'on', weight: 30000 },
        { variation: 'off', weight: 70000 },
      ],
      undefined,
    ],
    [
      'one short of the total',
      [
        { variation: 'on', weight: 30000 },
        { variation: 'off', weight: 69999 },
      ],
      /^rollout: weights must sum to 100000 \(got 99999\)/,
    ],
    [
      'one past the total',
      [
        { variation: 'on', weight: 30001 },
        { variation: 'off', weight: 70000 },
      ],
      /got 100001/,
    ],
    [
      'a negative weight',
      [
        { variation: 'on', weight: -1 },
        { variation: 'off', weight: 100001 },
      ],
      /^rollout\[0\]\.weight/,
    ],
    ['a fractional weight', [{ variation: 'on', weight: 0.5 }], /^rollout\[0\]\.weight/],
    ['an unknown variation', [{ variation: 'maybe', weight: 100000 }], /^rollout\[0\]\.variation/],
  ];
  for (const [name, entries, want] of cases) {
    const p = rolloutProblem(entries, keys);
    if (want) t.match(p, want, name);
    else t.equal(p, undefined, name);
  }
  t.equal(weightToPercent(30000), '30');
  t.equal(weightToPercent(33333), '33.333');
  t.equal(percentToWeight('30'), 30000);
  t.equal(percentToWeight('33.333'), 33333);
  t.equal(percentToWeight('100'), 100000);
  t.ok(Number.isNaN(percentToWeight('100.001')), 'past 100 % is not a weight');
  t.ok(Number.isNaN(percentToWeight('-1')));
  t.ok(Number.isNaN(percentToWeight('')));
  t.ok(Number.isNaN(percentToWeight('abc')));
});

t.test('the ruler: spans in order, the bucket lands where evaluation puts it', async (t) => {
  const rollout = [
    { variation: 'on', weight: 30000 },
    { variation: 'off', weight: 70000 },
  ];
  const spans = rulerSpans(rollout);
  t.same(
    spans.map((s) => s.variation),
    ['on', 'off'],
  );
  t.equal(spans[0]?.start, 0);
  t.equal(spans[0]?.end, 0.3);
  t.equal(spans[1]?.end, 1);
  const cases: Array<[number, number]> = [
    [0, 0],
    [0.2999, 0],
    [0.3, 1],
    [0.9999, 1],
    [1, 1],
  ];
  for (const [b, i] of cases) t.equal(spanOfBucket(rollout, b), i, `bucket ${b} → entry ${i}`);
  t.equal(spanOfBucket([], 0.5), -1, 'an empty rollout has no entry');
  t.equal(
    spanOfBucket(
      [
        { variation: 'on', weight: 0 },
        { variation: 'off', weight: 100000 },
      ],
      0,
    ),
    1,
    'a zero-weight entry never wins',
  );
  // The page computes the bucket from SubtleCrypto's SHA-1; here node's, against the service's function.
  for (const key of ['user-1', 'user-2', 'alice', '12345']) {
    const input = bucketHashInput({ key: 'checkout', bucketBy: undefined, seed: undefined } as unknown as Flag, {
      key,
    });
    t.equal(input, `checkout.checkout.${key}`);
    const hex = createHash('sha1')
      .update(input as string)
      .digest('hex');
    t.equal(bucketFromSha1Hex(hex), bucketOfHashInput(input as string), `bucket of ${key} matches the service`);
  }
  t.equal(
    bucketHashInput({ key: 'f', seed: 's', bucketBy: 'org' } as unknown as Flag, { key: 'u', org: 42 }),
    's.42',
    'seed and bucketBy are used',
  );
  t.equal(
    bucketHashInput({ key: 'f' } as unknown as Flag, { key: 1.5 }),
    undefined,
    'a fractional number has no bucket value',
  );
});

t.test('the audit diff lists leaf changes by path and skips bookkeeping fields', async (t) => {
  const a = flag('a');
  const b = flag('a', {
    enabled: false,
    version: 2,
    updatedAt: 'later',
    rules: [{ id: 'r1', variation: 'on', clauses: [] }],
  });
  t.same(diffJson(a, b), [
    { path: 'enabled', kind: 'changed', before: true, after: false },
    { path: 'rules[0]', kind: 'added', after: { id: 'r1', variation: 'on', clauses: [] } },
  ]);
  t.same(
    diffJson(null, a).map((d) => d.path),
    ['(created)'],
  );
  t.same(
    diffJson(a, null).map((d) => d.path),
    ['(deleted)'],
  );
  t.same(diffJson(a, a), [], 'no change, no entries');
  const many = diffJson(
    { x: Array.from({ length: 10 }, (_, i) => i) },
    { x: Array.from({ length: 10 }, (_, i) => i + 1) },
    3,
  );
  t.equal(many.length, 4, 'cut at the maximum plus one line saying so');
  t.match(many[3]?.path, /7 more changes/);
});

t.test('API errors are placed beside the field they name', async (t) => {
  const fields = ['key', 'variations', 'variations[0].value', 'rollout', 'rules[0].clauses[1].values', 'rules[0]'];
  const cases: Array<[string, string | undefined, string | undefined]> = [
    ['rollout: weights must sum to 100000 (got 99999)', 'rollout', 'rollout'],
    ['rollout[1].weight: must be a non-negative integer', 'rollout[1].weight', 'rollout'],
    ['variations[0].value: must be true or false', 'variations[0].value', 'variations[0].value'],
    ['rules[0].clauses[1].values[0]: must be a string', 'rules[0].clauses[1].values[0]', 'rules[0].clauses[1].values'],
    ['rules[0].id: duplicate rule id', 'rules[0].id', 'rules[0]'],
    ['invalid token', undefined, undefined],
    ['prerequisites: prerequisite cycle a -> b -> a', 'prerequisites', undefined],
  ];
  for (const [msg, field, placed] of cases) {
    t.equal(errorField(msg), field, `field of ${JSON.stringify(msg)}`);
    t.equal(fieldForError(msg, fields), placed, `placed beside ${String(placed)}`);
  }
});

t.test('typed inputs: variation values per type, JSON with a position, contexts', async (t) => {
  const cases: Array<[Flag['type'], string, unknown]> = [
    ['boolean', 'true', true],
    ['boolean', 'yes', undefined],
    ['integer', '42', 42],
    ['integer', '4.2', undefined],
    ['integer', '', undefined],
    ['string', ' x ', ' x '],
    ['json', '{"a":[1,2]}', { a: [1, 2] }],
    ['json', '{"a":', undefined],
  ];
  for (const [type, text, want] of cases) {
    const p = parseVariationValue(type, text);
    if (want === undefined) t.notOk(p.ok, `${type} ${JSON.stringify(text)} is refused`);
    else t.same(p.ok && p.value, want, `${type} ${JSON.stringify(text)}`);
  }
  const bad = parseJsonText('{\n  "a": 1,\n  oops\n}');
  t.notOk(bad.ok);
  t.match(!bad.ok && bad.error, /line 3/, 'the error names the line');
  t.notOk(parseContext('[1]').ok, 'a context must be an object');
  t.ok(parseContext('{"key":"u"}').ok);
  let recent: string[] = [];
  for (let i = 0; i < recentContextsMax + 3; i++) recent = rememberContext(recent, `{"key": "u${i}"}`);
  recent = rememberContext(recent, '{"key":"u5"}');
  t.equal(recent.length, recentContextsMax, 'recent contexts are capped');
  t.equal(recent[0], '{"key":"u5"}', 'a context used again moves to the front, once');
  t.equal(recent.filter((r) => r === '{"key":"u5"}').length, 1);
  t.same(splitList(' a, b\nc,, '), ['a', 'b', 'c']);
});

t.test('tokens are refreshed a minute before they expire, never sooner than the minimum', async (t) => {
  t.equal(refreshDelayMs(3600), 3600_000 - tokenRefreshLeadMs);
  t.equal(refreshDelayMs(30), tokenRefreshMinDelayMs);
  t.equal(refreshDelayMs(0), tokenRefreshMinDelayMs);
});

t.test('flagsPage: the table renders a page of rows at a time, "Show more" adds a page', async (t) => {
  const keys = Array.from({ length: 250 }, (_, i) => `f${i}`);
  const cases: Array<{ name: string; list: string[]; pages: number; rows: number; hidden: number }> = [
    { name: 'a short list is shown whole', list: keys.slice(0, 3), pages: 0, rows: 3, hidden: 0 },
    {
      name: 'exactly one page: nothing hidden',
      list: keys.slice(0, flagRowsPageMax),
      pages: 0,
      rows: flagRowsPageMax,
      hidden: 0,
    },
    {
      name: 'one past a page: one hidden',
      list: keys.slice(0, flagRowsPageMax + 1),
      pages: 0,
      rows: flagRowsPageMax,
      hidden: 1,
    },
    {
      name: 'one "Show more" adds a page',
      list: keys,
      pages: 1,
      rows: 2 * flagRowsPageMax,
      hidden: 250 - 2 * flagRowsPageMax,
    },
    { name: 'more presses than pages show everything', list: keys, pages: 9, rows: 250, hidden: 0 },
    {
      name: 'a negative page count reads as the first page',
      list: keys,
      pages: -1,
      rows: flagRowsPageMax,
      hidden: 250 - flagRowsPageMax,
    },
  ];
  for (const c of cases) {
    const p = flagsPage(c.list, c.pages);
    t.equal(p.rows.length, c.rows, `${c.name}: rows`);
    t.equal(p.hidden, c.hidden, `${c.name}: hidden`);
    t.same(p.rows, c.list.slice(0, c.rows), `${c.name}: the first rows, in order`);
  }
});
