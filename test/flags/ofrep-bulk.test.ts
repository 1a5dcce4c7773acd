/**
 * OFREP bulk evaluation written from the evaluate-all plan (issue 19): on the real server with the
 * OFREP core client, an environment whose flags are all planned answers every flag as the
 * single-flag route does, with an ETag that follows the body (equal bodies, whatever the context,
 * share it; a change of the body changes it; a change the answer does not show keeps it) and 304 on
 * If-None-Match.
 */
import t from 'tap';
import { OFREPApi } from '@openfeature/ofrep-core';
import { startHarness } from './fixtures/helpers.js';
import { E, flags, loadInteropFlags, randomContext, rng } from './fixtures/interop.js';

t.test('bulk evaluation from the plan: every flag as the single route, ETag by body, 304', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  const sdkKey = await loadInteropFlags(h, tok);
  // Without the flags that have prerequisites, every flag of the environment is planned.
  for (const key of ['prereq', 'prereq-off']) await h.call('DELETE', `${E}/flags/${key}`, { token: tok });
  const api = new OFREPApi(h.base);
  const headers: [string, string][] = [['Authorization', sdkKey]];
  const r = rng(23);
  const etagOf = new Map<string, string>();
  const bodyOf = new Map<string, string>();
  let shared = 0;
  for (let i = 0; i < 30; i++) {
    const { key, attrs } = randomContext(r);
    const context = { targetingKey: key, ...attrs };
    const res = await fetch(`${h.base}/ofrep/v1/evaluate/flags`, {
      method: 'POST',
      headers: { authorization: sdkKey, 'content-type': 'application/json' },
      body: JSON.stringify({ context }),
    });
    t.equal(res.status, 200);
    t.equal(res.headers.get('content-type'), 'application/json');
    const body = await res.text();
    const etag = res.headers.get('etag') ?? '';
    t.match(etag, /^"[\w-]{27}\.\w+"$/, 'an ETag from the plan');
    const list = (JSON.parse(body) as { flags: Array<Record<string, unknown>> }).flags;
    t.equal(list.length, flags.length - 2, 'every flag');
    for (const entry of list) {
      const one = await fetch(`${h.base}/ofrep/v1/evaluate/flags/${String(entry['key'])}`, {
        method: 'POST',
        headers: { authorization: sdkKey, 'content-type': 'application/json' },
        body: JSON.stringify({ context }),
      });
      t.same(entry, await one.json(), `${String(entry['key'])} for ${JSON.stringify(context)}: as the single route`);
    }
    if (etagOf.has(body)) shared++;
    t.equal(etagOf.get(body) ?? etag, etag, 'an equal body has the same ETag');
    t.equal(bodyOf.get(etag) ?? body, body, 'an ETag names one body');
    etagOf.set(body, etag);
    bodyOf.set(etag, body);
    const again = await api.postBulkEvaluateFlags({ context }, { headers: [...headers, ['If-None-Match', etag]] });
    t.equal(again.httpStatus, 304, 'If-None-Match with the ETag: 304');
    t.equal(again.httpResponse.headers.get('etag'), etag, 'the 304 carries the ETag');
  }
  t.ok(etagOf.size > 5, `${etagOf.size} distinct bodies`);
  t.ok(shared > 0, `${shared} bodies met again under another context`);

  const context = { targetingKey: 'u5', country: 'de', age: 40, org: 'acme' };
  const first = await api.postBulkEvaluateFlags({ context }, { headers });
  const etag = first.httpResponse.headers.get('etag') ?? '';
  const other = await api.postBulkEvaluateFlags(
    { context: { ...context, targetingKey: 'u6' } },
    { headers: [...headers, ['If-None-Match', etag]] },
  );
  t.equal(other.httpStatus, 200, 'another context with another answer: 200');
  t.not(JSON.stringify(other.value), JSON.stringify(first.value));
  t.not(other.httpResponse.headers.get('etag'), etag);
  // A change the answer does not show (a flag's name): the same body, so the same ETag.
  const { ldServed: _ignored, ...targets } = flags.find((f) => f['key'] === 'targets') ?? {};
  const renamed = await h.call('PUT', `${E}/flags/targets`, { token: tok, body: { ...targets, name: 'renamed' } });
  t.equal(renamed.status, 200, 'renamed');
  const unchanged = await api.postBulkEvaluateFlags({ context }, { headers: [...headers, ['If-None-Match', etag]] });
  t.equal(unchanged.httpStatus, 304, 'a change the answer does not show: still 304');
  await h.call('DELETE', `${E}/flags/off-bool`, { token: tok });
  const changed = await api.postBulkEvaluateFlags({ context }, { headers: [...headers, ['If-None-Match', etag]] });
  t.equal(changed.httpStatus, 200, 'after a change of the body: a new answer');
  t.not(changed.httpResponse.headers.get('etag'), etag, 'and a new ETag');
  t.notOk(
    (changed.value as { flags: Array<{ key: string }> }).flags.some((f) => f.key === 'off-bool'),
    'without the deleted flag',
  );
});
