// The clock lab's page in headless Chromium against the real lab and its proxy: the contract's
// clock lab part (../shared/specs/web-ui.md) as a user and a screen reader see it: lanes and
// events with their clocks after sends, an arrow per message, a causal cone on hover, snapshot cuts
// (a consistent one and an inconsistent one), faults and the delivery mode from the page, KV
// siblings, a scenario's narration, the ShiViz round trip, a 20 × 5,000 log drawn virtualised;
// no console error, no request to another origin, no serious axe violation; JS size reported.
import t from 'tap';
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { startClockLab } from '../../src/clocklab/server.js';
import { formatShiViz, parseShiViz, type ShiVizEvent } from '../../src/clocklab/shiviz.js';
import { silentLogger } from '../../src/util/logger.js';
import { api } from '../helpers/http.js';
import { describeViolation, ensureBuilt, launchBrowser, openPage, seriousAxeViolations } from './browser.js';

/** How long the page may take to show what the lab did (web-ui.md's bound on updates). */
const contractUpdateMs = 2_000;
/** The page's cap on SVG events in one window (web/clocklab/viewport.ts svgEventsMax). */
const svgEventsMax = 800;

ensureBuilt('clocklab');
const lab = await startClockLab({
  port: 0,
  proxyPort: 0,
  host: '127.0.0.1',
  env: { VC_SEED: '11' },
  logger: silentLogger(),
});
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await lab.close();
});
const base = `http://127.0.0.1:${lab.proxyPort}`;
const http = api(base);

