/**
 * The LaunchDarkly relay (/ld) against the official LaunchDarkly Node server SDK, black-box on the
 * real server: initialisation in streaming and polling mode, evaluation equal to /sdk/v1/evaluate
 * (value and variation index) on random contexts for every flag shape simlab can express, live
 * updates within 2 s of a management API change, events accepted and counted, key checks.
 */
import t, { type Test } from 'tap';
import { init, type LDClient, type LDOptions } from '@launchdarkly/node-server-sdk';
import { startHarness, type Harness } from './fixtures/helpers.js';
import { E, evaluateAll, flags, loadInteropFlags, randomContext, rng } from './fixtures/interop.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

async function ldClient(t: Test, h: Harness, sdkKey: string, over: LDOptions = {}): Promise<LDClient> {
  const uri = `${h.base}/ld`;
  const client = init(sdkKey, {
    baseUri: uri,
    streamUri: uri,
    eventsUri: uri,
    logger: silent,
    diagnosticOptOut: true,
    ...over,
  });
  t.teardown(() => client.close());
  await client.waitForInitialization({ timeout: 5 });
  return client;
}

/** Index of a variation key in the flag as the test wrote it (the relay's indexes). */
function indexOf(flagKey: string, variation: string | null): number | undefined {
  const f = flags.find((x) => x['key'] === flagKey);
  const vs = (f?.['variations'] ?? []) as Array<{ key: string }>;
  const i = vs.findIndex((v) => v.key === variation);
  return i < 0 ? undefined : i;
}

async function compareOnRandomContexts(t: Test, h: Harness, sdkKey: string, client: LDClient, seed: number) {
  const r = rng(seed);
  let compared = 0;
  let mismatches = 0;
  for (let i = 0; i < 150; i++) {
    const { key, attrs } = randomContext(r);
    const simlab = await evaluateAll(h.base, sdkKey, { key, kind: 'user', ...attrs });
    for (const f of flags) {
      const flagKey = f['key'] as string;
      const ld = await client.variationDetail(flagKey, { kind: 'user', key, ...attrs }, 'fallback');
      if (f.ldServed === false) {
        if (ld.reason.kind !== 'ERROR' || ld.reason.errorKind !== 'FLAG_NOT_FOUND') mismatches++;
        continue;
      }
      const want = simlab[flagKey];
      const same =
        JSON.stringify(ld.value) === JSON.stringify(want?.value) &&
        ld.variationIndex === indexOf(flagKey, want?.variation ?? null);
      compared++;
      if (!same && mismatches++ < 5)
        t.fail(
          `${flagKey} for ${JSON.stringify({ key, ...attrs })}: LD ${JSON.stringify(ld)}` +
            ` simlab ${JSON.stringify(want)}`,
        );
    }
  }
  t.equal(mismatches, 0, `LD SDK and /sdk/v1/evaluate agree on ${compared} evaluations`);
  t.ok(compared >= 150 * (flags.length - 1), 'every servable flag was compared on every context');
}

