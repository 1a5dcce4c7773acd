// The replication page with a cluster past svgLinksNodesMax live nodes, whose links are painted on
// a canvas instead of SVG buttons (web/replication/topology.tsx), in headless Chromium against the
// real service: a link is still chosen by a click on its line, and by keyboard alone (select its
// two nodes, "Open link"); it is cut, slowed and healed from there, each shown on the page. No
// console error, no request to another origin, no serious or critical axe violation.
import t from 'tap';
import { api } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';
import { describeViolation, ensureBuilt, launchBrowser, openPage, seriousAxeViolations } from './browser.js';
import { layout, svgLinksNodesMax } from '../../web/replication/topology-model.js';

/** The contract's bound on how soon the page shows a change (web-ui.md: "within 2 s"). */
const contractUpdateMs = 2_000;
/** Nodes: one past the SVG links' bound. */
const nodes = svgLinksNodesMax + 1;
const pairs = (nodes * (nodes - 1)) / 2;

ensureBuilt('replication');
const srv = await startReplSim({ REPLSIM_WORKER_POOL: '2' });
const browser = await launchBrowser();
t.teardown(async () => {
  await browser.close();
  await srv.stop();
});
const http = api(srv.base);

t.test(`a ${nodes}-node cluster: links painted, still chosen by click and by keyboard, cut and healed`, async (t) => {
  // single_leader: no elections to wait for; the topology is the same for every strategy.
  const created = await http.post<{ id: string; node_ids: string[] }>('/api/v1/clusters', {
    strategy: 'single_leader',
    node_count: nodes,
  });
  t.equal(created.status, 201);
  const cid = created.body.id;
  const ids = created.body.node_ids;
  const w = await openPage(browser, srv.base);
  const { page } = w;
  await page.goto(`${srv.base}/`);
  const last = ids[ids.length - 1] as string;
  await page.getByRole('button', { name: new RegExp(`^${last} `) }).waitFor({ timeout: 10_000 });

  // ---- painted: every pair on the canvas, no SVG link button ----
  const canvas = page.locator('canvas.links');
  await t.resolves(
    page.waitForFunction(
      (n) => document.querySelector('canvas.links')?.getAttribute('data-links') === String(n),
      pairs,
    ),
  );
  t.equal(await canvas.getAttribute('data-links'), String(pairs), `all ${pairs} links painted`);
  t.equal(await page.getByRole('button', { name: /^link / }).count(), 0, 'no link button while none is chosen');
  // Shown as an image of the canvas (a shown canvas is copied out on every frame), not as the canvas.
  const shownAsImage = (): Promise<boolean> =>
    page.evaluate(() => {
      const c = document.querySelector('canvas.links') as HTMLCanvasElement | null;
      const img = document.querySelector('img.links') as HTMLImageElement | null;
      return (
        c !== null &&
        img !== null &&
        getComputedStyle(c).visibility === 'hidden' &&
        img.src.startsWith('data:image/png') &&
        img.src === c.toDataURL('image/png')
      );
    });
  t.ok(await shownAsImage(), 'the painted links are shown as an image of the canvas');

  // ---- a click on a painted line chooses that link ----
  const [a, b] = [ids[0] as string, ids[3] as string];
  const pos = layout(ids);
  const pa = pos.get(a)!;
  const pb = pos.get(b)!;
  const svg = page.getByRole('group', { name: `Topology of cluster ${cid}` });
  const box = (await svg.boundingBox())!;
  // The viewBox is 600 x 440, drawn "meet" in the box: scale and centre as the page does.
  const s = Math.min(box.width / 600, box.height / 440);
  const ox = box.x + (box.width - 600 * s) / 2;
  const oy = box.y + (box.height - 440 * s) / 2;
  await page.mouse.click(ox + ((pa.x + pb.x) / 2) * s, oy + ((pa.y + pb.y) / 2) * s);
  const chosen = page.getByRole('button', { name: new RegExp(`^link ${a} ${b}$`) });
  await chosen.waitFor({ timeout: contractUpdateMs });
  t.equal(await chosen.getAttribute('aria-pressed'), 'true', 'the clicked link is chosen and has a button');
  t.ok(await page.getByRole('heading', { name: `Link ${a} – ${b}` }).isVisible(), 'its form opens');
  await page.getByRole('button', { name: 'Close link', exact: true }).click();
  t.equal(await page.getByRole('button', { name: /^link / }).count(), 0, 'closed: no link button again');

  // ---- keyboard only: select two nodes with Enter and Shift+Enter, then Open link ----
  const [c, d] = [ids[1] as string, ids[7] as string];
  await page.getByRole('button', { name: new RegExp(`^${c} `) }).focus();
  await page.keyboard.press('Enter');
  await page.getByRole('button', { name: new RegExp(`^${d} `) }).focus();
  await page.keyboard.press('Shift+Enter');
  const open = page.getByRole('button', { name: 'Open link', exact: true });
  t.ok(await open.isEnabled(), 'Open link is enabled with exactly two nodes selected');
  await open.focus();
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: `Link ${c} – ${d}` }).waitFor({ timeout: contractUpdateMs });
  t.pass('the link of the two selected nodes opens from the keyboard');

  // ---- cut it: a partition of just these two nodes, painted cut and named so ----
  await page.getByRole('button', { name: 'Cut link', exact: true }).click();
  await page
    .getByRole('button', { name: new RegExp(`^link ${c} ${d} partitioned$`) })
    .waitFor({ timeout: contractUpdateMs });
  const parts = (
    await http.get<{ partitions: Record<string, { group_a: object; group_b: object }> }>(
      `/api/v1/clusters/${cid}/state`,
    )
  ).body.partitions;
  t.same(
    Object.values(parts).map((p) => [Object.keys(p.group_a), Object.keys(p.group_b)]),
    [[[c], [d]]],
    'the server holds a partition of exactly the two nodes',
  );
  // The links canvas is repainted on the next animation frame after the model changes, which may
  // come after the link's button has its new name: wait for it as the heal step below does.
  await page
    .waitForFunction(() => document.querySelector('canvas.links')?.getAttribute('data-cut') === '1', undefined, {
      timeout: contractUpdateMs,
    })
    .catch(() => undefined);
  t.equal(await canvas.getAttribute('data-cut'), '1', 'one link painted cut');
  t.ok(await shownAsImage(), 'the image shows the cut link too');

  // ---- slow it: its settings show on its button, which stays once the link is closed ----
  await page.getByRole('spinbutton', { name: 'Latency (ms)' }).fill('40');
  await page.getByRole('button', { name: 'Apply to link', exact: true }).click();
  await page
    .getByRole('button', { name: new RegExp(`^link ${c} ${d} partitioned 40 ms$`) })
    .waitFor({ timeout: contractUpdateMs });
  await page.getByRole('button', { name: 'Close link', exact: true }).click();
  t.equal(
    await page.getByRole('button', { name: /^link / }).count(),
    1,
    'a link with settings keeps its button when not chosen',
  );

  // ---- heal: nothing cut, no setting, no button ----
  await page.getByRole('button', { name: 'Heal', exact: true }).click();
  await t.resolves(
    page.waitForFunction(() => document.querySelector('canvas.links')?.getAttribute('data-cut') === '0', undefined, {
      timeout: contractUpdateMs,
    }),
  );
  await page.getByRole('button', { name: /^link / }).waitFor({ state: 'detached', timeout: contractUpdateMs });
  t.pass('heal removes the cut and the setting from the picture');

  const violations = await seriousAxeViolations(page);
  t.same(violations.map(describeViolation), [], 'axe: no serious or critical violation');
  t.same(w.consoleErrors, [], 'no console error');
  t.same(w.foreignRequests, [], 'no request to another origin');
});
