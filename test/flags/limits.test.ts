/**
 * Black-box tests of the flag service's input limits (src/flags/limits.ts), against the real server
 * on a free port: every limit accepted at its value and refused one past it with a 400 `{error}`
 * naming the field and the limit, and nothing stored; the issue-16 reproduction (a json flag nested
 * about 4,100 levels) refused; and the most complex objects the API accepts read back intact through
 * every path that returns them (GET, lists, both evaluate APIs, latest-all, SSE put and patch, audit,
 * projects and environments).
 */
import t from 'tap';
import * as L from '../../src/flags/limits.js';
import {
  normalizeFlag,
  normalizeSegment,
  type FlagCreateBody,
  type SegmentCreateBody,
} from '../../src/flags/model/schemas.js';
import { jsonBytes } from '../../src/flags/model/validate.js';
import { boolFlag, openStream, startHarness, type Harness } from './fixtures/helpers.js';

const P = '/api/v1/projects/lim';
const E = `${P}/environments/prod`;

function err(r: { body: unknown }): string {
  return (r.body as { error?: string } | undefined)?.error ?? '';
}

/** An array nested `depth` levels (depth 1 is `["leaf"]`). */
function nested(depth: number): unknown {
  let v: unknown = ['leaf'];
  for (let i = 1; i < depth; i++) v = i % 2 === 0 ? [v] : { k: v };
  return v;
}

function jsonFlag(key: string, value: unknown, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { key, type: 'json', enabled: true, defaultVariation: 'v', variations: [{ key: 'v', value }], ...over };
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
const keys = (n: number, prefix = 'u'): string[] => range(n).map((i) => `${prefix}${i}`);
const rules = (n: number, over: Record<string, unknown> = {}): unknown[] =>
  range(n).map((i) => ({ id: `r${i}`, clauses: [], variation: 'on', ...over }));
const clause = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  attribute: 'email',
  op: 'in',
  values: ['a'],
  ...over,
});

/** A string flag whose normalised definition is exactly `bytes` long as JSON (padding its first value). */
function flagOfBytes(key: string, bytes: number): Record<string, unknown> {
  const body = (pad: number): Record<string, unknown> => ({
    key,
    type: 'string',
    enabled: true,
    defaultVariation: 'a',
    variations: ['a', 'b', 'c', 'd', 'e'].map((k, i) => ({
      key: k,
      value: i === 0 ? 'x'.repeat(pad) : 'y'.repeat(60_000),
    })),
  });
  return body(bytes - jsonBytes(normalizeFlag(body(0) as FlagCreateBody)));
}

/** A segment whose normalised definition is exactly `bytes` long as JSON (250-character keys, then the name). */
function segmentOfBytes(key: string, bytes: number): Record<string, unknown> {
  const included: string[] = [];
  const size = (): number => jsonBytes(normalizeSegment({ key, name: '', included } as SegmentCreateBody));
  while (size() < bytes - L.nameCharsMax)
    included.push(`${'k'.repeat(240)}${String(included.length).padStart(10, '0')}`);
  return { key, name: 'n'.repeat(bytes - size()), included };
}

interface LimitCase {
  name: string;
  method?: 'POST' | 'PUT';
  path?: string;
  /** The body at the limit (accepted) and one past it (refused). */
  at: unknown;
  past: unknown;
  /** The 400's error must match this (field and limit). */
  error: RegExp;
}

