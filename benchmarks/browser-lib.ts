/**
 * What the browser benchmarks share (web-frame-time, web-clocklab, web-flags-console): the system
 * Chromium (installed on first use, like wrk), a built page's directory, its JavaScript size as
 * served, and quantiles of frame intervals. It launches nothing and measures nothing itself.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { distRoot } from './lib.js';

/** The Chromium playwright-core drives (CHROMIUM_PATH overrides Debian's). */
export const chromiumPath = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

/** Installs Debian's chromium when it is missing (root, as in CI); exits 2 when that fails. */
export function ensureChromium(): void {
  if (existsSync(chromiumPath)) return;
  const r = spawnSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'inherit' });
  if (r.status !== 0 || !existsSync(chromiumPath)) {
    console.error(`chromium is missing at ${chromiumPath} and apt-get install -y chromium failed`);
    process.exit(2);
  }
}

/** dist/web/<page>, which make build writes; exits 2 with what to run when it is not built. */
export function builtPageDir(page: string): string {
  const dir = path.join(distRoot, 'web', page);
  if (!existsSync(path.join(dir, 'index.html'))) {
    console.error(`the page is not built: run make build (or node scripts/build-web.mjs ${page})`);
    process.exit(2);
  }
  return dir;
}

/** A built page's JavaScript: every script its index.html loads, raw and gzipped at level 9. */
export function pageJsBytes(pageDir: string): { raw: number; gzip: number } {
  const html = readFileSync(path.join(pageDir, 'index.html'), 'utf8');
  let raw = 0;
  let gzip = 0;
  for (const m of html.matchAll(/src="([^"]+\.js)"/g)) {
    const b = readFileSync(path.join(pageDir, m[1] as string));
    raw += b.length;
    gzip += gzipSync(b, { level: 9 }).length;
  }
  return { raw, gzip };
}

/** The p-quantile of xs (nearest rank); NaN when empty. */
export function quantile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))] ?? Number.NaN;
}