const diagram = (page: Page) => page.locator('svg[aria-label="Space-time diagram"]');
async function labels(page: Page, prefix: string): Promise<string[]> {
  return diagram(page)
    .locator(`[aria-label^="${prefix}"]`)
    .evaluateAll((es) => es.map((e) => e.getAttribute('aria-label') ?? ''));
}
async function waitFor(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const hasLabel = async (page: Page, label: string): Promise<boolean> => (await labels(page, label)).includes(label);

t.test('the clock lab page: diagram, snapshots, faults, KV, scenarios, ShiViz', async (t) => {
  const w = await openPage(browser, base);
  const { page } = w;
  const res = await page.goto(`${base}/`);
  t.equal(res?.status(), 200);
  t.match(await page.title(), /Clock lab/);

  // ---- one lane per process ----
  await waitFor(async () => (await labels(page, 'process ')).length === 3, contractUpdateMs, 'three lanes');
  t.same(await labels(page, 'process '), ['process p1', 'process p2', 'process p3']);

  // ---- a send from the page's form and one through the API ----
  await page.getByRole('combobox', { name: 'From', exact: true }).selectOption('p1');
  await page.getByRole('combobox', { name: 'To', exact: true }).selectOption('p2');
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await waitFor(() => hasLabel(page, 'event p2 receive [p1:1 p2:1] m1 from p1'), contractUpdateMs, 'm1 received');
  t.ok(await hasLabel(page, 'event p1 send [p1:1] m1 to p2'), 'the send shows its process and vector clock');
  t.equal((await http.post('/api/v1/processes/p3/event', { label: 'work' })).status, 200);
  t.equal((await http.post('/api/v1/messages', { from: 'p2', to: 'p3', payload: 'on' })).status, 202);
  await waitFor(() => hasLabel(page, 'event p3 receive [p1:1 p2:2 p3:2] m2 from p2'), contractUpdateMs, 'm2 received');
  t.ok(await hasLabel(page, 'event p3 internal [p3:1] work'), 'an internal event with its label');
  t.same((await labels(page, 'message ')).sort(), ['message m1 p1 → p2', 'message m2 p2 → p3'], 'an arrow per message');

  // ---- hover: the causal past and future, concurrent events marked ----
  await diagram(page).locator('[aria-label="event p2 receive [p1:1 p2:1] m1 from p1"]').hover();
  const rel = async (label: string) =>
    diagram(page)
      .locator(`[aria-label="${label}"]`)
      .getAttribute('class')
      .then((c) => /rel-(\w+)/.exec(c ?? '')?.[1]);
  t.equal(await rel('event p1 send [p1:1] m1 to p2'), 'past', 'the send is in the causal past');
  t.equal(await rel('event p3 receive [p1:1 p2:2 p3:2] m2 from p2'), 'future', 'p3’s receive is in the future');
  t.equal(await rel('event p3 internal [p3:1] work'), 'concurrent', 'p3’s internal event is concurrent');
  await page.mouse.move(0, 0);

  // ---- a snapshot from the page: a consistent cut ----
  await page.getByRole('button', { name: 'Snapshot from p1', exact: true }).click();
  await waitFor(
    async () => (await labels(page, 'snapshot s1')).some((l) => /^snapshot s1 complete, consistent$/.test(l)),
    contractUpdateMs * 2,
    'snapshot s1 drawn as a consistent cut',
  );
  t.pass('snapshot s1 is a cut labelled as such');
  await page
    .getByRole('region', { name: 'Snapshots' })
    .getByText(/balances \d+ \+ in transit \d+ → total 300/)
    .first()
    .waitFor();
  t.pass('the conservation check is shown beside it');

  // ---- an inconsistent cut: a reordering channel lets a message overtake the marker ----
  t.equal(
    (await http.post('/api/v1/channels/p1/p2/faults', { reorder: true, reorder_window_ms: 400, delay_ms: 5 })).status,
    200,
  );
  let bad = '';
  for (let attempt = 0; attempt < 4 && bad === ''; attempt++) {
    for (let i = 0; i < 6; i++) await http.post('/api/v1/messages', { from: 'p1', to: 'p2', payload: `r${i}` });
    const snap = await http.post<{ id: string }>('/processes/p1/snapshot');
    t.equal(snap.status, 201);
    await new Promise((r) => setTimeout(r, 600));
    const v = await http.get<{ consistent: boolean }>(`/snapshots/${snap.body.id}/verify`);
    if (v.body.consistent === false) bad = snap.body.id;
  }
  t.not(bad, '', `the lab verified snapshot ${bad} inconsistent`);
  await waitFor(
    async () =>
      (await labels(page, `snapshot ${bad}`)).some((l) => l.includes('inconsistent') && /offending: m\d+/.test(l)),
    contractUpdateMs,
    `snapshot ${bad} marked inconsistent with its offending message`,
  );
  t.equal(
    await diagram(page).locator(`[aria-label^="snapshot ${bad} "]`).getAttribute('class'),
    'cut inconsistent',
    'drawn in red',
  );
  await page.getByRole('region', { name: 'Snapshots' }).getByText('inconsistent').first().waitFor();
  t.ok((await diagram(page).locator('.msg.offending, line.offending').count()) > 0, 'the offending message is marked');
  await http.del('/api/v1/faults');

  // ---- faults, delivery mode and kill from the page ----
  // The channel is picked on the diagram: the sender's lane name, then the receiver's.
  await page.getByRole('button', { name: 'Pick channel end p2', exact: true }).click();
  await page.getByRole('button', { name: 'Pick channel end p3', exact: true }).click();
  t.equal(await page.getByRole('combobox', { name: 'Channel from', exact: true }).inputValue(), 'p2');
  t.equal(await page.getByRole('combobox', { name: 'Channel to', exact: true }).inputValue(), 'p3');
  await page.getByRole('spinbutton', { name: 'Delay ms', exact: true }).fill('250');
  await page.getByRole('spinbutton', { name: 'Drop rate', exact: true }).fill('0.5');
  await page.getByRole('button', { name: 'Set faults', exact: true }).click();
  await waitFor(
    async () => {
      const ch = (await http.get<{ channels: Array<Record<string, unknown>> }>('/api/v1/channels')).body.channels;
      return ch.some((c) => c['from'] === 'p2' && c['to'] === 'p3' && c['delay_ms'] === 250 && c['drop_rate'] === 0.5);
    },
    contractUpdateMs,
    'p2→p3 faults set from the page',
  );
  t.pass('delay and drop rate set on a channel from the page');
  await page.getByRole('textbox', { name: 'Side A', exact: true }).fill('p1');
  await page.getByRole('textbox', { name: 'Side B', exact: true }).fill('p2 p3');
  await page.getByRole('button', { name: 'Partition', exact: true }).click();
  await page.getByRole('button', { name: /^Heal / }).click();
  t.pass('a partition created and healed from the page');
  await page.getByRole('combobox', { name: 'Delivery mode', exact: true }).selectOption('immediate');
  await waitFor(
    async () => (await http.get<{ mode: string }>('/api/v1/delivery')).body.mode === 'immediate',
    contractUpdateMs,
    'delivery mode switched',
  );
  await page.getByRole('combobox', { name: 'Delivery mode', exact: true }).selectOption('causal');
  await page.getByRole('button', { name: 'Clear faults', exact: true }).click();

  // ---- the multi-version KV: concurrent writes are siblings side by side ----
  await page.getByRole('textbox', { name: 'Key', exact: true }).fill('x');
  await page.getByRole('textbox', { name: 'Value', exact: true }).fill('left');
  await page.getByRole('combobox', { name: 'Writer', exact: true }).selectOption('p1');
  await page.getByRole('button', { name: 'Write', exact: true }).click();
  await page.getByRole('group', { name: 'key x' }).waitFor({ timeout: contractUpdateMs });
  await page.getByRole('textbox', { name: 'Value', exact: true }).fill('right');
  await page.getByRole('combobox', { name: 'Writer', exact: true }).selectOption('p3');
  await page.getByRole('button', { name: 'Write', exact: true }).click();
  await page.getByRole('group', { name: 'key x' }).getByText('siblings (2)').waitFor({ timeout: contractUpdateMs });
  t.pass('concurrent writes show as two siblings');
  await page.getByRole('combobox', { name: 'Reader', exact: true }).selectOption('p2');
  await page.getByRole('button', { name: 'Read', exact: true }).click();
  await page
    .getByRole('group', { name: 'key x' })
    .getByText(/context of p2 after reading/)
    .waitFor();
  t.pass('a reader’s context is shown');

  // ---- kill a process from the page: its lane stays ----
  await page.getByRole('button', { name: 'Kill p3', exact: true }).click();
  await waitFor(
    async () =>
      (await http.get<{ processes: Array<{ id: string; status: string }> }>('/api/v1/processes')).body.processes.find(
        (p) => p.id === 'p3',
      )?.status === 'killed',
    contractUpdateMs,
    'p3 killed',
  );
  t.ok(await hasLabel(page, 'process p3'), 'the killed process keeps its lane');

  // ---- axe on the live page with every kind of element drawn ----
  const violations = await seriousAxeViolations(page);
  t.same(violations.map(describeViolation), [], 'no serious or critical axe violation');

  // ---- ShiViz: export, load back, same diagram ----
  await page.getByRole('button', { name: 'Fit', exact: true }).click();
  await new Promise((r) => setTimeout(r, 200));
  const liveEvents = (await labels(page, 'event ')).filter((l) => !/^event \S+ (held|dropped) /.test(l)).sort();
  t.ok(liveEvents.length >= 10, `${liveEvents.length} clock events drawn live`);
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: 'Export ShiViz', exact: true }).click(),
  ]);
  const file = await download.path();
  const log = readFileSync(file, 'utf8');
  const parsed = parseShiViz(log);
  t.ok(parsed.ok, 'the download is a ShiViz log');
  t.match(log, /^p1 \{"p1":1\}\nsend m1 to p2\n/, 'host and JSON clock on one line, the event on the next');
  await page
    .getByLabel('Load ShiViz log')
    .setInputFiles({ name: 'run.log', mimeType: 'text/plain', buffer: Buffer.from(log) });
  await page.getByText('read-only: run.log').waitFor({ timeout: contractUpdateMs });
  await page.getByRole('button', { name: 'Fit', exact: true }).click();
  await new Promise((r) => setTimeout(r, 200));
  const loaded = (await labels(page, 'event ')).sort();
  t.same(loaded, liveEvents, 'the loaded log draws the same events with the same clocks');
  t.ok((await labels(page, 'message ')).length > 0, 'and its arrows');
  await page.getByRole('button', { name: 'Back to live', exact: true }).click();

  // ---- a scenario, step by step ----
  await page.getByRole('combobox', { name: 'Scenario', exact: true }).selectOption('FalseConflict');
  await page.getByRole('button', { name: 'Run scenario', exact: true }).click();
  const narration = page.getByRole('region', { name: 'Narration' });
  await narration.locator('li').first().waitFor({ timeout: contractUpdateMs });
  t.equal(await narration.locator('li').count(), 1, 'the first step is narrated');
  await page.getByRole('button', { name: 'Next step', exact: true }).click();
  t.equal(await narration.locator('li').count(), 2, 'then the next');
  await page.getByRole('button', { name: 'All steps', exact: true }).click();
  await narration.getByText(/FalseConflict passed/).waitFor({ timeout: contractUpdateMs });
  t.pass('and the verdict at the end');

  t.same(w.consoleErrors, [], 'no console error');
  t.same(w.foreignRequests, [], 'no request to another origin');
  const js = w.scriptBytes();
  t.ok(js.gzip > 0 && js.gzip < 120_000, `JavaScript: ${js.raw} B, ${js.gzip} B gzipped (${js.files.join(', ')})`);
  t.comment(`clock lab page JavaScript: ${js.raw} bytes, ${js.gzip} bytes gzipped`);
  await page.context().close();
});

