// The replication page's history view and node drawer in headless Chromium against the real
// service (../shared/specs/web-ui.md: region "History", regions "Node log" and "Node store"):
// operations written from the page's console appear as bars holding their key and value, a paused
// node as a fault interval in the fault lane, a stale read on an async single-leader cluster is
// explained by the linearizability checker on the picture, and the selected node's log and store
// are shown. No console error, no request to another origin, no serious or critical axe violation.
import t from 'tap';
import type { Page } from 'playwright-core';
import { api } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';
import { describeViolation, ensureBuilt, launchBrowser, openPage, seriousAxeViolations } from './browser.js';

/** The contract's bound on how soon the page shows a change (web-ui.md: "within 2 s"), plus the history's 1 s fetch. */
const historyUpdateMs = 3_000;
/** Replication, election and checker answers on a loaded 2-core machine. */
const slowMs = 10_000;

ensureBuilt('replication');
const srv = await startReplSim({ REPLSIM_WORKER_POOL: '2' });
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await srv.stop();
});
const http = api(srv.base);
const V = '/api/v1';

async function waitFor(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const history = (page: Page) => page.getByRole('region', { name: 'History', exact: true });

t.test('the history view and the node drawer in a browser', async (t) => {
  const created = await http.post<{ id: string }>(`${V}/clusters`, {
    strategy: 'single_leader',
    replication_mode: 'async',
    node_count: 3,
  });
  t.equal(created.status, 201);
  const cid = created.body.id;
  const w = await openPage(browser, srv.base);
  const { page } = w;
  await page.goto(`${srv.base}/`);
  await page.getByText('events: open').waitFor({ timeout: historyUpdateMs });
  const select = page.getByRole('combobox', { name: 'Cluster', exact: true });
  await waitFor(
    async () =>
      (await select.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))).includes(cid),
    historyUpdateMs,
    'the cluster in the select',
  );
  await select.selectOption(cid);

  // ---- an operation written from the console shows in its client's lane with key and value ----
  await history(page).waitFor({ timeout: historyUpdateMs });
  await page.getByRole('textbox', { name: 'Key', exact: true }).fill('color');
  await page.getByRole('textbox', { name: 'Value', exact: true }).fill('blue');
  await page.getByRole('button', { name: 'Write', exact: true }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /wrote color = blue/ })
    .waitFor({ timeout: slowMs });
  await page.getByRole('button', { name: 'Read', exact: true }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /read color = blue/ })
    .waitFor({ timeout: slowMs });
  const writeBar = history(page).getByRole('img', { name: /^\S+ write color=blue ok on n\d+, / });
  await writeBar.waitFor({ timeout: historyUpdateMs });
  await history(page)
    .getByRole('img', { name: /^\S+ read color=blue ok on n\d+, / })
    .waitFor({ timeout: historyUpdateMs });
  t.match(await writeBar.textContent(), /color=blue/, "the bar's text holds the key and the value");
  const lane = await http.get<{ ops: Array<{ process: string }> }>(`${V}/clusters/${cid}/history`);
  const client = lane.body.ops[0]?.process ?? '?';
  await history(page)
    .getByRole('img', { name: `client ${client}`, exact: true })
    .waitFor({ timeout: historyUpdateMs });
  t.pass(`the write and the read are drawn in the lane of client ${client}`);

  // ---- pausing a node opens a fault interval in the fault lane; resuming closes it ----
  await page.getByRole('button', { name: /^n3 / }).click();
  await page.getByRole('button', { name: 'Pause', exact: true }).click();
  await history(page)
    .getByRole('img', { name: /^fault pause n3 from \d+\.\d{3} s, ongoing$/ })
    .waitFor({ timeout: historyUpdateMs });
  t.pass('a paused node shows as an ongoing fault');
  await page.getByRole('button', { name: 'Resume', exact: true }).click();
  await history(page)
    .getByRole('img', { name: /^fault pause n3 from \d+\.\d{3} s to \d+\.\d{3} s$/ })
    .waitFor({ timeout: historyUpdateMs });
  t.pass('resumed: the interval is closed');

  // ---- a stale read from a lagging follower, explained on the picture ----
  // As in test/replication/http-checkers.test.ts: n1 leads; n1 -> n2 is slowed after the first
  // write reached n2, so the second write is acknowledged while n2 still answers the first value.
  t.equal((await http.post(`${V}/clusters/${cid}/write`, { key: 'lag', value: 'v1' })).status, 200);
  await waitFor(
    async () =>
      (await http.get<Record<string, unknown>>(`${V}/clusters/${cid}/nodes/n2/store`)).body['lag'] !== undefined,
    slowMs,
    'the first write on n2',
  );
  t.equal((await http.post(`${V}/clusters/${cid}/network/latency`, { from: 'n1', to: 'n2', ms: 1500 })).status, 200);
  t.equal((await http.post(`${V}/clusters/${cid}/write`, { key: 'lag', value: 'v2' })).status, 200);
  const stale = await http.get<{ entry: { value: string } }>(`${V}/clusters/${cid}/read?key=lag&node_id=n2`);
  t.equal(Buffer.from(stale.body.entry.value, 'base64').toString(), 'v1', 'n2 still answers the old value');
  await history(page)
    .getByRole('img', { name: /fault latency n1>n2 1500 ms/ })
    .waitFor({ timeout: slowMs });
  t.pass('the latency fault is drawn in the fault lane');
  await page.getByRole('button', { name: 'Check linearizability', exact: true }).click();
  const verdict = history(page).getByText(
    /^not linearizable: read of lag=v1 at .* saw a value overwritten before it began: the write of lag=v2 completed at/,
  );
  await verdict.waitFor({ timeout: slowMs });
  t.pass(`explained: ${await verdict.textContent()}`);
  const hot = history(page).getByRole('img', { name: /^cannot be ordered: / });
  await waitFor(async () => (await hot.count()) === 3, historyUpdateMs, 'three highlighted operations');
  const hotNames = await hot.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''));
  const has = (re: RegExp): boolean => hotNames.some((n) => re.test(n));
  t.ok(has(/ read lag=v1 ok on n2,/), 'the stale read is highlighted');
  t.ok(has(/ write lag=v1 ok on n1,/), 'the write it saw');
  t.ok(has(/ write lag=v2 ok on n1,/), 'and the write that overwrote it before it began');
  t.notOk(has(/color/), 'and no operation on another key');
  await page.getByRole('button', { name: 'Check convergence', exact: true }).click();
  await history(page)
    .getByText(/^(converged: all \d+ keys agree|diverged: \d+ of \d+ keys differ)/)
    .waitFor({ timeout: slowMs });
  t.pass('the convergence verdict is shown beside it');

  // ---- the node drawer: the selected node's log and store ----
  await page.getByRole('button', { name: /^n2 / }).click();
  await page.getByRole('heading', { name: /^Node n2/ }).waitFor({ timeout: historyUpdateMs });
  const log = page.getByRole('region', { name: 'Node log', exact: true });
  const store = page.getByRole('region', { name: 'Node store', exact: true });
  await log.getByRole('row').filter({ hasText: 'lag' }).first().waitFor({ timeout: slowMs });
  t.same(
    await log.getByRole('columnheader').allTextContents(),
    ['Index', 'Term', 'Key', 'Committed'],
    'the log shows index, term, key and committed',
  );
  const firstRow = await log.getByRole('row').filter({ hasText: 'color' }).first().getByRole('cell').allTextContents();
  t.match(firstRow, [/^\d+$/, /^(\d+|—)$/, 'color', /^(yes|no)$/], 'a log row: index, term, key, committed');
  await store.getByRole('row').filter({ hasText: 'color' }).filter({ hasText: 'blue' }).waitFor({ timeout: slowMs });
  await store.getByRole('row').filter({ hasText: 'lag' }).filter({ hasText: /v[12]/ }).waitFor({ timeout: slowMs });
  t.pass("n2's store is shown with its values");
  await page.getByRole('button', { name: /^n1 / }).click();
  await page.getByRole('heading', { name: /^Node n1/ }).waitFor({ timeout: historyUpdateMs });
  await store.getByRole('row').filter({ hasText: 'lag' }).filter({ hasText: 'v2' }).waitFor({ timeout: slowMs });
  t.pass('selecting another node shows its store');

  // ---- zoom and scroll in time ----
  await page.getByRole('button', { name: 'Whole history', exact: true }).click();
  await writeBar.waitFor({ timeout: historyUpdateMs });
  await page.getByRole('button', { name: 'Zoom in', exact: true }).click();
  await page.getByRole('button', { name: 'Earlier', exact: true }).click();
  await page.getByRole('checkbox', { name: 'Follow newest' }).check();
  await history(page)
    .getByRole('img', { name: /write lag=v2/ })
    .waitFor({ timeout: historyUpdateMs });
  t.pass('zoom, scroll and follow keep the newest operations reachable');

  const serious = await seriousAxeViolations(page);
  t.same(serious.map(describeViolation), [], 'no serious or critical axe violation');
  t.same(w.consoleErrors, [], 'no console error');
  t.same(w.foreignRequests, [], 'no request to another origin');
  const js = w.scriptBytes();
  t.comment(`replication page JavaScript: ${js.raw} bytes, ${js.gzip} bytes gzipped`);
  await page.context().close();
});
