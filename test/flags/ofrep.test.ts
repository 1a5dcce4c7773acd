/**
 * OFREP (OpenFeature Remote Evaluation Protocol) on the flag service, black-box on the real server
 * with the real clients: @openfeature/ofrep-provider under @openfeature/server-sdk evaluates every
 * flag shape as /sdk/v1/evaluate does on random contexts (value and variant); errors in OFREP's
 * shapes (missing flag, bad key, bad body, limits); bulk evaluation with ETag / If-None-Match.
 */
import t from 'tap';
import { OpenFeature, type Client, type EvaluationContext, type JsonValue } from '@openfeature/server-sdk';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { OFREPApi } from '@openfeature/ofrep-core';
import { contextAttributesMax } from '../../src/flags/limits.js';
import { startHarness, type Harness } from './fixtures/helpers.js';
import { E, evaluateAll, flags, loadInteropFlags, randomContext, rng } from './fixtures/interop.js';

let domains = 0;
async function ofrepClient(h: Harness, authorization: string): Promise<Client> {
  const domain = `ofrep-${++domains}`;
  await OpenFeature.setProviderAndWait(
    domain,
    new OFREPProvider({ baseUrl: h.base, headers: [['Authorization', authorization]] }),
  );
  return OpenFeature.getClient(domain);
}

async function details(client: Client, key: string, type: string, ctx: EvaluationContext) {
  switch (type) {
    case 'boolean':
      return client.getBooleanDetails(key, false, ctx);
    case 'string':
      return client.getStringDetails(key, '', ctx);
    case 'integer':
      return client.getNumberDetails(key, -1, ctx);
    default:
      return client.getObjectDetails(key, {} as JsonValue, ctx);
  }
}