async function waitFor(cond: () => Promise<boolean> | boolean, ms: number): Promise<number> {
  const start = Date.now();
  while (!(await cond())) {
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - start;
}

t.test('streaming: initialises, evaluates as /sdk/v1/evaluate, follows changes within 2 s', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  const sdkKey = await loadInteropFlags(h, tok);
  const client = await ldClient(t, h, sdkKey);
  t.ok(client.initialized(), 'initialised from /ld/all');
  await compareOnRandomContexts(t, h, sdkKey, client, 1);

  const all = await client.allFlagsState({ kind: 'user', key: 'u1' });
  t.same(
    Object.keys(all.allValues()).sort(),
    flags
      .filter((f) => f.ldServed !== false)
      .map((f) => f['key'] as string)
      .sort(),
    'every flag but the unrepresentable one is served',
  );

  // Turning a flag off reaches the SDK (a patch)...
  const ctx = { kind: 'user', key: 'u1' };
  t.equal(await client.variation('targets', ctx, 'x'), 'green');
  const off = flags.find((f) => f['key'] === 'targets') as Record<string, unknown>;
  const { ldServed: _n, ...offBody } = { ...off, enabled: false };
  const put = await h.call('PUT', `${E}/flags/targets`, { token: tok, body: offBody });
  t.equal(put.status, 200);
  const ms = await waitFor(async () => (await client.variation('targets', ctx, 'x')) === 'red', 2000);
  t.ok(ms <= 2000, `off within 2 s (${ms} ms)`);
  // ...so does the prerequisite that depended on it (re-sent with the same simlab version)...
  t.equal((await client.variationDetail('prereq', ctx, true)).reason.kind, 'PREREQUISITE_FAILED');
  // ...a new flag, a segment change and a delete too.
  await h.call('POST', `${E}/flags`, {
    token: tok,
    body: {
      key: 'fresh',
      name: 'fresh',
      type: 'string',
      enabled: true,
      defaultVariation: 'x',
      variations: [{ key: 'x', value: 'hello' }],
    },
  });
  await waitFor(async () => (await client.variation('fresh', ctx, 'none')) === 'hello', 2000);
  const u9 = { kind: 'user', key: 'u9' };
  t.equal(await client.variation('segments', u9, 'x'), 'blue', 'u9 is not in beta');
  await h.call('PUT', '/api/v1/projects/interop/segments/beta', { token: tok, body: { included: ['u9'] } });
  await waitFor(async () => (await client.variation('segments', u9, 'x')) === 'green', 2000);
  await h.call('DELETE', `${E}/flags/fresh`, { token: tok });
  await waitFor(async () => (await client.variation('fresh', ctx, 'none')) === 'none', 2000);
  t.pass('create, segment update and delete arrived within 2 s each');

  // Events: the SDK's analytics reach /ld/bulk (202) and are counted.
  client.track('checkout', ctx);
  await client.flush();
  const m = String((await h.call('GET', '/metrics')).body);
  t.match(m, /flags_ld_events_received_total\{kind="analytics"\} [1-9]/, 'analytics events counted');
  t.match(m, /flags_ld_unrepresentable_total [1-9]/, 'the unrepresentable flag is counted');
});

t.test('polling mode (stream: false) initialises from /ld/sdk/latest-all and evaluates the same', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  const sdkKey = await loadInteropFlags(h, tok);
  // Diagnostics on (the SDK's default): its init event goes to POST /ld/diagnostic.
  const client = await ldClient(t, h, sdkKey, { stream: false, diagnosticOptOut: false });
  t.ok(client.initialized());
  await waitFor(
    async () =>
      /flags_ld_events_received_total\{kind="diagnostic"\} [1-9]/.test(String((await h.call('GET', '/metrics')).body)),
    5000,
  );
  t.pass('the diagnostic event was accepted and counted');
  await compareOnRandomContexts(t, h, sdkKey, client, 2);
  const first = await fetch(`${h.base}/ld/sdk/latest-all`, { headers: { authorization: sdkKey } });
  t.equal(first.status, 200);
  const etag = first.headers.get('etag') ?? '';
  const body = (await first.json()) as { flags: Record<string, { version: number; variations: unknown[] }> };
  t.same(body.flags['targets']?.variations, ['red', 'green', 'blue'], "LD's indexed variations");
  const again = await fetch(`${h.base}/ld/sdk/latest-all`, {
    headers: { authorization: sdkKey, 'if-none-match': etag },
  });
  t.equal(again.status, 304, 'unchanged data answers 304 to its ETag');
});

t.test('keys and bodies: 401 without or with a wrong key, 400 for a bad events body, 202 for events', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  const sdkKey = await loadInteropFlags(h, tok);
  for (const path of ['/ld/sdk/latest-all', '/ld/all']) {
    t.equal((await fetch(`${h.base}${path}`)).status, 401, `${path} without a key`);
    t.equal(
      (await fetch(`${h.base}${path}`, { headers: { authorization: 'sdk-wrong' } })).status,
      401,
      `${path} wrong key`,
    );
  }
  const post = (body: string, key = sdkKey) =>
    fetch(`${h.base}/ld/bulk`, {
      method: 'POST',
      headers: { authorization: key, 'content-type': 'application/json' },
      body,
    });
  t.equal((await post('[]', 'sdk-wrong')).status, 401);
  t.equal((await post('{nope')).status, 400, 'malformed JSON');
  t.equal((await post('"x"')).status, 400, 'not an array');
  const ok = await post(
    JSON.stringify([
      { kind: 'custom', key: 'a' },
      { kind: 'custom', key: 'b' },
    ]),
  );
  t.equal(ok.status, 202);
  t.same(await ok.json(), { accepted: 2 });
  // ldEventsPerPostMax (10000) events: at the limit accepted, one past it refused.
  const at = JSON.stringify(Array.from({ length: 10_000 }, () => 0));
  const past = JSON.stringify(Array.from({ length: 10_001 }, () => 0));
  t.equal((await post(at)).status, 202, 'at the limit');
  t.equal((await post(past)).status, 400, 'past the limit');
});
