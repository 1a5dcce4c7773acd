/**
 * The package as a library (issue 19 point 8): package.json `exports` for the flag SDK, the
 * OpenFeature provider and the lincheck API, imported by the package's own name (self-reference,
 * so through `exports` and the built dist/ files, as a dependent would) and used: the SDK client
 * and the provider against the real flag service, lincheck on a history. Each export also points
 * at a declaration file that exists.
 */
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { OpenFeature } from '@openfeature/server-sdk';
import { repoRoot } from './helpers/server.js';
import { boolFlag, startHarness } from './flags/fixtures/helpers.js';

interface ExportEntry {
  types: string;
  default: string;
}
const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
  name: string;
  exports: Record<string, ExportEntry | string>;
};

t.test('every export names a built module and its declarations', async (t) => {
  for (const sub of ['./flags-sdk', './openfeature', './lincheck']) {
    const e = pkg.exports[sub] as ExportEntry;
    t.ok(e !== undefined && typeof e === 'object', `${sub} is exported`);
    t.ok(existsSync(path.join(repoRoot, e.default)), `${sub}: ${e.default} exists (built)`);
    t.ok(existsSync(path.join(repoRoot, e.types)), `${sub}: ${e.types} exists (declaration: true)`);
  }
});

t.test('simlab/lincheck checks a history', async (t) => {
  const lincheck = await import('simlab/lincheck');
  const text =
    '{:process 0, :type :invoke, :f :put, :key "k", :value "a"}\n' +
    '{:process 0, :type :ok, :f :put, :key "k", :value "a"}\n' +
    '{:process 1, :type :invoke, :f :get, :key "k", :value nil}\n' +
    '{:process 1, :type :ok, :f :get, :key "k", :value "b"}\n';
  const parsed = lincheck.parseHistory(text);
  if (!parsed.ok) throw new Error(parsed.error);
  t.equal(lincheck.checkHistory(parsed.history, lincheck.kvModel).verdict, 'not-linearizable');
  const fixed = lincheck.parseHistory(text.replace('"b"}\n', '"a"}\n'));
  if (!fixed.ok) throw new Error(fixed.error);
  t.equal(lincheck.checkHistory(fixed.history, lincheck.kvModel).verdict, 'linearizable');
});

t.test('simlab/flags-sdk and simlab/openfeature evaluate against the flag service', async (t) => {
  const { FlagsClient } = await import('simlab/flags-sdk');
  const { SimlabFlagsProvider } = await import('simlab/openfeature');
  const h = await startHarness(t);
  const tok = await h.login();
  const P = '/api/v1/projects/web';
  await h.call('POST', `${P}/environments/prod/flags`, {
    token: tok,
    body: boolFlag('checkout', { targets: [{ contextKeys: ['vip'], variation: 'on' }] }),
  });
  const envs = (await h.call('GET', `${P}/environments`, { token: tok })).body as Array<{
    key: string;
    sdkKey: string;
  }>;
  const sdkKey = envs.find((e) => e.key === 'prod')?.sdkKey ?? '';

  const client = new FlagsClient({ baseUrl: h.base, sdkKey });
  t.teardown(() => client.close());
  await client.waitForInitialization(5000);
  t.equal(client.evaluate('checkout', { key: 'vip' })?.value, true, 'the SDK client: a target');
  t.equal(client.evaluate('checkout', { key: 'u1' })?.value, false, 'the SDK client: the default');

  await OpenFeature.setProviderAndWait(new SimlabFlagsProvider({ baseUrl: h.base, sdkKey }));
  t.teardown(() => OpenFeature.close());
  const of = OpenFeature.getClient();
  t.equal(await of.getBooleanValue('checkout', false, { targetingKey: 'vip' }), true, 'the provider: a target');
  t.equal(await of.getBooleanValue('checkout', true, { targetingKey: 'u1' }), false, 'the provider: the default');
});
