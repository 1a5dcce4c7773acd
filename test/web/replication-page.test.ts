// The replication simulator's page in headless Chromium against the real service: every flow of
// the page contract's first half (../shared/specs/web-ui.md), checked the way a user and a screen
// reader see it (roles and accessible names), with no console error, no request to another
// origin and no serious or critical axe violation. Reports the page's JavaScript size.
import t from 'tap';
import type { Page } from 'playwright-core';
import { api } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';
import {
  describeViolation,
  ensureBuilt,
  launchBrowser,
  openPage,
  seriousAxeViolations,
  startCuttableRelay,
} from './browser.js';

/** The contract's bound on how soon the page shows a change (web-ui.md: "within 2 s"). */
const contractUpdateMs = 2_000;
/** A raft cluster elects its first leader within a few election timeouts, more on a loaded machine. */
const electionWaitMs = 10_000;

ensureBuilt('replication');
const srv = await startReplSim({ REPLSIM_WORKER_POOL: '2' });
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await srv.stop();
});
const http = api(srv.base);

interface StateBody {
  id: string;
  leader_id?: string;
  node_ids: string[];
  nodes: Record<string, { role: string; state: string }>;
  partitions: Record<string, { group_a: Record<string, boolean>; group_b: Record<string, boolean> }>;
}

