/**
 * The browser harness of the page tests: the system Chromium (installed with apt-get on first use,
 * as `make wrk` installs wrk) driven by playwright-core, the built page (built here when dist/web
 * is missing), and the checks every page test makes: no console error, no request to another
 * origin, axe-core without a serious or critical violation, and the page's JavaScript size.
 */
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repoRoot } from '../helpers/server.js';

export const chromiumPath = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

/** Installs Debian's chromium when it is missing (root, as in CI), like the wrk target. */
export function ensureChromium(): void {
  if (existsSync(chromiumPath)) return;
  const install = (): number | null =>
    spawnSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'inherit' }).status;
  if (install() !== 0) {
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    if (install() !== 0) throw new Error('chromium is missing and `apt-get install -y chromium` failed');
  }
  if (!existsSync(chromiumPath)) throw new Error(`chromium installed but ${chromiumPath} is missing`);
}

/** Builds the server (tsc) and the page (scripts/build-web.mjs) when their outputs are missing. */
export function ensureBuilt(page: string): void {
  if (!existsSync(path.join(repoRoot, 'dist', 'src', 'http', 'static.js'))) {
    spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: repoRoot, stdio: 'inherit' });
  }
  if (!existsSync(path.join(repoRoot, 'dist', 'web', page, 'index.html'))) {
    const r = spawnSync(process.execPath, ['scripts/build-web.mjs', page], { cwd: repoRoot, stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`building the ${page} page failed (node scripts/build-web.mjs ${page})`);
  }
}

export async function launchBrowser(): Promise<Browser> {
  ensureChromium();
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
}

export interface WatchedPage {
  page: Page;
  /** Console errors and uncaught page errors, in order, each with the URL it concerns when there is one. */
  consoleErrors: Array<{ text: string; url: string }>;
  /** Requests (and WebSockets) to any origin other than the page's. */
  foreignRequests: string[];
  /** JavaScript the page loaded: bytes as served decoded, and gzipped at level 9. */
  scriptBytes: () => { raw: number; gzip: number; files: string[] };
}

/** Opens a page on `base` that records what the checks need. The page keeps its CSP (axe is injected through CDP). */
export async function openPage(browser: Browser, base: string): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const origin = new URL(base);
  const consoleErrors: Array<{ text: string; url: string }> = [];
  const foreignRequests: string[] = [];
  const scripts = new Map<string, Buffer>();
  const sameOrigin = (url: string): boolean => {
    if (url.startsWith('data:') || url.startsWith('blob:') || url === 'about:blank') return true;
    const u = new URL(url);
    return u.host === origin.host && ['http:', 'ws:'].includes(u.protocol);
  };
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push({ text: m.text(), url: m.location().url });
  });
  page.on('pageerror', (e) => consoleErrors.push({ text: `uncaught: ${e.message}`, url: '' }));
  page.on('request', (r) => {
    if (!sameOrigin(r.url())) foreignRequests.push(r.url());
  });
  page.on('websocket', (ws) => {
    if (!sameOrigin(ws.url())) foreignRequests.push(ws.url());
  });
  page.on('response', (r) => {
    if (r.request().resourceType() !== 'script') return;
    r.body().then(
      (b) => scripts.set(r.url(), b),
      () => undefined,
    );
  });
  return {
    page,
    consoleErrors,
    foreignRequests,
    scriptBytes: () => {
      const all = [...scripts.values()];
      return {
        raw: all.reduce((n, b) => n + b.length, 0),
        gzip: all.reduce((n, b) => n + gzipSync(b, { level: 9 }).length, 0),
        files: [...scripts.keys()].map((u) => new URL(u).pathname),
      };
    },
  };
}

/**
 * The console errors that are answers to the page's load generator: Chromium logs every 4xx/5xx answer to
 * fetch() as a console error, but a read of a key not written yet (404), a write refused during a partition
 * (409) or a moment without a leader (5xx) is the cluster's answer, counted on the charts, not a page error.
 */
export function loadGeneratorAnswers(
  errors: WatchedPage['consoleErrors'],
  clusterId: string,
): WatchedPage['consoleErrors'] {
  const route = new RegExp(`/api/v1/clusters/${clusterId}/(write|read|delete)\\b`);
  return errors.filter((e) => /status of [45]\d\d/.test(e.text) && route.test(e.url));
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown; failureSummary?: string }>;
}

const axeSource = (): string => readFileSync(path.join(repoRoot, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

/** axe-core's violations of impact serious or critical on the page as it is now. */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the DevTools protocol, so the page's CSP (script-src 'self') does not block it.
  await page.evaluate(axeSource());
  const violations = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: unknown[] }> } }
    ).axe;
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations as AxeViolation[];
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** A violation as one readable line (for the failure message). */
export function describeViolation(v: AxeViolation): string {
  return `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`;
}

/**
 * A TCP relay in front of a service whose connections the test can cut, and which can refuse new
 * ones for a while: what a page sees when the network drops (its WebSocket closes, reconnects fail).
 */
export async function startCuttableRelay(
  targetPort: number,
): Promise<{ port: number; cut: () => void; refuse: (on: boolean) => void; close: () => Promise<void> }> {
  const open = new Set<net.Socket>();
  let refusing = false;
  const server = net.createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = net.connect(targetPort, '127.0.0.1');
    open.add(client);
    open.add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    cut: () => {
      for (const s of [...open]) s.destroy();
      open.clear();
    },
    refuse: (on) => {
      refusing = on;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of [...open]) s.destroy();
        server.close(() => resolve());
      }),
  };
}