const flagCases: LimitCase[] = [
  {
    name: 'flag name',
    at: boolFlag('n', { name: 'n'.repeat(L.nameCharsMax) }),
    past: boolFlag('n', { name: 'n'.repeat(L.nameCharsMax + 1) }),
    error: /^name: must be at most 256 characters/,
  },
  {
    name: 'variations per flag',
    at: {
      key: 'v',
      type: 'integer',
      defaultVariation: 'v0',
      variations: range(L.variationsPerFlagMax).map((i) => ({ key: `v${i}`, value: i })),
    },
    past: {
      key: 'v',
      type: 'integer',
      defaultVariation: 'v0',
      variations: range(L.variationsPerFlagMax + 1).map((i) => ({ key: `v${i}`, value: i })),
    },
    error: /^variations: must be at most 100 items/,
  },
  {
    name: 'variation key',
    at: {
      key: 'vk',
      type: 'boolean',
      defaultVariation: 'k'.repeat(L.variationKeyCharsMax),
      variations: [{ key: 'k'.repeat(L.variationKeyCharsMax), value: true }],
    },
    past: {
      key: 'vk',
      type: 'boolean',
      defaultVariation: 'k',
      variations: [
        { key: 'k'.repeat(L.variationKeyCharsMax + 1), value: true },
        { key: 'k', value: false },
      ],
    },
    error: /^variations\[0\]\.key: must be at most 128 characters/,
  },
  {
    name: 'variation value bytes',
    at: {
      key: 'vb',
      type: 'string',
      defaultVariation: 'a',
      variations: [{ key: 'a', value: 's'.repeat(L.variationValueBytesMax - 2) }],
    },
    past: {
      key: 'vb',
      type: 'string',
      defaultVariation: 'a',
      variations: [{ key: 'a', value: 's'.repeat(L.variationValueBytesMax - 1) }],
    },
    error: /^variations\[0\]\.value: must be at most 65536 bytes as JSON/,
  },
  {
    name: 'json value nesting',
    at: jsonFlag('deep', nested(L.jsonValueDepthMax)),
    past: jsonFlag('deep', nested(L.jsonValueDepthMax + 1)),
    error: /^variations\[0\]\.value: must nest at most 32 levels/,
  },
  {
    name: 'targets per flag',
    at: boolFlag('t', {
      targets: range(L.targetsPerFlagMax).map((i) => ({ contextKeys: [`u${i}`], variation: 'on' })),
    }),
    past: boolFlag('t', {
      targets: range(L.targetsPerFlagMax + 1).map((i) => ({ contextKeys: [`u${i}`], variation: 'on' })),
    }),
    error: /^targets: must be at most 100 items/,
  },
  {
    name: 'targeted context keys per flag',
    at: boolFlag('tk', {
      targets: [
        { contextKeys: keys(5000), variation: 'on' },
        { contextKeys: keys(5000, 'w'), variation: 'off' },
      ],
    }),
    past: boolFlag('tk', {
      targets: [
        { contextKeys: keys(5000), variation: 'on' },
        { contextKeys: keys(5001, 'w'), variation: 'off' },
      ],
    }),
    error: /^targets: must name at most 10000 context keys in all/,
  },
  {
    name: 'context key in a target',
    at: boolFlag('ck', { targets: [{ contextKeys: ['c'.repeat(L.contextKeyCharsMax)], variation: 'on' }] }),
    past: boolFlag('ck', { targets: [{ contextKeys: ['c'.repeat(L.contextKeyCharsMax + 1)], variation: 'on' }] }),
    error: /^targets\[0\]\.contextKeys\[0\]: must be at most 256 characters/,
  },
  {
    name: 'prerequisites per flag',
    at: boolFlag('pr', {
      prerequisites: keys(L.prerequisitesPerFlagMax, 'f').map((k) => ({ flagKey: k, variation: 'on' })),
    }),
    past: boolFlag('pr', {
      prerequisites: keys(L.prerequisitesPerFlagMax + 1, 'f').map((k) => ({ flagKey: k, variation: 'on' })),
    }),
    error: /^prerequisites: must be at most 50 items/,
  },
  {
    name: 'rules per flag',
    at: boolFlag('r', { rules: rules(L.rulesPerDefinitionMax) }),
    past: boolFlag('r', { rules: rules(L.rulesPerDefinitionMax + 1) }),
    error: /^rules: must be at most 200 items/,
  },
  {
    name: 'rule id',
    at: boolFlag('ri', { rules: [{ id: 'i'.repeat(L.ruleIdCharsMax), clauses: [], variation: 'on' }] }),
    past: boolFlag('ri', { rules: [{ id: 'i'.repeat(L.ruleIdCharsMax + 1), clauses: [], variation: 'on' }] }),
    error: /^rules\[0\]\.id: must be at most 128 characters/,
  },
  {
    name: 'clauses per rule',
    at: boolFlag('c', {
      rules: [{ id: 'r', clauses: range(L.clausesPerRuleMax).map(() => clause()), variation: 'on' }],
    }),
    past: boolFlag('c', {
      rules: [{ id: 'r', clauses: range(L.clausesPerRuleMax + 1).map(() => clause()), variation: 'on' }],
    }),
    error: /^rules\[0\]\.clauses: must be at most 50 items/,
  },
  {
    name: 'values per clause',
    at: boolFlag('cv', {
      rules: [{ id: 'r', clauses: [clause({ values: keys(L.clauseValuesMax) })], variation: 'on' }],
    }),
    past: boolFlag('cv', {
      rules: [{ id: 'r', clauses: [clause({ values: keys(L.clauseValuesMax + 1) })], variation: 'on' }],
    }),
    error: /^rules\[0\]\.clauses\[0\]\.values: must be at most 1000 items/,
  },
  {
    name: 'clause value',
    at: boolFlag('cl', {
      rules: [{ id: 'r', clauses: [clause({ values: ['v'.repeat(L.clauseValueCharsMax)] })], variation: 'on' }],
    }),
    past: boolFlag('cl', {
      rules: [{ id: 'r', clauses: [clause({ values: ['v'.repeat(L.clauseValueCharsMax + 1)] })], variation: 'on' }],
    }),
    error: /^rules\[0\]\.clauses\[0\]\.values\[0\]: must be at most 1024 characters/,
  },
  {
    name: 'clause attribute',
    at: boolFlag('ca', {
      rules: [{ id: 'r', clauses: [clause({ attribute: 'a'.repeat(L.attributeCharsMax) })], variation: 'on' }],
    }),
    past: boolFlag('ca', {
      rules: [{ id: 'r', clauses: [clause({ attribute: 'a'.repeat(L.attributeCharsMax + 1) })], variation: 'on' }],
    }),
    error: /^rules\[0\]\.clauses\[0\]\.attribute: must be at most 256 characters/,
  },
  {
    name: 'rollout entries',
    at: boolFlag('ro', {
      rollout: range(L.rolloutEntriesMax).map((i) => ({ variation: i % 2 ? 'on' : 'off', weight: 1000 })),
    }),
    past: boolFlag('ro', {
      rollout: range(L.rolloutEntriesMax + 1).map((i) => ({
        variation: i % 2 ? 'on' : 'off',
        weight: i === 0 ? 0 : 1000,
      })),
    }),
    error: /^rollout: must be at most 100 items/,
  },
  {
    name: 'bucketBy',
    at: boolFlag('bb', { bucketBy: 'b'.repeat(L.attributeCharsMax) }),
    past: boolFlag('bb', { bucketBy: 'b'.repeat(L.attributeCharsMax + 1) }),
    error: /^bucketBy: must be at most 256 characters/,
  },
  {
    name: 'seed',
    at: boolFlag('sd', { seed: 's'.repeat(L.seedCharsMax) }),
    past: boolFlag('sd', { seed: 's'.repeat(L.seedCharsMax + 1) }),
    error: /^seed: must be at most 256 characters/,
  },
  {
    name: 'whole flag bytes',
    at: flagOfBytes('whole', L.flagDefinitionBytesMax),
    past: flagOfBytes('whole', L.flagDefinitionBytesMax + 1),
    error: /^body: the flag must be at most 262144 bytes as JSON/,
  },
];

