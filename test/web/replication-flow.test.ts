// The replication page's message flow, load generator and scenarios in headless Chromium against
// the real service (web-ui.md: canvas "Message flow", select "Scenario", button "Run scenario",
// region "Narration"): the canvas draws while messages flow (its pixels read back; drawn in a
// worker, or by the page without OffscreenCanvas), link rates are shown, the load generator's
// throughput chart gets points, a scenario and a demo play to their verdicts; no console error,
// no request to another origin, no serious axe violation.
import t from 'tap';
import type { Page } from 'playwright-core';
import { api } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';
import {
  describeViolation,
  ensureBuilt,
  launchBrowser,
  loadGeneratorAnswers,
  openPage,
  seriousAxeViolations,
} from './browser.js';

/** A raft cluster elects its first leader within a few election timeouts, more on a loaded machine. */
const electionWaitMs = 10_000;
/** The contract's bound on how soon the page shows a change. */
const contractUpdateMs = 2_000;
/** A scenario's script ends within the server's scenarioScriptMsMax (60 s); the one played here takes a few. */
const scenarioWaitMs = 60_000;

ensureBuilt('replication');
const srv = await startReplSim({ REPLSIM_WORKER_POOL: '2' });
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await srv.stop();
});
const http = api(srv.base);

async function waitFor(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A fingerprint of the canvas's pixels: how many are painted, and a hash. The page hands the canvas
 * to a worker (an OffscreenCanvas: the page itself cannot read it back), so the pixels are read from
 * a screenshot of the canvas's box with the topology over it hidden, decoded in the page: a pixel is
 * painted when it is not the panel's white. A canvas the page draws itself is read with getImageData.
 */
async function canvasPixels(page: Page): Promise<{ painted: number; hash: number }> {
  const canvas = page.locator('canvas[aria-label="Message flow"]');
  if ((await canvas.getAttribute('data-painter')) !== 'worker')
    return canvas.evaluate((el) => {
      const c = el as HTMLCanvasElement;
      const ctx = c.getContext('2d');
      if (!ctx || c.width === 0 || c.height === 0) return { painted: 0, hash: 0 };
      const px = ctx.getImageData(0, 0, c.width, c.height).data;
      let painted = 0;
      let hash = 0;
      for (let i = 3; i < px.length; i += 4) {
        if ((px[i] as number) > 0) {
          painted++;
          hash = (Math.imul(hash, 31) + i + (px[i - 3] as number)) | 0;
        }
      }
      return { painted, hash };
    });
  const png = await canvas.screenshot({
    animations: 'allow',
    style: '.topo-stack > :not(canvas.flow), .topo-stack svg, .topo-stack img { visibility: hidden !important; }',
  });
  return page.evaluate(async (b64) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const ctx = c.getContext('2d');
    if (!ctx || c.width === 0 || c.height === 0) return { painted: 0, hash: 0 };
    ctx.drawImage(img, 0, 0);
    const px = ctx.getImageData(0, 0, c.width, c.height).data;
    let painted = 0;
    let hash = 0;
    for (let i = 0; i < px.length; i += 4) {
      if ((px[i] as number) < 250 || (px[i + 1] as number) < 250 || (px[i + 2] as number) < 250) {
        painted++;
        hash = (Math.imul(hash, 31) + i + (px[i] as number)) | 0;
      }
    }
    return { painted, hash };
  }, png.toString('base64'));
}

