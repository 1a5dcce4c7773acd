/**
 * Smoke test of `make sim`: the built swarm CLI (dist/src/replication/swarm/cli.js, what the
 * Makefile target runs) passes a seed, and running the same seed again replays it exactly: the
 * same trace hash, the same verbose trace and client history. Not a test of the swarm's checks
 * (test/replication has those): only that the command works and is deterministic.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from '../helpers/server.js';

const cli = path.join(repoRoot, 'dist/src/replication/swarm/cli.js');
const runTimeoutMs = 60_000;

interface SimRun {
  status: number | null;
  stdout: string;
  stderr: string;
  traceHash: string | undefined;
}

const dir = mkdtempSync(path.join(tmpdir(), 'smoke-sim-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
let runs = 0;

/**
 * One run of the CLI, its stdout going to a file as `make sim > file` does. (Not a pipe: the CLI
 * ends with process.exit, which cuts a piped stdout at the pipe's 64 KiB buffer, and the verbose
 * trace is longer than that.)
 */
function sim(seed: number, verbose: boolean): SimRun {
  const args = [cli, '--seed', String(seed), '--strategy', 'raft', ...(verbose ? ['--verbose'] : [])];
  const file = path.join(dir, `run-${++runs}.out`);
  const fd = openSync(file, 'w');
  const r = spawnSync(process.execPath, args, {
    encoding: 'utf8',
    timeout: runTimeoutMs,
    stdio: ['ignore', fd, 'pipe'],
  });
  closeSync(fd);
  const stdout = readFileSync(file, 'utf8');
  return { status: r.status, stdout, stderr: r.stderr, traceHash: /^trace ([0-9a-f]{16,})$/m.exec(stdout)?.[1] };
}

for (const seed of [42, 7]) {
  t.test(`seed ${seed} passes and replays to the same trace hash`, async (t) => {
    // Exactly what `make sim SEED=<seed>` runs (it passes --verbose), then the same seed without it.
    const a = sim(seed, true);
    const b = sim(seed, true);
    const c = sim(seed, false);
    t.equal(a.status, 0, `exit code 0 (a passing seed)`, { stderr: a.stderr, tail: a.stdout.slice(-2000) });
    t.match(a.stdout, /^PASS$/m, 'prints PASS');
    t.ok(a.traceHash, 'prints a trace hash');
    t.equal(b.traceHash, a.traceHash, 'the second run has the same trace hash');
    t.equal(c.traceHash, a.traceHash, 'the run without --verbose has the same trace hash');
    t.equal(b.stdout, a.stdout, 'the second verbose run prints the same trace and history, line for line');
  });
}

t.test('a different seed is a different run', async (t) => {
  const a = sim(42, false);
  const b = sim(43, false);
  t.ok(a.traceHash && b.traceHash, 'both print a trace hash');
  t.not(a.traceHash, b.traceHash, 'seeds 42 and 43 do not share a trace hash');
});
