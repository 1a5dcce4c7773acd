#!/usr/bin/env node
// Runs the tap suite and closes with the plain line CI reads: "N passed, N failed".
// CI shows only the end of the output, so every failing assertion (with the first lines of
// its diagnostic block and the file it belongs to) is repeated just before that line.
// tap's own exit code is kept. Arguments (test files) are passed through; default: every test.
import { spawn } from 'node:child_process';

const args = process.argv.slice(2);
const files = args;
const child = spawn('npx', ['tap', '--reporter=tap', ...files], { stdio: ['ignore', 'pipe', 'inherit'] });
// CI prints about the last twenty lines, so each failure is one line: its name, then the
// diagnostic's place and found/wanted (or error message).
const MAX_FAILURES = 15;
const DIAGNOSTIC_KEYS = /^\s*(fileName|lineNumber|found|wanted|message|code|signal|exitCode):\s*(.*)$/;
let tail = '';
let partial = '';
const failures = [];
let current = null;
let inDiff = false;
const onLine = (line) => {
  if (current) {
    const key = DIAGNOSTIC_KEYS.exec(line);
    if (key && key[2] !== '' && key[2] !== 'null') current.push(`${key[1]}=${key[2].slice(0, 80)}`);
    if (/^\s*diff: \|/.test(line)) inDiff = true;
    else if (inDiff && /^\s*[-+](?![-+]{2} )/.test(line) && !/^\s*-+\^$/.test(line) && current.length < 8)
      current.push(line.trim().slice(0, 80));
    if (/^\s*\.\.\.\s*$/.test(line) || /^\s*(not )?ok \d+/.test(line)) current = null;
    else return;
  }
  if (/^\s*not ok \d+/.test(line) && !/# (TODO|SKIP)/i.test(line)) {
    current = [line.trim().replace(/ # time=.*$/, '')];
    inDiff = false;
    failures.push(current);
  }
};
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  const text = chunk.toString();
  tail = (tail + text).slice(-4096);
  const lines = (partial + text).split('\n');
  partial = lines.pop() ?? '';
  for (const line of lines) onLine(line);
});
child.on('close', (code) => {
  if (partial) onLine(partial);
  if (failures.length > 0) {
    console.log(`# ${failures.length} failing (repeated from above, innermost first):`);
    for (const f of failures.slice(0, MAX_FAILURES)) console.log(`# ${f.join(' | ')}`.slice(0, 400));
  }
  // tap's summary line: "# { total: N, pass: N, fail: N, ... }" (fail omitted when zero)
  const m = /# \{ total: (\d+)([^}]*)\}/.exec(tail);
  const field = (name) => Number(new RegExp(`${name}: (\\d+)`).exec(m?.[2] ?? '')?.[1] ?? 0);
  const pass = field('pass');
  const fail = m ? field('fail') : 1;
  console.log(`${pass} passed, ${code !== 0 && fail === 0 ? 1 : fail} failed`);
  process.exit(code ?? 1);
});
