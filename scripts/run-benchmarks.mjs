#!/usr/bin/env node
// Runs the benchmarks (built to dist/benchmarks) one after another and prints each one's table;
// each records its measures in the results file (bench-results.json, or BENCH_RESULTS) through
// benchmarks/results.ts. A full run clears the file first; `node scripts/run-benchmarks.mjs
// [name ...]` runs only those (e.g. http-writes scale) and replaces only their entries.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';

// load and soak have their own targets (make load, make soak DURATION=...): long, and not ratio
// benchmarks; lib and results are modules, hello-uws is the baseline server others start.
const skip = new Set(['lib', 'results', 'hello-uws', 'load', 'soak']);
const all = readdirSync('dist/benchmarks')
  .filter((f) => f.endsWith('.js'))
  .map((f) => f.slice(0, -3))
  .filter((n) => !skip.has(n))
  .sort();
const wanted = process.argv.slice(2);
const names = wanted.length ? wanted : all;
const resultsFile = path.resolve(process.env.BENCH_RESULTS ?? 'bench-results.json');

if (wanted.length === 0 || !existsSync(resultsFile)) {
  writeFileSync(resultsFile, '[]\n');
} else {
  const kept = JSON.parse(readFileSync(resultsFile, 'utf8')).filter((r) => !names.includes(r.benchmark));
  writeFileSync(resultsFile, JSON.stringify(kept, null, 2) + '\n');
}
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
console.log(`benchmarks: ${names.join(', ')}; results to ${resultsFile}; load average at start ${load()}`);

let failed = 0;
for (const name of names) {
  const file = `dist/benchmarks/${name}.js`;
  if (!existsSync(file)) {
    console.error(`no benchmark ${name}`);
    failed++;
    continue;
  }
  console.log(`\n## ${name}\n`);
  const r = spawnSync(process.execPath, [file], {
    stdio: 'inherit',
    env: { ...process.env, BENCH_RESULTS: resultsFile },
  });
  if (r.status !== 0) {
    console.error(`benchmark ${name} failed (exit ${r.status ?? r.signal})`);
    failed++;
  }
}
const count = JSON.parse(readFileSync(resultsFile, 'utf8')).length;
console.log(`\n${count} measures in ${resultsFile}; load average at end ${load()}; ${failed} benchmark(s) failed`);
process.exit(failed ? 1 : 0);