const segmentCases: LimitCase[] = [
  {
    name: 'segment name',
    at: { key: 's', name: 'n'.repeat(L.nameCharsMax) },
    past: { key: 's', name: 'n'.repeat(L.nameCharsMax + 1) },
    error: /^name: must be at most 256 characters/,
  },
  {
    name: 'segment included',
    at: { key: 's', included: keys(L.segmentContextKeysMax) },
    past: { key: 's', included: keys(L.segmentContextKeysMax + 1) },
    error: /^included: must be at most 10000 items/,
  },
  {
    name: 'segment excluded',
    at: { key: 's', excluded: keys(L.segmentContextKeysMax) },
    past: { key: 's', excluded: keys(L.segmentContextKeysMax + 1) },
    error: /^excluded: must be at most 10000 items/,
  },
  {
    name: 'segment context key',
    at: { key: 's', included: ['k'.repeat(L.contextKeyCharsMax)] },
    past: { key: 's', included: ['k'.repeat(L.contextKeyCharsMax + 1)] },
    error: /^included\[0\]: must be at most 256 characters/,
  },
  {
    name: 'segment rules',
    at: { key: 's', rules: range(L.rulesPerDefinitionMax).map(() => ({ clauses: [clause()] })) },
    past: { key: 's', rules: range(L.rulesPerDefinitionMax + 1).map(() => ({ clauses: [clause()] })) },
    error: /^rules: must be at most 200 items/,
  },
  {
    name: 'whole segment bytes',
    at: segmentOfBytes('s', L.segmentDefinitionBytesMax),
    past: segmentOfBytes('s', L.segmentDefinitionBytesMax + 1),
    error: /^body: the segment must be at most 262144 bytes as JSON/,
  },
];

