// The replication page's per-strategy views in headless Chromium against the real service: raft
// terms, the leader and an election after the leader is paused; the leaderless ring with a key's
// preference list (equal to the API's placement); a multi-leader conflict shown with its vector
// clocks and resolved from the page; a node's clock skewed from the page and drawn as a badge. No
// console error, no request to another origin, no serious or critical axe violation.
import t from 'tap';
import type { Page } from 'playwright-core';
import { api } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';
import { describeViolation, ensureBuilt, launchBrowser, openPage, seriousAxeViolations } from './browser.js';

/** The contract's bound on how soon the page shows a change (web-ui.md: "within 2 s"). */
const contractUpdateMs = 2_000;
/** A raft cluster elects a leader within a few election timeouts, more on a loaded machine. */
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
  nodes: Record<string, { role: string; state: string; term?: number; voted_for?: string }>;
}

async function waitFor(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** STRATEGY_SCREENSHOTS=<dir>: a full-page screenshot of each view, for a look by eye. */
async function shot(page: Page, name: string): Promise<void> {
  const dir = process.env['STRATEGY_SCREENSHOTS'];
  if (dir) await page.screenshot({ path: `${dir}/strategy-${name}.png`, fullPage: true });
}

async function create(body: Record<string, unknown>): Promise<string> {
  const r = await http.post<{ id: string }>('/api/v1/clusters', body);
  if (r.status !== 201 && r.status !== 200) throw new Error(`create: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id;
}

async function pick(page: Page, cid: string): Promise<void> {
  const select = page.getByRole('combobox', { name: 'Cluster', exact: true });
  await waitFor(
    async () =>
      (await select.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))).includes(cid),
    contractUpdateMs * 2,
    `cluster ${cid} in the Cluster select`,
  );
  await select.selectOption(cid);
}

async function leaderOf(cid: string): Promise<string> {
  let leader = '';
  await waitFor(
    async () => {
      leader = (await http.get<StateBody>(`/api/v1/clusters/${cid}/state`)).body.leader_id ?? '';
      return leader !== '';
    },
    electionWaitMs,
    'a raft leader',
  );
  return leader;
}

t.test('the per-strategy views', async (t) => {
  const w = await openPage(browser, srv.base);
  const { page } = w;
  await page.goto(`${srv.base}/`);

  // ---- raft: terms, commit indexes and the leader; an election after the leader is paused ----
  const raft = await create({ strategy: 'raft', node_count: 3 });
  const leader = await leaderOf(raft);
  await pick(page, raft);
  const state = (await http.get<StateBody>(`/api/v1/clusters/${raft}/state`)).body;
  t.type(state.nodes[leader]?.term, 'number', 'the state reports each raft node term');
  t.equal(state.nodes[leader]?.voted_for, leader, 'and its vote (a leader voted for itself)');
  for (const id of ['n1', 'n2', 'n3']) {
    await page
      .getByRole('img', { name: new RegExp(`^${id} term \\d+ · commit \\d+`) })
      .waitFor({ timeout: contractUpdateMs * 2 });
  }
  t.pass('every raft node shows its term and commit index on the topology');
  await page.getByRole('button', { name: new RegExp(`^${leader} leader$`) }).waitFor({ timeout: contractUpdateMs });
  const raftRegion = page.getByRole('region', { name: 'Raft terms and votes' });
  await raftRegion.getByText(new RegExp(`leader ${leader}`)).waitFor({ timeout: contractUpdateMs });
  t.pass('the leader is named with its term');
  const oldTerm = state.nodes[leader]?.term ?? 0;

  await page.getByRole('button', { name: new RegExp(`^${leader} leader$`) }).click();
  await page.getByRole('button', { name: 'Pause', exact: true }).click();
  let sawVotes = false;
  let newLeader = '';
  await waitFor(
    async () => {
      if ((await page.getByRole('img', { name: / votes for n\d in term \d+$/ }).count()) > 0) sawVotes = true;
      const text = (await raftRegion.locator('[aria-live]').textContent()) ?? '';
      const m = /^Term (\d+): leader (n\d+)/.exec(text);
      if (m && Number(m[1]) > oldTerm && m[2] !== leader) newLeader = m[2] as string;
      return newLeader !== '';
    },
    electionWaitMs,
    'a new leader of a newer term on the page',
  );
  t.not(
    newLeader,
    leader,
    `the election is shown: ${newLeader} leads a newer term (votes seen under way: ${sawVotes})`,
  );
  // The votes that won it stay drawn (faint) while the term lasts: at least one other node's vote for the new leader.
  // Attached, not visible: a level arrow's box has no height, which Playwright counts as hidden.
  await page
    .getByRole('img', { name: new RegExp(` voted for ${newLeader} in term \\d+$`) })
    .first()
    .waitFor({
      state: 'attached',
      timeout: contractUpdateMs,
    });
  t.pass('the votes for the new leader are drawn');
  const after = (await http.get<StateBody>(`/api/v1/clusters/${raft}/state`)).body;
  t.equal(after.nodes[newLeader]?.role, 'leader', 'the page names the leader the API reports');

  t.same((await seriousAxeViolations(page)).map(describeViolation), [], 'raft view: axe clean');
  await shot(page, 'raft');

  // The new leader paused too: the last node stands and cannot win (no majority); the page says so.
  await http.post(`/api/v1/clusters/${raft}/nodes/${newLeader}/pause`);
  await raftRegion.getByText(/^Election under way in term \d+: n\d standing/).waitFor({ timeout: electionWaitMs });
  t.pass('an election that cannot be won is shown under way, with who stands');

  // ---- clock skew from the page, drawn on the node ----
  // A node that is neither leader (the paused one is selected: clicking it again would unselect it).
  const target = ['n1', 'n2', 'n3'].find((id) => id !== newLeader && id !== leader) as string;
  await page.getByRole('button', { name: new RegExp(`^${target} `) }).click();
  await page.getByRole('textbox', { name: 'Clock skew (ms)' }).fill('500');
  await page.getByRole('button', { name: 'Skew clock', exact: true }).click();
  await page.getByRole('img', { name: `${target} clock skew +500 ms` }).waitFor({ timeout: contractUpdateMs });
  t.pass('the skewed node carries a +500 ms badge');
  const hist = await http.get<{ faults: Array<{ kind: string; node?: string; value?: number }> }>(
    `/api/v1/clusters/${raft}/history`,
  );
  t.ok(
    hist.body.faults.some((f) => f.kind === 'clock_skew' && f.node === target && f.value === 500),
    'the skew reached the server (history fault lane)',
  );
  await page.getByRole('textbox', { name: 'Clock skew (ms)' }).fill('soon');
  await page.getByRole('button', { name: 'Skew clock', exact: true }).click();
  await page.getByText('clock skew must be a whole number of milliseconds').waitFor({ timeout: contractUpdateMs });
  t.pass('a skew that is not a number is refused on the page');

  // ---- leaderless: the ring and a key's preference list ----
  const ll = await create({ strategy: 'leaderless', node_count: 5 });
  await pick(page, ll);
  await page.getByRole('img', { name: /^Hash ring of 5 nodes, 640 virtual nodes drawn/ }).waitFor({
    timeout: contractUpdateMs * 2,
  });
  await page.getByRole('textbox', { name: 'Ring key' }).fill('user:42');
  await page.getByRole('button', { name: 'Show placement', exact: true }).click();
  const placement = await http.get<{ preference_list: string[] }>(`/api/v1/clusters/${ll}/placement?key=user:42&n=3`);
  const ringRegion = page.getByRole('region', { name: 'Ring' });
  await ringRegion
    .getByText(`Preference list for user:42: ${placement.body.preference_list.join(', ')} (N=3).`)
    .waitFor({ timeout: contractUpdateMs });
  t.pass(`the page's preference list is the API's (${placement.body.preference_list.join(', ')})`);
  await ringRegion.getByText(/n1 · phi \d/).waitFor({ timeout: contractUpdateMs * 2 });
  t.pass('phi suspicion per node');
  // A preferred replica paused: a stand-in takes its place (sloppy quorum is on by default).
  const down = placement.body.preference_list[0] as string;
  await http.post(`/api/v1/clusters/${ll}/nodes/${down}/pause`);
  await ringRegion.getByText(new RegExp(`Stand-ins \\(sloppy quorum\\): n\\d+ for ${down}\\.`)).waitFor({
    timeout: contractUpdateMs * 2,
  });
  t.pass('a paused preferred replica gets a stand-in');
  t.same((await seriousAxeViolations(page)).map(describeViolation), [], 'ring view: axe clean');
  await shot(page, 'leaderless');
  await http.post(`/api/v1/clusters/${ll}/nodes/${down}/resume`);

  // ---- multi-leader: a conflict and its resolution from the page ----
  const ml = await create({ strategy: 'multi_leader', node_count: 3, conflict_resolver: 'manual' });
  await http.post(`/api/v1/clusters/${ml}/network/partition`, { group_a: ['n1'], group_b: ['n2', 'n3'] });
  await http.post(`/api/v1/clusters/${ml}/write`, { key: 'k', value: 'v-n1', target_node_id: 'n1' });
  await http.post(`/api/v1/clusters/${ml}/write`, { key: 'k', value: 'v-n2', target_node_id: 'n2' });
  await http.del(`/api/v1/clusters/${ml}/network/faults`);
  await pick(page, ml);
  const conflicts = page.getByRole('region', { name: 'Conflicts' });
  await conflicts.getByText(/Conflict on k: v-n1 vs v-n2/).waitFor({ timeout: electionWaitMs });
  t.pass('the conflict is shown with both values');
  await conflicts.getByRole('cell', { name: 'n1:1', exact: true }).first().waitFor({ timeout: contractUpdateMs });
  t.pass('the vector clocks are written as n1:1');
  await conflicts.getByRole('button', { name: 'Keep v-n1', exact: true }).click();
  await conflicts.getByText('resolved k: kept v-n1 (chosen on n1)').waitFor({ timeout: contractUpdateMs });
  await conflicts.getByText(/^No open conflict/).waitFor({ timeout: electionWaitMs });
  await conflicts.getByRole('cell', { name: 'n1:2 n2:1', exact: true }).first().waitFor({ timeout: electionWaitMs });
  t.pass('resolved from the page: the conflict is gone and the merged clock is n1:2 n2:1');
  const left = await http.get<{ conflicts: unknown[] }>(`/api/v1/clusters/${ml}/conflicts`);
  t.same(left.body.conflicts, [], 'and the API agrees');
  const read = await http.get<{ value?: string }>(`/api/v1/clusters/${ml}/read?key=k&node_id=n3`);
  t.equal(read.status, 200);

  // ---- the checks every page test makes ----
  const serious = await seriousAxeViolations(page);
  t.same(serious.map(describeViolation), [], 'no serious or critical axe violation');
  t.same(w.consoleErrors, [], 'no console error');
  t.same(w.foreignRequests, [], 'no request to another origin');
  const js = w.scriptBytes();
  t.comment(`replication page JavaScript: ${js.raw} bytes, ${js.gzip} bytes gzipped`);
  t.ok(js.gzip <= 100_000, 'within the 100 KB gzipped budget');
  await shot(page, 'multi-leader');
  await page.context().close();
});