const nodeButton = (page: Page, label: RegExp) => page.getByRole('button', { name: label });
const exact = (s: string): RegExp => new RegExp(`^${s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);

async function clusterOptions(page: Page): Promise<string[]> {
  return page
    .getByRole('combobox', { name: 'Cluster', exact: true })
    .locator('option')
    .evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
}

async function waitFor(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test('the replication page: every flow of the contract in a browser', async (t) => {
  const w = await openPage(browser, srv.base);
  const { page } = w;
  const res = await page.goto(`${srv.base}/`);
  t.equal(res?.status(), 200);
  t.match(await page.title(), /Replication/);

  // ---- create a cluster from the form: it is listed and selected ----
  await page.getByRole('combobox', { name: 'Strategy', exact: true }).selectOption('raft');
  const strategies = await page
    .getByRole('combobox', { name: 'Strategy', exact: true })
    .locator('option')
    .allTextContents();
  t.same(strategies.sort(), ['leaderless', 'multi_leader', 'raft', 'single_leader'], 'the four strategies');
  await page.getByRole('spinbutton', { name: 'Nodes', exact: true }).fill('3');
  await page.getByRole('button', { name: 'Create', exact: true }).click();
  let cid = '';
  await waitFor(
    async () => {
      const list = await http.get<StateBody[]>('/api/v1/clusters');
      cid = list.body[0]?.id ?? '';
      return cid !== '' && (await clusterOptions(page)).includes(cid);
    },
    electionWaitMs,
    'the created cluster in the Cluster select',
  );
  t.equal(
    await page.getByRole('combobox', { name: 'Cluster', exact: true }).inputValue(),
    cid,
    'the new cluster is selected',
  );

  // ---- node labels show the API's roles ----
  let leader = '';
  await waitFor(
    async () => {
      leader = (await http.get<StateBody>(`/api/v1/clusters/${cid}/state`)).body.leader_id ?? '';
      return leader !== '';
    },
    electionWaitMs,
    'a raft leader',
  );
  await nodeButton(page, exact(`${leader} leader`)).waitFor({ timeout: electionWaitMs });
  const state = (await http.get<StateBody>(`/api/v1/clusters/${cid}/state`)).body;
  const followers = state.node_ids.filter((id) => id !== leader);
  t.equal(followers.length, 2);
  const [f1, f2] = followers as [string, string];
  for (const f of followers) await nodeButton(page, exact(`${f} follower`)).waitFor({ timeout: electionWaitMs });
  t.pass(`labels: ${leader} leader, ${f1} follower, ${f2} follower`);

  // ---- a cluster created elsewhere appears within 2 s, without a reload ----
  const other = await http.post<StateBody>('/api/v1/clusters', { strategy: 'single_leader', node_count: 2 });
  t.equal(other.status, 201);
  await waitFor(
    async () => (await clusterOptions(page)).includes(other.body.id),
    contractUpdateMs,
    'a cluster created through the API',
  );
  t.pass('a cluster created through the API is listed within 2 s');
  t.equal(await page.getByRole('combobox', { name: 'Cluster', exact: true }).inputValue(), cid, 'the selection stays');

  // ---- pause and resume ----
  await nodeButton(page, exact(`${f1} follower`)).click();
  t.equal(await nodeButton(page, exact(`${f1} follower`)).getAttribute('aria-pressed'), 'true', 'click selects');
  await page.getByRole('button', { name: 'Pause', exact: true }).click();
  await nodeButton(page, new RegExp(`^${f1} \\S+ paused$`)).waitFor({ timeout: contractUpdateMs });
  t.equal((await http.get<StateBody>(`/api/v1/clusters/${cid}/state`)).body.nodes[f1]?.state, 'paused');
  await page.getByRole('button', { name: 'Resume', exact: true }).click();
  await nodeButton(page, new RegExp(`^${f1} \\S+$`)).waitFor({ timeout: contractUpdateMs });
  t.pass('pause and resume show on the node within 2 s');

  // ---- crash and restart ----
  await nodeButton(page, new RegExp(`^${f2} `)).click();
  t.equal(
    await nodeButton(page, new RegExp(`^${f1} `)).getAttribute('aria-pressed'),
    'false',
    'a plain click replaces the selection',
  );
  await page.getByRole('button', { name: 'Crash', exact: true }).click();
  await nodeButton(page, new RegExp(`^${f2} \\S+ crashed$`)).waitFor({ timeout: contractUpdateMs });
  await page.getByRole('button', { name: 'Restart', exact: true }).click();
  await nodeButton(page, new RegExp(`^${f2} \\S+$`)).waitFor({ timeout: contractUpdateMs });
  t.equal((await http.get<StateBody>(`/api/v1/clusters/${cid}/state`)).body.nodes[f2]?.state, 'online');
  t.pass('crash and restart show on the node within 2 s');

  // ---- partition two nodes (click, shift-click) from the rest, then heal ----
  await nodeButton(page, new RegExp(`^${leader} `)).click();
  await nodeButton(page, new RegExp(`^${f1} `)).click({ modifiers: ['Shift'] });
  t.equal(await nodeButton(page, new RegExp(`^${f1} `)).getAttribute('aria-pressed'), 'true', 'shift-click adds');
  t.equal(
    await nodeButton(page, new RegExp(`^${leader} `)).getAttribute('aria-pressed'),
    'true',
    'and keeps the first',
  );
  await page.getByRole('button', { name: 'Partition', exact: true }).click();
  let parts: StateBody['partitions'] = {};
  await waitFor(
    async () => {
      parts = (await http.get<StateBody>(`/api/v1/clusters/${cid}/state`)).body.partitions;
      return Object.keys(parts).length === 1;
    },
    contractUpdateMs,
    'the partition in the cluster state',
  );
  const p = Object.values(parts)[0]!;
  t.same(Object.keys(p.group_a).sort(), [leader, f1].sort(), 'the selected nodes on one side');
  t.same(Object.keys(p.group_b), [f2], 'the rest on the other');
  await page
    .getByRole('button', { name: new RegExp(`^link (${leader} ${f2}|${f2} ${leader}) partitioned$`) })
    .waitFor({ timeout: contractUpdateMs });
  t.pass('the links across the partition are drawn cut');
  await page
    .getByRole('region', { name: 'Recent events' })
    .getByText(/partition_created partition_id="p\d+"/)
    .waitFor({ timeout: contractUpdateMs });
  t.pass('the partition is listed among the recent events');
  await page.getByRole('button', { name: 'Heal', exact: true }).click();
  await waitFor(
    async () => Object.keys((await http.get<StateBody>(`/api/v1/clusters/${cid}/state`)).body.partitions).length === 0,
    contractUpdateMs,
    'healed',
  );
  await page
    .getByRole('button', { name: new RegExp(`^link (${leader} ${f2}|${f2} ${leader})$`) })
    .waitFor({ timeout: contractUpdateMs });
  t.pass('heal removes the partition and the page redraws the links');

  // ---- latency and drop rate from a link ----
  const linkName = new RegExp(`^link (${f1} ${f2}|${f2} ${f1})`);
  await page.getByRole('button', { name: linkName }).click();
  await page.getByRole('spinbutton', { name: 'Latency (ms)' }).fill('40');
  await page.getByRole('spinbutton', { name: 'Drop rate' }).fill('0.25');
  await page.getByRole('button', { name: 'Apply to link' }).click();
  await page.getByRole('button', { name: /^link \S+ \S+ 40 ms, drop 25%$/ }).waitFor({ timeout: contractUpdateMs });
  t.pass('a link shows its latency and drop rate once set');

  // ---- console: write then read ----
  await page.getByRole('textbox', { name: 'Key', exact: true }).fill('color');
  await page.getByRole('textbox', { name: 'Value', exact: true }).fill('blue');
  await page.getByRole('button', { name: 'Write', exact: true }).click();
  const status = page.getByRole('status');
  await status.filter({ hasText: /wrote color = blue on n\d+/ }).waitFor({ timeout: electionWaitMs });
  await page.getByRole('button', { name: 'Read', exact: true }).click();
  await status
    .filter({ hasText: /read color = blue from n\d+ .* in \d+(\.\d)? ms/ })
    .waitFor({ timeout: electionWaitMs });
  t.match(await status.textContent(), /read color = blue from n\d+/, 'the read answers the value and the node');
  await page.getByRole('textbox', { name: 'Key', exact: true }).fill('');
  await page.getByRole('button', { name: 'Read', exact: true }).click();
  await status.filter({ hasText: /enter a key/ }).waitFor({ timeout: contractUpdateMs });
  await page.getByRole('textbox', { name: 'Key', exact: true }).fill('never-written');
  await page.getByRole('button', { name: 'Read', exact: true }).click();
  await status.filter({ hasText: /read never-written failed \(404\)/ }).waitFor({ timeout: electionWaitMs });
  t.pass("a failed read shows the API's error and status");

  // ---- console: a batch write, then each key read back through the API ----
  await page.getByRole('textbox', { name: /^Batch/ }).fill('batch-a=1\nbatch-b=2\n');
  await page.getByRole('button', { name: 'Write batch', exact: true }).click();
  await status.filter({ hasText: /wrote 2 of 2 keys on n\d+/ }).waitFor({ timeout: electionWaitMs });
  for (const [k, v] of [
    ['batch-a', '1'],
    ['batch-b', '2'],
  ] as const) {
    const r = await http.get<{ entry: { value: string } }>(`/api/v1/clusters/${cid}/read?key=${k}`);
    t.equal(r.status, 200, `${k} was written by the batch`);
    t.equal(Buffer.from(r.body.entry.value, 'base64').toString(), v, `${k} = ${v}`);
  }
  await page.getByRole('textbox', { name: /^Batch/ }).fill('no equals sign');
  await page.getByRole('button', { name: 'Write batch', exact: true }).click();
  await status.filter({ hasText: /batch: line 1: write key=value/ }).waitFor({ timeout: contractUpdateMs });
  t.pass('a malformed batch line is refused on the page, naming the line');

  // ---- the keyboard does what the mouse does ----
  await nodeButton(page, new RegExp(`^${f1} `)).focus();
  await page.keyboard.press('Enter');
  t.equal(await nodeButton(page, new RegExp(`^${f1} `)).getAttribute('aria-pressed'), 'true', 'Enter selects');
  await nodeButton(page, new RegExp(`^${f2} `)).focus();
  await page.keyboard.press('Shift+Enter');
  t.equal(await nodeButton(page, new RegExp(`^${f2} `)).getAttribute('aria-pressed'), 'true', 'Shift+Enter adds');
  t.equal(await nodeButton(page, new RegExp(`^${f1} `)).getAttribute('aria-pressed'), 'true', 'and keeps the first');
  await page.getByText(`Selected: ${f1}, ${f2}`).waitFor({ timeout: contractUpdateMs });

  // ---- axe on the page with a selection and the link form open ----
  const serious = await seriousAxeViolations(page);
  t.same(serious.map(describeViolation), [], 'no serious or critical axe violation');

  // ---- remove a node ----
  await nodeButton(page, new RegExp(`^${f2} `)).click();
  await page.getByRole('button', { name: 'Remove', exact: true }).click();
  await nodeButton(page, new RegExp(`^${f2} \\S+ removed$`)).waitFor({ timeout: electionWaitMs });
  t.pass('a removed node is drawn as removed');

  // ---- the other cluster, picked from the select ----
  await page.getByRole('combobox', { name: 'Cluster', exact: true }).selectOption(other.body.id);
  await nodeButton(page, /^n1 leader$/).waitFor({ timeout: contractUpdateMs });
  await nodeButton(page, /^n2 follower$/).waitFor({ timeout: contractUpdateMs });
  t.pass('picking a cluster shows its nodes');

  // Chromium logs every 4xx answer to fetch() as a console error: the read made to fail on purpose is expected.
  const unexpected = w.consoleErrors.filter(
    (e) => !(/status of 404/.test(e.text) && /\/read\?key=never-written/.test(e.url)),
  );
  t.same(unexpected, [], 'no console error');
  t.equal(w.consoleErrors.length - unexpected.length, 1, 'the failed read was logged once');
  t.same(w.foreignRequests, [], 'no request to another origin');
  const js = w.scriptBytes();
  t.ok(js.files.length >= 1, 'the page loaded its bundle');
  t.comment(`replication page JavaScript: ${js.raw} bytes, ${js.gzip} bytes gzipped (${js.files.join(', ')})`);
  await page.context().close();
});

t.test('the page reconnects after the network drops and resynchronises its clusters', async (t) => {
  const relay = await startCuttableRelay(srv.port);
  t.teardown(() => relay.close());
  const base = `http://127.0.0.1:${relay.port}`;
  const gone = await http.post<StateBody>('/api/v1/clusters', { strategy: 'single_leader', node_count: 1 });
  t.equal(gone.status, 201);
  const w = await openPage(browser, base);
  await w.page.goto(`${base}/`);
  await w.page.getByText('events: open').waitFor({ timeout: contractUpdateMs });
  await waitFor(
    async () => (await clusterOptions(w.page)).includes(gone.body.id),
    contractUpdateMs,
    'the cluster on load',
  );
  // The network drops: the page's socket closes and its reconnects are refused for a while.
  relay.refuse(true);
  relay.cut();
  await w.page.getByText(/events: (closed|connecting)/).waitFor({ timeout: contractUpdateMs });
  // Meanwhile, changes the page cannot hear about.
  t.equal((await http.del(`/api/v1/clusters/${gone.body.id}`)).status, 204);
  const fresh = await http.post<StateBody>('/api/v1/clusters', { strategy: 'single_leader', node_count: 1 });
  t.equal(fresh.status, 201);
  await new Promise((r) => setTimeout(r, 300));
  t.ok((await clusterOptions(w.page)).includes(gone.body.id), 'while cut off, the page still shows what it knew');
  relay.refuse(false);
  await w.page.getByText('events: open').waitFor({ timeout: 10_000 });
  await waitFor(
    async () => {
      const ids = await clusterOptions(w.page);
      return ids.includes(fresh.body.id) && !ids.includes(gone.body.id);
    },
    contractUpdateMs,
    'the list as the server has it after the reconnect',
  );
  t.pass('after the reconnect the page lists the cluster created meanwhile, not the deleted one');
  // While the network is cut, Chromium logs every refused reconnect and every fetch the page had in
  // flight or started (history, state) as a network-level failure (net::ERR_...). Those are the cut
  // itself; an answer from the server with an error status would not be, and fails the test.
  const unexpected = w.consoleErrors.filter(
    (e) => !/WebSocket connection to .* failed/.test(e.text) && !/net::ERR_/.test(e.text),
  );
  t.same(unexpected, [], 'no console error besides the cut network (refused reconnects, failed fetches)');
  t.same(w.foreignRequests, [], 'no request to another origin');
  await w.page.context().close();
});