const ctx = (over: Record<string, unknown>): Record<string, unknown> => ({ context: { key: 'u1', ...over } });
const evaluateCases: LimitCase[] = [
  {
    name: 'context attributes',
    at: { context: Object.fromEntries(keys(L.contextAttributesMax, 'a').map((k) => [k, 1])) },
    past: { context: Object.fromEntries(keys(L.contextAttributesMax + 1, 'a').map((k) => [k, 1])) },
    error: /^context: must have at most 256 attributes/,
  },
  {
    name: 'context attribute name',
    at: ctx({ ['n'.repeat(L.attributeCharsMax)]: 1 }),
    past: ctx({ ['n'.repeat(L.attributeCharsMax + 1)]: 1 }),
    error: /^context: attribute names must be at most 256 characters/,
  },
  {
    name: 'context string value',
    at: ctx({ s: 'v'.repeat(L.contextValueCharsMax) }),
    past: ctx({ s: 'v'.repeat(L.contextValueCharsMax + 1) }),
    error: /^context\.s: must be at most 16384 characters/,
  },
  {
    name: 'context array items',
    at: ctx({ tags: keys(L.contextArrayItemsMax) }),
    past: ctx({ tags: keys(L.contextArrayItemsMax + 1) }),
    error: /^context\.tags: must have at most 1000 items/,
  },
  {
    name: 'context array string',
    at: ctx({ tags: ['v'.repeat(L.contextValueCharsMax)] }),
    past: ctx({ tags: ['v'.repeat(L.contextValueCharsMax + 1)] }),
    error: /^context\.tags: strings must be at most 16384 characters/,
  },
  {
    name: 'flagKeys',
    at: { ...ctx({}), flagKeys: keys(L.evaluateFlagKeysMax) },
    past: { ...ctx({}), flagKeys: keys(L.evaluateFlagKeysMax + 1) },
    error: /^flagKeys: must have at most 1000 items/,
  },
];

const userCases: LimitCase[] = [
  {
    name: 'password, short end',
    at: { email: 'short@example.com', password: 'p'.repeat(L.passwordCharsMin), role: 'viewer' },
    past: { email: 'short2@example.com', password: 'p'.repeat(L.passwordCharsMin - 1), role: 'viewer' },
    error: /^password: must be 8 to 1024 characters/,
  },
  {
    name: 'password, long end',
    at: { email: 'long@example.com', password: 'p'.repeat(L.passwordCharsMax), role: 'viewer' },
    past: { email: 'long2@example.com', password: 'p'.repeat(L.passwordCharsMax + 1), role: 'viewer' },
    error: /^password: must be 8 to 1024 characters/,
  },
  {
    name: 'email',
    at: { email: `${'e'.repeat(L.emailCharsMax - 12)}@example.com`, password: 'password-1', role: 'viewer' },
    past: { email: `${'e'.repeat(L.emailCharsMax - 11)}@example.com`, password: 'password-1', role: 'viewer' },
    error: /^email: must be at most 254 characters/,
  },
];

async function snapshot(h: Harness, tok: string): Promise<unknown> {
  return {
    flags: (await h.call('GET', `${E}/flags`, { token: tok })).body,
    segments: (await h.call('GET', `${P}/segments`, { token: tok })).body,
    audit: (await h.call('GET', `${P}/audit?limit=1`, { token: tok })).body,
    users: (await h.call('GET', '/api/v1/users', { token: tok })).body,
  };
}

