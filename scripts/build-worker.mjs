#!/usr/bin/env node
// Bundles the replication node actor (run by `make build` after tsc): dist/workers/node-actor.js and
// everything it loads from dist/ (the four cores, protocol, fabric helpers, comlink) into one ES module,
// dist/workers/node-actor.bundle.js. A worker thread that loads one file instead of ~60 modules starts
// with about a fifth less CPU (quiet machine, 16 at a time: 39-41 -> 31-32 ms per actor). Packages that
// are loaded lazily or locate files of their own at run time stay outside and are imported from
// node_modules as usual: OpenTelemetry, pino and its transports, and msgpackr (its Node entry loads the
// native string extractor, msgpackr-extract; bundled, esbuild picked the plain entry and dropped it).
// Beside the bundle it writes node-actor.bundle.inputs.json, the dist/ files it was built from:
// src/replication/node-handle.ts uses the bundle only while none of them is newer than it, so a
// `tsc` without this step never runs old core code.
import { build } from 'esbuild';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const workersDir = path.join(root, 'dist', 'workers');
const started = performance.now();
const result = await build({
  entryPoints: { 'node-actor.bundle': path.join(workersDir, 'node-actor.js') },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  outdir: workersDir,
  metafile: true,
  external: ['@opentelemetry/*', 'msgpackr', 'msgpackr-extract', 'pino', 'pino-pretty', 'piscina'],
  // CommonJS dependencies inside an ES module bundle need a require of their own.
  banner: {
    js:
      "import { createRequire as __bundleRequire } from 'node:module'; " +
      'const require = __bundleRequire(import.meta.url);',
  },
  legalComments: 'none',
  logLevel: 'warning',
  absWorkingDir: root,
});
const inputs = Object.keys(result.metafile.inputs).filter((f) => f.startsWith('dist/'));
writeFileSync(path.join(workersDir, 'node-actor.bundle.inputs.json'), JSON.stringify(inputs) + '\n');
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(
  `build-worker: node-actor.bundle.js ${bytes} B from ${inputs.length} dist files ` +
    `in ${(performance.now() - started).toFixed(0)} ms`,
);
