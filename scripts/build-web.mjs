#!/usr/bin/env node
// Bundles each service's web page with esbuild (run by `make build` after tsc): web/<page>/main.tsx
// with Preact's automatic JSX, minified, into dist/web/<page>/assets/ under content-hashed names,
// and writes dist/web/<page>/index.html from web/<page>/index.html with those names filled in.
// Directories of web/ without a main.tsx (web/shared) are not pages and are not touched.
// Usage: node scripts/build-web.mjs [page ...]   (default: every page with a main.tsx)
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const webDir = path.join(root, 'web');
const outRoot = path.join(root, 'dist', 'web');

const wanted = process.argv.slice(2);
const pages = readdirSync(webDir, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(path.join(webDir, d.name, 'main.tsx')))
  .map((d) => d.name)
  .filter((p) => wanted.length === 0 || wanted.includes(p));
if (wanted.length > 0 && pages.length !== wanted.length) {
  console.error(`build-web: unknown page(s): ${wanted.filter((w) => !pages.includes(w)).join(', ')}`);
  process.exit(2);
}

const hashOf = (buf) => createHash('sha256').update(buf).digest('base64url').slice(0, 10);

for (const page of pages) {
  const started = performance.now();
  const outDir = path.join(outRoot, page);
  const assets = path.join(outDir, 'assets');
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(assets, { recursive: true });
  const result = await build({
    entryPoints: { main: path.join(webDir, page, 'main.tsx') },
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: assets,
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
    absWorkingDir: root,
  });
  const outputs = Object.keys(result.metafile.outputs).map((f) => path.basename(f));
  const js = outputs.find((f) => f.endsWith('.js'));
  const css = outputs.find((f) => f.endsWith('.css'));
  if (!js) throw new Error(`build-web: ${page} produced no JavaScript`);
  // The favicon: the page's own, else the shared one, under a hashed name like the rest.
  const iconSrc = [path.join(webDir, page, 'favicon.svg'), path.join(webDir, 'shared', 'favicon.svg')].find((f) =>
    existsSync(f),
  );
  let favicon = 'data:,';
  if (iconSrc) {
    const icon = readFileSync(iconSrc);
    favicon = `favicon-${hashOf(icon)}.svg`;
    writeFileSync(path.join(assets, favicon), icon);
    favicon = `assets/${favicon}`;
  }
  const template = readFileSync(path.join(webDir, page, 'index.html'), 'utf8');
  const html = template
    .replaceAll('{{js}}', `assets/${js}`)
    .replaceAll('{{css}}', css ? `assets/${css}` : 'data:text/css,')
    .replaceAll('{{favicon}}', favicon);
  if (/\{\{\w+\}\}/.test(html))
    throw new Error(`build-web: ${page}/index.html has a placeholder left: ${/\{\{\w+\}\}/.exec(html)[0]}`);
  writeFileSync(path.join(outDir, 'index.html'), html);
  const jsBytes = readFileSync(path.join(assets, js));
  const ms = Math.round(performance.now() - started);
  const gzipped = gzipSync(jsBytes, { level: 9 }).length;
  console.log(
    `build-web: ${page}: ${js} ${jsBytes.length} B (${gzipped} B gzipped)${css ? `, ${css}` : ''} in ${ms} ms`,
  );
}