t.test(
  'every input limit is accepted at its value and refused one past it, naming the field and the limit',
  async (t) => {
    const h = await startHarness(t);
    const tok = await h.login();
    await h.call('PUT', E, { token: tok });
    const groups: Array<{ path: string; cases: LimitCase[]; cleanup?: (body: unknown) => Promise<void> }> = [
      {
        path: `${E}/flags`,
        cases: flagCases,
        cleanup: async (b) => void (await h.call('DELETE', `${E}/flags/${(b as { key: string }).key}`, { token: tok })),
      },
      {
        path: `${P}/segments`,
        cases: segmentCases,
        cleanup: async (b) =>
          void (await h.call('DELETE', `${P}/segments/${(b as { key: string }).key}`, { token: tok })),
      },
      { path: `${E}/evaluate`, cases: evaluateCases },
      { path: '/api/v1/users', cases: userCases },
    ];
    for (const g of groups) {
      for (const c of g.cases) {
        const before = await snapshot(h, tok);
        const past = await h.call('POST', g.path, { token: tok, body: c.past });
        t.equal(past.status, 400, `${c.name}: one past the limit is a 400`);
        t.match(err(past), c.error, `${c.name}: the error names the field and the limit (${err(past).slice(0, 120)})`);
        t.same(await snapshot(h, tok), before, `${c.name}: nothing was stored`);
        const at = await h.call('POST', g.path, { token: tok, body: c.at });
        t.ok(
          at.status === 200 || at.status === 201,
          `${c.name}: at the limit it is accepted (${at.status} ${err(at).slice(0, 200)})`,
        );
        if (g.cleanup && at.status === 201) await g.cleanup(c.at);
      }
    }
    // PUT bodies go through the same decoders.
    await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('p') });
    const put = await h.call('PUT', `${E}/flags/p`, {
      token: tok,
      body: boolFlag('p', { name: 'n'.repeat(L.nameCharsMax + 1) }),
    });
    t.equal(put.status, 400);
    t.match(err(put), /^name: must be at most 256 characters/);
    t.equal(
      ((await h.call('GET', `${E}/flags/p`, { token: tok })).body as { version: number }).version,
      1,
      'the refused PUT changed nothing',
    );
  },
);

t.test('login and refresh refuse over-long input with a 400 naming the limit, without hashing it', async (t) => {
  const h = await startHarness(t);
  const cases = [
    {
      name: 'a 200,000-character password',
      path: '/auth/login',
      body: { email: 'admin@example.com', password: 'p'.repeat(200_000) },
      error: /^password: must be at most 1024 characters/,
    },
    {
      name: 'a 1,025-character password',
      path: '/auth/login',
      body: { email: 'admin@example.com', password: 'p'.repeat(L.passwordCharsMax + 1) },
      error: /^password: must be at most 1024 characters/,
    },
    {
      name: 'a 255-character email',
      path: '/auth/login',
      body: { email: 'e'.repeat(255), password: 'whatever-it-is' },
      error: /^email: must be at most 254 characters/,
    },
    {
      name: 'a 257-character refresh token',
      path: '/auth/refresh',
      body: { refreshToken: 'r'.repeat(L.refreshTokenCharsMax + 1) },
      error: /^refreshToken: must be at most 256 characters/,
    },
  ];
  for (const c of cases) {
    const r = await h.call('POST', c.path, { body: c.body });
    t.equal(r.status, 400, c.name);
    t.match(err(r), c.error, c.name);
  }
  const atLimit = await h.call('POST', '/auth/login', {
    body: { email: 'admin@example.com', password: 'p'.repeat(L.passwordCharsMax) },
  });
  t.equal(atLimit.status, 401, 'a 1,024-character wrong password is checked (and wrong)');
});

t.test('a FLAGS_ADMIN_PASSWORD outside 8 to 1,024 characters stops start-up instead of being hashed', async (t) => {
  for (const password of ['short', 'p'.repeat(200_000)]) {
    await t.rejects(
      startHarness(t, { FLAGS_ADMIN_PASSWORD: password }),
      /FLAGS_ADMIN_PASSWORD: must be 8 to 1024 characters/,
      `${password.length} characters`,
    );
  }
});

t.test('the count limits: flags per environment and segments per project', async (t) => {
  const { createCheck } = await import('../../src/flags/api/management-routes.js');
  const others = (n: number) =>
    range(n).map((i) => ({
      ...normalizeFlag(boolFlag(`f${i}`) as FlagCreateBody),
      version: 1,
      createdAt: '',
      updatedAt: '',
    }));
  const candidate = normalizeFlag(boolFlag('new') as FlagCreateBody);
  t.equal(createCheck(candidate, others(L.flagsPerEnvironmentMax - 1)), undefined, 'the 1000th flag is accepted');
  t.match(
    createCheck(candidate, others(L.flagsPerEnvironmentMax)),
    { field: 'key', message: /the environment already has 1000 flags \(the limit is 1000\)/ },
    'the 1001st is refused',
  );

  const h = await startHarness(t);
  const tok = await h.login();
  // 25 at a time (the count is checked inside each write's transaction, so concurrency is safe).
  for (let from = 0; from < L.segmentsPerProjectMax; from += 25) {
    const batch = range(25).map((i) => h.call('POST', `${P}/segments`, { token: tok, body: { key: `s${from + i}` } }));
    for (const r of await Promise.all(batch)) if (r.status !== 201) throw new Error(`segment: ${r.status} ${err(r)}`);
  }
  const past = await h.call('POST', `${P}/segments`, { token: tok, body: { key: 'one-more' } });
  t.equal(past.status, 400);
  t.match(err(past), /the project already has 500 segments \(the limit is 500\)/);
  t.equal(
    ((await h.call('GET', `${P}/segments`, { token: tok })).body as unknown[]).length,
    L.segmentsPerProjectMax,
    'nothing was stored',
  );
});

