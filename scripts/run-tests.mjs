#!/usr/bin/env node
// Runs the tap suite and closes with the plain line CI reads: "N passed, N failed".
// tap's own exit code is kept. Arguments (test files) are passed through; default: every test.
import { spawn } from 'node:child_process';

const args = process.argv.slice(2);
const files = args;
const child = spawn('npx', ['tap', '--reporter=tap', ...files], { stdio: ['ignore', 'pipe', 'inherit'] });
let tail = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  tail = (tail + chunk.toString()).slice(-4096);
});
child.on('close', (code) => {
  // tap's summary line: "# { total: N, pass: N, fail: N, ... }" (fail omitted when zero)
  const m = /# \{ total: (\d+)([^}]*)\}/.exec(tail);
  const field = (name) => Number(new RegExp(`${name}: (\\d+)`).exec(m?.[2] ?? '')?.[1] ?? 0);
  const pass = field('pass');
  const fail = m ? field('fail') : 1;
  console.log(`${pass} passed, ${code !== 0 && fail === 0 ? 1 : fail} failed`);
  process.exit(code ?? 1);
});
