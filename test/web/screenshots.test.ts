// The README's screenshots, taken by the test run: the replication page (a 5-node raft cluster
// with client traffic, a partition drawn, the history filled) and the clock lab page (three
// processes, messages, a consistent snapshot cut), each checked before it is taken. They go to
// docs/screenshots/ with UPDATE_SCREENSHOTS=1 (the committed files), to dist/screenshots/ otherwise.
import t, { type Test } from 'tap';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { startClockLab } from '../../src/clocklab/server.js';
import { silentLogger } from '../../src/util/logger.js';
import { api } from '../helpers/http.js';
import { repoRoot, startReplSim } from '../helpers/server.js';
import { ensureBuilt, launchBrowser, loadGeneratorAnswers, openPage } from './browser.js';

const outDir = path.join(repoRoot, process.env['UPDATE_SCREENSHOTS'] === '1' ? 'docs' : 'dist', 'screenshots');
const electionWaitMs = 10_000;
const updateMs = 5_000;
/** Load before the partition and after it (the history's window is 10 s wide). */
const loadMs = 3_000;
/** A PNG of a drawn page is far larger than this; an empty or failed capture is not. */
const pngBytesMin = 20_000;

ensureBuilt('replication');
ensureBuilt('clocklab');
const browser = await launchBrowser();
t.teardown(() => browser.close());
mkdirSync(outDir, { recursive: true });

async function waitFor(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function shoot(t: Test, page: Page, name: string): Promise<void> {
  const file = path.join(outDir, name);
  await page.screenshot({ path: file, fullPage: true });
  const png = readFileSync(file);
  t.equal(png.subarray(1, 4).toString('latin1'), 'PNG', `${name} is a PNG`);
  t.ok(png.length > pngBytesMin, `${name}: ${png.length} bytes in ${path.relative(repoRoot, outDir)}`);
}

t.test('the replication page: 5-node raft, traffic, a partition, the history', async (t) => {
  const srv = await startReplSim({ REPLSIM_WORKER_POOL: '2' });
  t.teardown(() => srv.stop());
  const http = api(srv.base);
  const created = await http.post<{ id: string; node_ids: string[] }>('/api/v1/clusters', {
    strategy: 'raft',
    node_count: 5,
  });
  t.equal(created.status, 201);
  const cid = created.body.id;
  const w = await openPage(browser, srv.base);
  const { page } = w;
  await page.goto(`${srv.base}/`);
  let leader = '';
  await waitFor(
    async () => {
      leader = (await http.get<{ leader_id?: string }>(`/api/v1/clusters/${cid}/state`)).body.leader_id ?? '';
      return leader !== '';
    },
    electionWaitMs,
    'a raft leader',
  );
  await page.getByRole('button', { name: new RegExp(`^${leader} leader$`) }).waitFor({ timeout: electionWaitMs });
  // The page's load generator (4 clients, 50 ops/s) for a few seconds, then two followers cut off
  // while it goes on: throughput, lag and drops in the charts, the fault in the history's lane.
  await page.getByRole('button', { name: 'Start load', exact: true }).click();
  await new Promise((r) => setTimeout(r, loadMs));
  const [f1, f2] = created.body.node_ids.filter((id) => id !== leader) as [string, string];
  const rest = created.body.node_ids.filter((id) => id !== f1 && id !== f2);
  const cut = await http.post(`/api/v1/clusters/${cid}/network/partition`, { group_a: [f1, f2], group_b: rest });
  t.equal(cut.status, 201, 'partition created');
  await new Promise((r) => setTimeout(r, loadMs));
  await page
    .getByRole('button', { name: new RegExp(`^link (${f1} ${leader}|${leader} ${f1}) partitioned`) })
    .waitFor({ timeout: updateMs });
  const history = page.getByRole('region', { name: 'History' });
  await waitFor(
    async () => (await history.getByRole('img', { name: /^load-\d (write|read) / }).count()) >= 20,
    updateMs,
    'the history holds the load',
  );
  t.pass('partition drawn, history filled');
  await shoot(t, page, 'replication.png');
  await page.getByRole('button', { name: 'Stop load', exact: true }).click();
  const loadAnswers = loadGeneratorAnswers(w.consoleErrors, cid);
  if (loadAnswers.length > 0) t.comment(`${loadAnswers.length} load-generator operations answered 4xx/5xx`);
  t.same(
    w.consoleErrors.filter((e) => !loadAnswers.includes(e)),
    [],
    "no console error besides the load generator's refused operations",
  );
  await page.context().close();
});

t.test('the clock lab page: processes, messages, a snapshot cut', async (t) => {
  // The set-up of test/web/clocklab-page.test.ts: the lab and its proxy on free ports, seed 11.
  const lab = await startClockLab({
    port: 0,
    proxyPort: 0,
    host: '127.0.0.1',
    env: { VC_SEED: '11' },
    logger: silentLogger(),
  });
  t.teardown(() => lab.close());
  const base = `http://127.0.0.1:${lab.proxyPort}`;
  const http = api(base);
  const w = await openPage(browser, base);
  const { page } = w;
  await page.goto(`${base}/`);
  const diagram = page.locator('svg[aria-label="Space-time diagram"]');
  await diagram.locator('[aria-label="process p3"]').waitFor({ timeout: updateMs });
  for (const [from, to] of [
    ['p1', 'p2'],
    ['p2', 'p3'],
    ['p3', 'p1'],
    ['p1', 'p3'],
    ['p2', 'p1'],
  ] as const) {
    t.equal((await http.post('/api/v1/messages', { from, to, payload: `${from}>${to}` })).status, 202);
  }
  t.equal((await http.post('/api/v1/processes/p2/event', { label: 'work' })).status, 200);
  await waitFor(async () => (await diagram.locator('[aria-label^="message "]').count()) >= 5, updateMs, 'five arrows');
  await page.getByRole('button', { name: 'Snapshot from p1', exact: true }).click();
  await waitFor(
    async () => (await diagram.locator('[aria-label^="snapshot s1 complete, consistent"]').count()) === 1,
    updateMs,
    'snapshot s1 drawn as a consistent cut',
  );
  t.pass('messages and a snapshot cut drawn');
  await shoot(t, page, 'clocklab.png');
  t.same(w.consoleErrors, [], 'no console error');
  await page.context().close();
});