t.test('the issue-16 reproduction: a json flag nested 4,100 levels is a 400 and nothing is stored', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('neighbour') });
  const auditBefore = (await h.call('GET', `${P}/audit`, { token: tok })).body;
  // Written as text: the test's own JSON.stringify cannot nest that deep either.
  const raw = (key: string, depth: number): string =>
    `{"key":"${key}","type":"json","enabled":true,"defaultVariation":"v",` +
    `"variations":[{"key":"v","value":${'['.repeat(depth)}"leaf"${']'.repeat(depth)}}]}`;
  for (const depth of [4100, 4125, 100_000, 40]) {
    const r = await h.call('POST', `${E}/flags`, { token: tok, raw: raw('deep', depth) });
    t.equal(r.status, 400, `depth ${depth}: 400`);
    t.match(err(r), /nest|deep|depth/i, `depth ${depth}: the error names the nesting limit (${err(r)})`);
    const put = await h.call('PUT', `${E}/flags/neighbour`, { token: tok, raw: raw('neighbour', depth) });
    t.equal(put.status, 400, `depth ${depth}: a PUT is a 400 too`);
  }
  t.same(
    ((await h.call('GET', `${E}/flags`, { token: tok })).body as Array<{ key: string }>).map((f) => f.key),
    ['neighbour'],
    'nothing stored',
  );
  t.same((await h.call('GET', `${P}/audit`, { token: tok })).body, auditBefore, 'nothing audited');
  t.equal((await h.call('GET', '/healthz')).status, 200, 'the service is up');
  const key =
    ((await h.call('GET', `${P}/environments`, { token: tok })).body as Array<{ sdkKey: string }>)[0]?.sdkKey ?? '';
  t.equal(
    (await h.call('POST', '/sdk/v1/evaluate', { headers: { authorization: key }, body: { context: { key: 'u' } } }))
      .status,
    200,
    'evaluation still works',
  );
});

/** The most complex flag the API accepts: every part at or near its limit, unicode and control characters. */
function complexFlag(key: string, tag: string): Record<string, unknown> {
  const weird = `ünï©ødé 🚀 ${tag} \u0000\u0001\u001f\u007f\u2028\u2029 "quoted" \\ back\tslash\n`;
  const deepValue = { tag, list: [1, -0.5, 1e300, true, null, weird], deep: nested(L.jsonValueDepthMax - 1) };
  return {
    key,
    name: weird.padEnd(L.nameCharsMax, 'é').slice(0, L.nameCharsMax),
    type: 'json',
    enabled: true,
    defaultVariation: 'v0',
    variations: range(L.variationsPerFlagMax).map((i) => ({
      key: i === 0 ? 'v0' : `v${i}-${'k'.repeat(100)}`,
      value: i === 0 ? deepValue : { i, s: weird },
    })),
    targets: [{ contextKeys: [weird, 'ü'.repeat(L.contextKeyCharsMax)], variation: 'v1-'.concat('k'.repeat(100)) }],
    prerequisites: [{ flagKey: 'plain', variation: 'on' }],
    rules: range(120).map((i) => ({
      id: `rule ${i} ${weird}`.slice(0, L.ruleIdCharsMax),
      clauses: [
        { attribute: weird, op: 'in', values: [weird, 'x'.repeat(L.clauseValueCharsMax)] },
        { attribute: 'email', op: 'matches', values: ['^[a-z]+@ex\\.io$'], negate: true },
        { attribute: '', op: 'segmentMatch', values: ['big'] },
      ],
      variation: 'v2-'.concat('k'.repeat(100)),
    })),
    rollout: [
      { variation: 'v0', weight: 50_000 },
      { variation: 'v3-'.concat('k'.repeat(100)), weight: 50_000 },
    ],
    bucketBy: weird,
    seed: weird,
  };
}