t.test('a 20 × 5,000 ShiViz log is drawn virtualised: one screen of SVG, a canvas when zoomed out', async (t) => {
  const w = await openPage(browser, base);
  const { page } = w;
  await page.goto(`${base}/`);
  const hosts = Array.from({ length: 20 }, (_, i) => `h${i + 1}`);
  const clocks = hosts.map(() => ({}) as Record<string, number>);
  const events: ShiVizEvent[] = [];
  for (let k = 0; k < 5000; k++) {
    for (let h = 0; h < hosts.length; h++) {
      const me = hosts[h] as string;
      const c = clocks[h] as Record<string, number>;
      c[me] = (c[me] ?? 0) + 1;
      // Every tenth event receives from the previous host (its latest event), as a message.
      if (k % 10 === 5 && h > 0) {
        const prev = clocks[h - 1] as Record<string, number>;
        for (const [key, v] of Object.entries(prev)) c[key] = Math.max(c[key] ?? 0, v);
      }
      events.push({ host: me, clock: { ...c }, text: k % 10 === 5 && h > 0 ? 'got' : 'step' });
    }
  }
  const log = formatShiViz(events);
  await page
    .getByLabel('Load ShiViz log')
    .setInputFiles({ name: 'big.log', mimeType: 'text/plain', buffer: Buffer.from(log) });
  await page.getByText('read-only: big.log').waitFor({ timeout: 20_000 });
  t.equal((await labels(page, 'process ')).length, 20, 'twenty lanes');
  const first = (await labels(page, 'event ')).length;
  t.ok(first > 0 && first <= svgEventsMax, `${first} of 100,000 events drawn as SVG`);
  // Scroll to the middle: the events there are drawn, the first ones are not.
  await page.locator('.diagram-scroll').evaluate((el) => {
    el.scrollTop = el.scrollHeight / 2;
  });
  await waitFor(
    async () => !(await labels(page, 'event h1 ')).some((l) => l.startsWith('event h1 internal [h1:1]')),
    contractUpdateMs,
    'the top rows leave the DOM when scrolled away',
  );
  const middle = await labels(page, 'event h1 ');
  t.ok(middle.length > 0 && middle.length < 200, `mid-run: ${middle.length} events of h1 drawn`);
  await page.getByRole('button', { name: 'Fit', exact: true }).click();
  await page.getByRole('img', { name: 'Space-time diagram overview' }).waitFor({ timeout: contractUpdateMs });
  t.equal((await labels(page, 'event ')).length, 0, 'zoomed out to the whole run, events go to a canvas');
  t.same(w.consoleErrors, [], 'no console error');
  await page.context().close();
});