async function post(h: Harness, path: string, body: string, headers: Record<string, string>) {
  const res = await fetch(`${h.base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>) };
}

t.teardown(() => OpenFeature.close());

t.test('the OFREP provider evaluates every flag shape as /sdk/v1/evaluate does', async (t) => {
  const h = await startHarness(t);
  const sdkKey = await loadInteropFlags(h, await h.login());
  const client = await ofrepClient(h, sdkKey);
  const bearer = await ofrepClient(h, `Bearer ${sdkKey}`);
  const r = rng(7);
  let compared = 0;
  let mismatches = 0;
  const reasons = new Set<string>();
  for (let i = 0; i < 60; i++) {
    const { key, attrs } = randomContext(r);
    const simlab = await evaluateAll(h.base, sdkKey, { key, ...attrs });
    for (const f of flags) {
      const flagKey = f['key'] as string;
      const d = await details(i % 2 === 0 ? client : bearer, flagKey, f['type'] as string, {
        targetingKey: key,
        ...attrs,
      });
      const want = simlab[flagKey];
      compared++;
      if (d.reason) reasons.add(d.reason);
      const same =
        d.errorCode === undefined &&
        JSON.stringify(d.value) === JSON.stringify(want?.value) &&
        d.variant === want?.variation &&
        d.flagMetadata['reasonKind'] === want?.reason.kind;
      if (!same && mismatches++ < 5)
        t.fail(
          `${flagKey} for ${JSON.stringify({ key, ...attrs })}: OFREP ${JSON.stringify(d)}` +
            ` simlab ${JSON.stringify(want)}`,
        );
    }
  }
  t.equal(mismatches, 0, `OFREP and /sdk/v1/evaluate agree on ${compared} evaluations`);
  t.same(
    [...reasons].sort(),
    ['DEFAULT', 'DISABLED', 'SPLIT', 'TARGETING_MATCH'],
    "OpenFeature's reasons for off, fallthrough, rollouts and matches",
  );

  const missing = await client.getBooleanDetails('no-such-flag', true, { targetingKey: 'u1' });
  t.equal(missing.errorCode, 'FLAG_NOT_FOUND');
  t.equal(missing.value, true, 'the default value');
  const wrongKey = await ofrepClient(h, 'sdk-wrong');
  const refused = await wrongKey.getBooleanDetails('off-bool', true, { targetingKey: 'u1' });
  t.ok(refused.errorCode, `a wrong key is an error (${refused.errorCode})`);
  t.equal(refused.value, true);

  // A change is seen on the next evaluation (remote evaluation, no cache).
  const tok = await h.login();
  const f = flags.find((x) => x['key'] === 'targets') as Record<string, unknown>;
  const { ldServed: _n, ...body } = { ...f, enabled: false };
  t.equal((await h.call('PUT', `${E}/flags/targets`, { token: tok, body })).status, 200);
  const off = await client.getStringDetails('targets', '', { targetingKey: 'u1' });
  t.same([off.value, off.reason], ['red', 'DISABLED']);
});

t.test("OFREP's error shapes and status codes", async (t) => {
  const h = await startHarness(t);
  const sdkKey = await loadInteropFlags(h, await h.login());
  const one = '/ofrep/v1/evaluate/flags/targets';
  const auth = { authorization: sdkKey };

  t.equal((await post(h, one, '{}', {})).status, 401, 'no key');
  t.equal((await post(h, one, '{}', { authorization: 'sdk-wrong' })).status, 401, 'wrong key');
  t.equal((await post(h, '/ofrep/v1/evaluate/flags', '{}', { authorization: 'Bearer sdk-wrong' })).status, 401);

  const ok = await post(h, one, JSON.stringify({ context: { targetingKey: 'u1' } }), auth);
  t.same(ok, {
    status: 200,
    body: {
      key: 'targets',
      value: 'green',
      reason: 'TARGETING_MATCH',
      variant: 'green',
      metadata: { reasonKind: 'TARGET_MATCH' },
    },
  });
  t.equal((await post(h, one, '', auth)).status, 200, 'an empty body is an empty context');

  const nf = await post(h, '/ofrep/v1/evaluate/flags/nope', '{"context":{}}', auth);
  t.equal(nf.status, 404);
  t.match(nf.body, { key: 'nope', errorCode: 'FLAG_NOT_FOUND', errorDetails: /nope/ });

  const parse = await post(h, one, '{"context":', auth);
  t.equal(parse.status, 400);
  t.match(parse.body, { key: 'targets', errorCode: 'PARSE_ERROR', errorDetails: String, error: String });

  for (const [what, body] of [
    ['a nested object', { context: { targetingKey: 'u1', address: { city: 'x' } } }],
    ['a numeric targetingKey', { context: { targetingKey: 5 } }],
    ['a context that is an array', { context: [] }],
  ] as const) {
    const r = await post(h, one, JSON.stringify(body), auth);
    t.equal(r.status, 400, what);
    t.match(r.body, { key: 'targets', errorCode: 'INVALID_CONTEXT', errorDetails: String }, what);
  }
  const bulkBad = await post(h, '/ofrep/v1/evaluate/flags', '{"context": {"a": {"b": 1}}}', auth);
  t.equal(bulkBad.status, 400);
  t.match(bulkBad.body, { errorCode: 'INVALID_CONTEXT', errorDetails: String });

  // contextAttributesMax (targetingKey included, as `key`): at the limit evaluated, past it refused.
  const attrs = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, i]));
  const at = await post(
    h,
    one,
    JSON.stringify({ context: { targetingKey: 'u1', ...attrs(contextAttributesMax - 1) } }),
    auth,
  );
  t.equal(at.status, 200, 'at the attribute limit');
  const past = await post(
    h,
    one,
    JSON.stringify({ context: { targetingKey: 'u1', ...attrs(contextAttributesMax) } }),
    auth,
  );
  t.equal(past.status, 400, 'past the attribute limit');
  t.match(past.body, { errorCode: 'INVALID_CONTEXT', errorDetails: /at most 256 attributes/ });
});

t.test('bulk evaluation with ETag / If-None-Match (the OFREP core client)', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  const sdkKey = await loadInteropFlags(h, tok);
  const api = new OFREPApi(h.base);
  const context = { targetingKey: 'u5', country: 'de', age: 40, org: 'acme' };
  const headers: [string, string][] = [['Authorization', sdkKey]];
  const first = await api.postBulkEvaluateFlags({ context }, { headers });
  t.equal(first.httpStatus, 200);
  const list = (first.value as { flags: Array<{ key: string; value: unknown; variant: string }> }).flags;
  const simlab = await evaluateAll(h.base, sdkKey, { key: 'u5', country: 'de', age: 40, org: 'acme' });
  t.same(
    Object.fromEntries(list.map((f) => [f.key, [f.value, f.variant]])),
    Object.fromEntries(Object.entries(simlab).map(([k, a]) => [k, [a.value, a.variation]])),
    'every flag, as /sdk/v1/evaluate',
  );
  const etag = first.httpResponse.headers.get('etag') ?? '';
  t.match(etag, /^".+"$/);
  const same = await api.postBulkEvaluateFlags({ context }, { headers: [...headers, ['If-None-Match', etag]] });
  t.equal(same.httpStatus, 304, 'unchanged: 304');
  const other = await api.postBulkEvaluateFlags(
    { context: { ...context, targetingKey: 'u6' } },
    { headers: [...headers, ['If-None-Match', etag]] },
  );
  t.equal(other.httpStatus, 200, 'another context: a new answer');
  await h.call('DELETE', `${E}/flags/off-bool`, { token: tok });
  const changed = await api.postBulkEvaluateFlags({ context }, { headers: [...headers, ['If-None-Match', etag]] });
  t.equal(changed.httpStatus, 200, 'after a change: a new answer');
  t.not(changed.httpResponse.headers.get('etag'), etag);
  t.notOk(
    (changed.value as { flags: Array<{ key: string }> }).flags.some((f) => f.key === 'off-bool'),
    'without the deleted flag',
  );
});