function complexSegment(key: string): Record<string, unknown> {
  return {
    key,
    name: 'Ω segment \u0000\u2028',
    included: [...keys(2000, 'in-ü-'), 'u1'],
    excluded: keys(2000, 'ex-\u0001-'),
    rules: range(50).map((i) => ({
      id: `sr${i}`,
      clauses: [{ attribute: 'country', op: 'in', values: ['🇳🇱', `c${i}`] }],
    })),
  };
}

/** The definition fields of a stored flag or segment (what the client sent, defaults filled). */
function definitionOf(doc: unknown): unknown {
  const { version: _v, createdAt: _c, updatedAt: _u, ...rest } = doc as Record<string, unknown>;
  return rest;
}

t.test('the most complex objects the API accepts read back intact through every path that returns them', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('plain') });
  const seg = await h.call('POST', `${P}/segments`, { token: tok, body: complexSegment('big') });
  t.equal(seg.status, 201, `segment stored (${err(seg)})`);
  const body = complexFlag('complex', 'one');
  const created = await h.call('POST', `${E}/flags`, { token: tok, body });
  t.equal(created.status, 201, `flag stored (${err(created)})`);
  t.ok(jsonBytes(body) > 100_000, `the flag is large (${jsonBytes(body)} bytes)`);
  const expected = definitionOf(created.body);
  const expectedSegment = definitionOf(seg.body);
  t.same(expected, definitionOf({ ...normalizeFlag(body as FlagCreateBody), version: 0 }), 'stored as sent');

  const key =
    ((await h.call('GET', `${P}/environments`, { token: tok })).body as Array<{ key: string; sdkKey: string }>).find(
      (e) => e.key === 'prod',
    )?.sdkKey ?? '';
  const stream = await openStream(h.base, key);
  t.teardown(() => stream.close());
  const put = JSON.parse((await stream.next((e) => e.event === 'put')).data) as {
    data: { flags: Record<string, unknown>; segments: Record<string, unknown> };
  };

  const reads: Array<[string, () => Promise<unknown>]> = [
    ['GET flag', async () => definitionOf((await h.call('GET', `${E}/flags/complex`, { token: tok })).body)],
    [
      'list flags',
      async () =>
        definitionOf(
          ((await h.call('GET', `${E}/flags`, { token: tok })).body as Array<{ key: string }>).find(
            (f) => f.key === 'complex',
          ),
        ),
    ],
    [
      'SDK latest-all',
      async () =>
        definitionOf(
          (
            (await h.call('GET', '/sdk/v1/latest-all', { headers: { authorization: key } })).body as {
              flags: Record<string, unknown>;
            }
          ).flags['complex'],
        ),
    ],
    ['SSE put', async () => definitionOf(put.data.flags['complex'])],
    [
      'audit (after)',
      async () =>
        definitionOf(
          (
            (await h.call('GET', `${P}/audit?limit=500`, { token: tok })).body as Array<{
              resourceKey: string;
              after: unknown;
            }>
          ).find((a) => a.resourceKey === 'complex')?.after,
        ),
    ],
  ];
  for (const [name, read] of reads) t.same(await read(), expected, `${name} returns the flag intact`);
  t.same(definitionOf(put.data.segments['big']), expectedSegment, 'SSE put returns the segment intact');
  t.same(
    definitionOf((await h.call('GET', `${P}/segments/big`, { token: tok })).body),
    expectedSegment,
    'GET segment returns it intact',
  );
  t.same(
    definitionOf(((await h.call('GET', `${P}/segments`, { token: tok })).body as unknown[])[0]),
    expectedSegment,
    'list segments returns it intact',
  );

  const evalBody = {
    context: { key: 'u1', email: 'a@b.c', country: '🇳🇱', [String(body['bucketBy'])]: 'b' },
    flagKeys: ['complex'],
  };
  for (const [name, path, headers] of [
    ['management evaluate', `${E}/evaluate`, { authorization: `Bearer ${tok}` }],
    ['SDK evaluate', '/sdk/v1/evaluate', { authorization: key }],
  ] as const) {
    const r = await h.call('POST', path, { headers, body: evalBody });
    t.equal(r.status, 200, name);
    const answer = (r.body as { flags: Record<string, { value: unknown; variation: string }> }).flags['complex'];
    const variation = (expected as { variations: Array<{ key: string; value: unknown }> }).variations.find(
      (v) => v.key === answer?.variation,
    );
    t.ok(variation, `${name}: answers a variation of the flag (${answer?.variation})`);
    t.same(answer?.value, variation?.value, `${name}: with its value intact`);
  }

  // A replacement arrives as an SSE patch, and the audit keeps both versions.
  const next = complexFlag('complex', 'two');
  const replaced = await h.call('PUT', `${E}/flags/complex`, { token: tok, body: next });
  t.equal(replaced.status, 200, `replaced (${err(replaced)})`);
  const patch = JSON.parse((await stream.next((e) => e.event === 'patch')).data) as { path: string; data: unknown };
  t.equal(patch.path, '/flags/complex');
  t.same(definitionOf(patch.data), definitionOf(replaced.body), 'SSE patch returns the replacement intact');
  const audit = (
    (await h.call('GET', `${P}/audit?limit=500`, { token: tok })).body as Array<{
      resourceKey: string;
      before: unknown;
      after: unknown;
    }>
  )[0];
  t.same(definitionOf(audit?.before), expected, 'audit before');
  t.same(definitionOf(audit?.after), definitionOf(replaced.body), 'audit after');
  t.same(
    ((await h.call('GET', '/api/v1/projects', { token: tok })).body as Array<{ key: string }>).map((p) => p.key),
    ['lim'],
    'projects list',
  );
  t.same(
    ((await h.call('GET', `${P}/environments`, { token: tok })).body as Array<{ key: string }>).map((e) => e.key),
    ['prod'],
    'environments list',
  );

  // And after a restart, from the database.
  await h.restart();
  const tok2 = await h.login();
  t.same(
    definitionOf((await h.call('GET', `${E}/flags/complex`, { token: tok2 })).body),
    definitionOf(replaced.body),
    'intact after a restart',
  );
});

