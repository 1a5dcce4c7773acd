// Time travel on the replication page in headless Chromium against the real service: a pause then a
// partition recorded, "Step back" to before the pause (the node's label loses "paused"), "Step
// forward" until it is back, "Live" returns; then a trace file written by the swarm CLI
// (--trace-out) opened with "Open trace" and played read-only: its banner, its nodes, a leader.
// No console error, no request to another origin, no serious or critical axe violation.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { api } from '../helpers/http.js';
import { repoRoot, startReplSim } from '../helpers/server.js';
import { describeViolation, ensureBuilt, launchBrowser, openPage, seriousAxeViolations } from './browser.js';

const contractUpdateMs = 2_000;
const electionWaitMs = 10_000;
/** Step clicks allowed to reach a point (the record of an idle 3-node cluster holds a few dozen). */
const stepsMax = 60;

ensureBuilt('replication');
if (!existsSync(path.join(repoRoot, 'dist', 'src', 'replication', 'swarm', 'trace-file.js'))) {
  spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: repoRoot, stdio: 'inherit' });
}
const srv = await startReplSim({ REPLSIM_WORKER_POOL: '2' });
const browser = await launchBrowser();
const tmp = mkdtempSync(path.join(tmpdir(), 'simlab-trace-'));
t.teardown(async () => {
  await browser.close();
  await srv.stop();
  rmSync(tmp, { recursive: true, force: true });
});
const http = api(srv.base);

interface StateBody {
  id: string;
  leader_id?: string;
  node_ids: string[];
  partitions: Record<string, unknown>;
}

const nodeButton = (page: Page, name: RegExp) => page.getByRole('button', { name });
const exact = (s: string): RegExp => new RegExp(`^${s}$`);

