#!/usr/bin/env node
// Runs the tap suite and closes with the plain line CI reads: "N passed, N failed".
// tap's own exit code is kept. Arguments (test files) are passed through; default: every test.
import { spawn } from 'node:child_process';

const args = process.argv.slice(2);
const files = args.length ? args : ['test/'];
const child = spawn('npx', ['tap', '--reporter=tap', ...files], { stdio: ['ignore', 'pipe', 'inherit'] });
let tail = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  tail = (tail + chunk.toString()).slice(-4096);
});
child.on('close', (code) => {
  // tap's summary line: "# { total: N, pass: N, fail: N, ... }" (fail omitted when zero)
  const m = /# \{ total: (\d+)(?:, pass: (\d+))?(?:, fail: (\d+))?/.exec(tail);
  const pass = m ? Number(m[2] ?? 0) : 0;
  const total = m ? Number(m[1]) : 0;
  const fail = m ? Number(m[3] ?? total - pass) : 1;
  console.log(`${pass} passed, ${code !== 0 && fail === 0 ? 1 : fail} failed`);
  process.exit(code ?? 1);
});