t.test(
  'a flag stored before the limits existed (nested 4,100 levels) fails only the requests ' +
    'that return it, and can be deleted',
  async (t) => {
    const h = await startHarness(t);
    const tok = await h.login();
    await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('neighbour') });
    // Written through the store, as the service wrote it before it checked nesting.
    const def = normalizeFlag(jsonFlag('legacy', nested(4100)) as FlagCreateBody);
    const stored = await h.server.store.createFlag('lim', 'prod', def, {
      actor: 'old-version',
      at: new Date().toISOString(),
    });
    t.ok(stored.ok, 'the store takes it');
    await h.restart();
    const tok2 = await h.login();
    const key =
      ((await h.call('GET', `${P}/environments`, { token: tok2 })).body as Array<{ sdkKey: string }>)[0]?.sdkKey ?? '';
    const reads: Array<[string, string, string, Record<string, string>]> = [
      ['GET flag', 'GET', `${E}/flags/legacy`, { authorization: `Bearer ${tok2}` }],
      ['list flags', 'GET', `${E}/flags`, { authorization: `Bearer ${tok2}` }],
      ['audit', 'GET', `${P}/audit`, { authorization: `Bearer ${tok2}` }],
      ['SDK latest-all', 'GET', '/sdk/v1/latest-all', { authorization: key }],
    ];
    for (const [name, method, path, headers] of reads) {
      const r = await h.call(method, path, { headers });
      t.ok(r.status === 200 || r.status === 500, `${name}: answered (${r.status}), the service did not go down`);
    }
    const evaluation = await h.call('POST', '/sdk/v1/evaluate', {
      headers: { authorization: key },
      body: { context: { key: 'u' }, flagKeys: ['neighbour'] },
    });
    t.equal(evaluation.status, 200, 'evaluating the neighbour is unaffected');
    const stream = await openStream(h.base, key);
    t.teardown(() => stream.close());
    const put = JSON.parse((await stream.next((e) => e.event === 'put')).data) as {
      data: { flags: Record<string, unknown> };
    };
    t.ok('neighbour' in put.data.flags, 'SDK streams still get their put');
    t.equal((await h.call('GET', '/healthz')).status, 200, 'the service is up');
    const del = await h.call('DELETE', `${E}/flags/legacy`, { token: tok2 });
    t.equal(del.status, 204, 'an admin can delete it');
    t.equal((await h.call('GET', `${E}/flags`, { token: tok2 })).status, 200, 'and every read works again');
  },
);