async function waitFor(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Clicks `button` until `cond` holds; the number of clicks, or -1 when it never did. */
async function stepUntil(page: Page, button: string, cond: () => Promise<boolean>): Promise<number> {
  for (let i = 1; i <= stepsMax; i++) {
    const b = page.getByRole('button', { name: button, exact: true });
    if (await b.isDisabled()) return -1;
    await b.click();
    if (await cond()) return i;
  }
  return -1;
}

t.test('time travel: step back before a pause, forward to it, back to live; a swarm trace played', async (t) => {
  const w = await openPage(browser, srv.base);
  const { page } = w;
  const created = await http.post<StateBody>('/api/v1/clusters', { strategy: 'raft', node_count: 3 });
  t.equal(created.status, 201);
  const cid = created.body.id;
  await page.goto(`${srv.base}/`);
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
  const [f1, f2] = created.body.node_ids.filter((id) => id !== leader) as [string, string];
  await nodeButton(page, exact(`${f1} follower`)).waitFor({ timeout: electionWaitMs });

  // ---- record: pause f1, then cut f2 off ----
  t.equal((await http.post(`/api/v1/clusters/${cid}/nodes/${f1}/pause`, {})).status, 200);
  await nodeButton(page, exact(`${f1} follower paused`)).waitFor({ timeout: contractUpdateMs });
  const cut = await http.post(`/api/v1/clusters/${cid}/network/partition`, { group_a: [f2], group_b: [leader, f1] });
  t.ok(cut.status === 200 || cut.status === 201, `partition created (${cut.status})`);
  const linkCut = new RegExp(`^link (${leader} ${f2}|${f2} ${leader}) partitioned$`);
  await page.getByRole('button', { name: linkCut }).waitFor({ timeout: contractUpdateMs });
  const where = page.locator('.travel-where');
  t.match(await where.textContent(), /^live/, 'the panel says live');

  // ---- step back: first the partition goes, then the pause ----
  const unpaused = () => nodeButton(page, exact(`${f1} \\S+`)).isVisible();
  const back = await stepUntil(page, 'Step back', unpaused);
  t.ok(back > 0, `${f1} without "paused" after ${back} step(s) back`);
  t.equal(await page.getByRole('button', { name: linkCut }).count(), 0, 'before the pause, no partition either');
  t.match(await where.textContent(), /^replaying · point \d+ of \d+/, 'the panel says which point');
  t.equal(await page.getByRole('button', { name: 'Live', exact: true }).isDisabled(), false, 'Live can be pressed');

  // ---- step forward: the pause is back ----
  const paused = () => nodeButton(page, exact(`${f1} \\S+ paused`)).isVisible();
  const forward = await stepUntil(page, 'Step forward', paused);
  t.ok(forward > 0, `${f1} paused again after ${forward} step(s) forward`);

  // ---- Live: the topology follows the cluster again ----
  await page.getByRole('button', { name: 'Live', exact: true }).click();
  await page.getByRole('button', { name: linkCut }).waitFor({ timeout: contractUpdateMs });
  t.match(await where.textContent(), /^live/, 'live again');
  t.equal(await page.getByRole('button', { name: 'Live', exact: true }).isDisabled(), true);
  t.equal((await http.post(`/api/v1/clusters/${cid}/nodes/${f1}/resume`, {})).status, 200);
  await nodeButton(page, exact(`${f1} \\S+`)).waitFor({ timeout: contractUpdateMs });
  t.pass('a change made after Live shows at once');

  // ---- a trace file from the swarm CLI ----
  const file = path.join(tmp, 'raft-3.json');
  const cli = spawnSync(
    process.execPath,
    ['dist/src/replication/swarm/cli.js', '--seed', '3', '--strategy', 'raft', '--trace-out', file],
    { cwd: repoRoot, encoding: 'utf8' },
  );
  t.equal(cli.status, 0, `the swarm CLI ran: ${cli.stderr}`);
  t.match(cli.stdout, new RegExp(`trace file ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  const nodes = (JSON.parse(readFileSync(file, 'utf8')) as { nodes: string[] }).nodes;
  await page.getByLabel('Open trace').setInputFiles(file);
  const replay = page.getByRole('region', { name: 'Trace replay' });
  await replay.waitFor({ timeout: contractUpdateMs });
  const banner = await replay.locator('.trace-banner').textContent();
  t.match(banner, /seed 3, strategy raft/, 'the banner names the seed and strategy');
  t.match(banner, /cli\.js --seed 3 --strategy raft/, 'and the replay command');
  for (const id of nodes.slice(0, 5)) {
    t.equal(await replay.getByRole('button', { name: new RegExp(`^${id} `) }).count(), 1, `${id} drawn`);
  }
  // The end of the run (after the heal): a leader serves.
  await page.getByRole('slider', { name: 'Time' }).focus();
  await page.keyboard.press('End');
  await replay.getByRole('button', { name: /^n\d+ leader$/ }).waitFor({ timeout: contractUpdateMs });
  t.match(await replay.locator('p.muted').first().textContent(), /leader n\d+ · terms /, 'the leader and the terms');
  t.match(await where.textContent(), /^trace · point \d+ of \d+ · t = \d+ ms/);
  t.match(
    await replay.getByText(/^Since the previous point: \d+ messages delivered, \d+ dropped$/).textContent(),
    /delivered/,
    'the traffic on the way to the point',
  );
  // For the reader of a failing run: the replay as drawn (dist/, not committed).
  mkdirSync(path.join(repoRoot, 'dist', 'screenshots'), { recursive: true });
  await replay.screenshot({ path: path.join(repoRoot, 'dist', 'screenshots', 'replication-trace.png') });

  // Back to live closes the trace.
  await page.getByRole('button', { name: 'Live', exact: true }).click();
  t.equal(await replay.count(), 0, 'Live closes the trace');

  // A file that is not a trace is refused with the reason.
  const bad = path.join(tmp, 'bad.json');
  spawnSync(process.execPath, ['-e', `require('fs').writeFileSync(${JSON.stringify(bad)}, '{"format":"other"}')`]);
  await page.getByLabel('Open trace').setInputFiles(bad);
  await page.getByText(/bad\.json: not a simlab swarm trace/).waitFor({ timeout: contractUpdateMs });
  t.pass('a file that is not a trace is refused with its reason');

  const violations = await seriousAxeViolations(page);
  t.same(violations.map(describeViolation), [], 'axe: no serious or critical violation');
  t.same(w.consoleErrors, [], 'no console error');
  t.same(w.foreignRequests, [], 'no request to another origin');
  await page.context().close();
});