t.test('message flow, load generator and charts on a live raft cluster', async (t) => {
  const w = await openPage(browser, srv.base);
  const { page } = w;
  await page.goto(`${srv.base}/`);
  const created = await http.post<{ id: string }>('/api/v1/clusters', { strategy: 'raft', node_count: 3 });
  t.equal(created.status, 201);
  const cid = created.body.id;
  await page.getByRole('combobox', { name: 'Cluster', exact: true }).selectOption(cid);
  await page.getByRole('button', { name: /^n\d+ leader$/ }).waitFor({ timeout: electionWaitMs });

  const canvas = page.locator('canvas[aria-label="Message flow"]');
  t.equal(await canvas.count(), 1, 'one canvas named Message flow');
  t.equal(await page.getByRole('img', { name: 'Message flow', exact: true }).count(), 1, 'exposed as an image');

  // Writes flow (the load generator, from the page): the canvas paints and its pixels change.
  await page.getByRole('spinbutton', { name: 'Rate (ops/s)' }).fill('40');
  await page.getByRole('spinbutton', { name: 'Clients' }).fill('4');
  await page.getByRole('spinbutton', { name: 'Keys' }).fill('20');
  await page.getByRole('button', { name: 'Start load', exact: true }).click();
  let first = { painted: 0, hash: 0 };
  await waitFor(
    async () => {
      first = await canvasPixels(page);
      return first.painted > 0;
    },
    contractUpdateMs * 2,
    'dots painted on the Message flow canvas',
  );
  let changed = false;
  await waitFor(
    async () => {
      const next = await canvasPixels(page);
      changed = next.painted > 0 && next.hash !== first.hash;
      return changed;
    },
    contractUpdateMs,
    'the canvas pixels moving',
  );
  t.ok(changed, `the canvas draws moving dots (${first.painted} pixels painted at first look)`);
  await waitFor(
    async () => Number(await canvas.getAttribute('data-spawned')) > 0,
    contractUpdateMs,
    'the flow counting the dots it spawned from link_stats',
  );
  t.pass(`the flow spawned ${await canvas.getAttribute('data-spawned')} dots from link_stats`);
  t.equal(await canvas.getAttribute('data-painter'), 'worker', 'the flow is drawn in a worker (an OffscreenCanvas)');
  t.equal(page.workers().length, 1, 'one worker: the message flow');

  // Link rates: listed for screen readers (and drawn on the canvas).
  const rates = page.getByRole('list', { name: 'Link rates' });
  await rates
    .getByRole('listitem')
    .first()
    .waitFor({ timeout: contractUpdateMs * 2 });
  const items = await rates.getByRole('listitem').allTextContents();
  t.ok(
    items.some((x) => /^n\d+ ↔ n\d+: \d+(\.\d)?k? msg\/s/.test(x)),
    `link rates shown: ${items.slice(0, 3).join('; ')}`,
  );

  // The throughput chart gets points, with a nonzero rate of answers.
  const throughput = page.getByRole('img', { name: /^Throughput:/ });
  await waitFor(
    async () => {
      const name = (await throughput.getAttribute('aria-label')) ?? '';
      const points = Number(await throughput.getAttribute('data-points'));
      const m = /page answers (\d+(\.\d+)?) ops\/s/.exec(name);
      return points >= 2 && m !== null && Number(m[1]) > 0;
    },
    contractUpdateMs * 3,
    'points on the throughput chart with answers counted',
  );
  t.pass(`throughput chart: ${await throughput.getAttribute('aria-label')}`);
  const latency = (await page.getByRole('img', { name: /^Latency:/ }).getAttribute('aria-label')) ?? '';
  t.match(latency, /p50 \d+(\.\d+)? ms, p99 \d+(\.\d+)? ms/, `latency chart: ${latency}`);
  t.equal(await page.locator('.uplot').count(), 4, 'four uPlot charts (throughput, latency, lag, drops)');
  await page.getByRole('button', { name: 'Stop load', exact: true }).click();
  await page.getByText(/stopped after \d+ operations/).waitFor({ timeout: contractUpdateMs });
  const history = await http.get<{ ops: Array<{ client_id?: string; client?: string }> }>(
    `/api/v1/clusters/${cid}/history`,
  );
  t.equal(history.status, 200);
  t.ok(
    JSON.stringify(history.body).includes('load-1'),
    "the generator's operations are in the cluster's history under their clients",
  );

  // A link made lossy: dropped messages are counted on the link's rate.
  const state = await http.get<{ node_ids: string[]; leader_id?: string }>(`/api/v1/clusters/${cid}/state`);
  const leader = state.body.leader_id as string;
  const follower = state.body.node_ids.find((id) => id !== leader) as string;
  t.equal(
    (await http.post(`/api/v1/clusters/${cid}/network/drop`, { from: leader, to: follower, rate: 1 })).status,
    200,
  );
  await rates
    .getByText(/% dropped/)
    .first()
    .waitFor({ timeout: contractUpdateMs * 2 });
  t.pass('a lossy link shows its dropped share');
  const healed = await http.del(`/api/v1/clusters/${cid}/network/faults`);
  t.ok(healed.status >= 200 && healed.status < 300, `healed (${healed.status})`);

  const serious = await seriousAxeViolations(page);
  t.same(serious.map(describeViolation), [], 'no serious or critical axe violation');
  const loadFailures = loadGeneratorAnswers(w.consoleErrors, cid);
  if (loadFailures.length > 0) t.comment(`${loadFailures.length} load-generator operations answered 4xx/5xx`);
  t.same(
    w.consoleErrors.filter((e) => !loadFailures.includes(e)),
    [],
    'no console error',
  );
  t.same(w.foreignRequests, [], 'no request to another origin');
  const js = w.scriptBytes();
  t.comment(`replication page JavaScript: ${js.raw} bytes, ${js.gzip} bytes gzipped`);
  t.ok(js.gzip <= 100 * 1024, `the page's JavaScript within 100 KB gzipped (${js.gzip} B)`);
  await page.context().close();
});

