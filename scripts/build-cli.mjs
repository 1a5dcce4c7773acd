#!/usr/bin/env node
// Bundles the linearizability checker's command line (src/checkers/lincheck/cli.ts and everything
// it imports, edn-data included) with esbuild into one file, dist/cli/simlab-lincheck.mjs, which
// bin/simlab-lincheck.mjs runs when it exists: one file to read and compile instead of a dozen
// modules, so the checker starts sooner. The bundle is its own worker-thread entry too (cli.ts
// starts itself again for --jobs). Run by `make build` after tsc; it typechecks nothing itself.
// Usage: node scripts/build-cli.mjs
import { build } from 'esbuild';
import { mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outfile = path.join(root, 'dist', 'cli', 'simlab-lincheck.mjs');
mkdirSync(path.dirname(outfile), { recursive: true });
const started = performance.now();
await build({
  entryPoints: [path.join(root, 'src', 'checkers', 'lincheck', 'cli.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Whitespace and syntax only: names stay readable in stack traces.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  logLevel: 'warning',
  absWorkingDir: root,
});
const ms = Math.round(performance.now() - started);
console.log(`build-cli: ${path.relative(root, outfile)} ${statSync(outfile).size} B in ${ms} ms`);
