#!/usr/bin/env node
// Runs the benchmarks (built to dist/benchmarks) one after another and prints each one's table.
// `node scripts/run-benchmarks.mjs [name ...]` runs only those (e.g. http-writes scale).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';

// load and soak have their own targets (make load, make soak DURATION=...): long, and not ratio benchmarks.
const skip = new Set(['lib', 'hello-uws', 'load', 'soak']);
const all = readdirSync('dist/benchmarks').filter((f) => f.endsWith('.js')).map((f) => f.slice(0, -3)).filter((n) => !skip.has(n)).sort();
const wanted = process.argv.slice(2);
const names = wanted.length ? wanted : all;
let failed = 0;
for (const name of names) {
  const file = `dist/benchmarks/${name}.js`;
  if (!existsSync(file)) {
    console.error(`no benchmark ${name}`);
    failed++;
    continue;
  }
  console.log(`\n## ${name}\n`);
  const r = spawnSync(process.execPath, [file], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