t.test('without OffscreenCanvas the page draws the message flow itself', async (t) => {
  const w = await openPage(browser, srv.base);
  const { page } = w;
  await page.addInitScript('delete HTMLCanvasElement.prototype.transferControlToOffscreen');
  await page.goto(`${srv.base}/`);
  const created = await http.post<{ id: string }>('/api/v1/clusters', { strategy: 'raft', node_count: 3 });
  t.equal(created.status, 201);
  await page.getByRole('combobox', { name: 'Cluster', exact: true }).selectOption(created.body.id);
  await page.getByRole('button', { name: /^n\d+ leader$/ }).waitFor({ timeout: electionWaitMs });
  const canvas = page.locator('canvas[aria-label="Message flow"]');
  await page.getByRole('button', { name: 'Start load', exact: true }).click();
  await waitFor(
    async () => (await canvasPixels(page)).painted > 0,
    contractUpdateMs * 2,
    'dots painted on the Message flow canvas by the page',
  );
  t.equal(await canvas.getAttribute('data-painter'), 'page', 'drawn in the page');
  t.equal(page.workers().length, 0, 'no worker started');
  await page.getByRole('button', { name: 'Stop load', exact: true }).click();
  const loadFailures = loadGeneratorAnswers(w.consoleErrors, created.body.id);
  t.same(
    w.consoleErrors.filter((e) => !loadFailures.includes(e)),
    [],
    'no console error',
  );
  await page.context().close();
});

t.test('a scenario plays to its verdict in the Narration region, its cluster drawn', async (t) => {
  const w = await openPage(browser, srv.base);
  const { page } = w;
  await page.goto(`${srv.base}/`);
  const select = page.getByRole('combobox', { name: 'Scenario', exact: true });
  await select
    .locator('option[value="scenario:ReplicationLag"]')
    .waitFor({ state: 'attached', timeout: contractUpdateMs });
  const values = await select.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
  const listed = await http.get<Array<{ name: string }>>('/api/v1/scenarios');
  for (const s of listed.body) t.ok(values.includes(`scenario:${s.name}`), `scenario ${s.name} offered`);
  t.equal(listed.body.length, 14, 'the fourteen scenarios');
  t.ok(values.includes('consistency:read-your-writes') && values.includes('demo:paxos'), 'and the demos');

  await select.selectOption('scenario:ReplicationLag');
  await page.getByRole('button', { name: 'Run scenario', exact: true }).click();
  const narration = page.getByRole('region', { name: 'Narration' });
  // The step texts arrive while it plays; the cluster it made is the one shown.
  await narration.getByRole('listitem').first().waitFor({ timeout: scenarioWaitMs });
  const clusterShown = await page.getByRole('combobox', { name: 'Cluster', exact: true }).inputValue();
  const report = await http.get<{ scenario: string; status: string }>(`/api/v1/clusters/${clusterShown}/scenario`);
  t.equal(report.body.scenario, 'ReplicationLag', "the topology shows the scenario's cluster");
  await page.getByRole('button', { name: /^n\d+ leader$/ }).waitFor({ timeout: contractUpdateMs });
  t.pass('its nodes are drawn');
  await narration.getByText(/^Verdict: (as expected|not as expected)$/).waitFor({ timeout: scenarioWaitMs });
  const final = await http.get<{ status: string; steps: unknown[]; verdict: { passed: boolean } }>(
    `/api/v1/clusters/${clusterShown}/scenario`,
  );
  t.equal(final.body.status, 'finished');
  const shownSteps = await narration.getByRole('listitem').count();
  t.equal(shownSteps, final.body.steps.length, `every step narrated (${shownSteps})`);
  t.equal(
    await narration.getByText(final.body.verdict.passed ? 'Verdict: as expected' : 'Verdict: not as expected').count(),
    1,
    "the verdict is the server's",
  );

  // A consistency demo on the cluster shown (the scenario's): its narrative and verdict come whole.
  await select.selectOption('consistency:read-your-writes');
  await page.getByRole('button', { name: 'Run scenario', exact: true }).click();
  await narration.getByText(/^read-your-writes on \S+ · finished$/).waitFor({ timeout: contractUpdateMs * 5 });
  await narration.getByText(/^The guarantee (held|violated)\.$/).waitFor({ timeout: contractUpdateMs });
  t.ok((await narration.getByRole('listitem').count()) > 0, 'the consistency demo narrates its steps');

  // A primitive demo: its narrative comes whole, and the region says so.
  await select.selectOption('demo:paxos');
  await page.getByRole('button', { name: 'Run scenario', exact: true }).click();
  await narration.getByText(/single-decree consensus \(Paxos\) · finished/).waitFor({ timeout: contractUpdateMs * 5 });
  t.ok((await narration.getByRole('listitem').count()) > 0, 'the demo narrative is shown');
  await narration.getByText(/whole narrative at its end/).waitFor({ timeout: contractUpdateMs });
  await narration.getByText('Verdict: as expected').waitFor({ timeout: contractUpdateMs });
  t.pass('the demo reached its verdict');

  const serious = await seriousAxeViolations(page);
  t.same(serious.map(describeViolation), [], 'no serious or critical axe violation');
  t.same(w.consoleErrors, [], 'no console error');
  t.same(w.foreignRequests, [], 'no request to another origin');
  await page.context().close();
});
