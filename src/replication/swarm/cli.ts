/**
 * Command line for the seeded swarm: replay one seed exactly (trace hash and verdicts), or run a
 * window of seeds and report runs per second. What `make sim SEED=<n>` and `make sim-long` call.
 * It only parses arguments and prints; the runs themselves are runRaftSwarm's (raft) and
 * runKvSwarm's (single_leader, multi_leader, leaderless).
 *
 *   node dist/src/replication/swarm/cli.js --seed 42 [--strategy raft] [--verbose]
 *   node dist/src/replication/swarm/cli.js --seed 1 --runs 100000 [--strategy raft] [--jobs 2]
 *
 * --strategy is raft (default), single_leader, multi_leader or leaderless. With one run,
 * `--trace-out <file>` also writes the run as a trace file the replication page plays (trace-file.ts).
 */
import { parseArgs } from 'node:util';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { replayCommand, runRaftSwarm, swarmProfile, type SwarmResult } from './raft-swarm.js';
import { describeRegisterOp } from './register-lincheck.js';
import { kvReplayCommand, kvSwarmProfile, runKvSwarm, type KvStrategy } from './kv-swarm.js';
import { swarmJobsMax } from '../limits.js';
import { writeFileSync } from 'node:fs';
import { traceSwarmRun } from './trace-file.js';

const strategies = ['raft', 'single_leader', 'multi_leader', 'leaderless'] as const;
type SwarmStrategy = (typeof strategies)[number];

function usage(msg: string): never {
  process.stderr.write(
    `${msg}\nusage: cli.js --seed N [--strategy S] [--runs K] [--jobs J] [--verbose]\n` +
      `  --strategy S ${strategies.join(' | ')} (default raft)\n` +
      '  --seed N     first (or only) seed, an integer\n' +
      '  --runs K     run seeds N..N+K-1 and report runs/s (default 1: replay seed N)\n' +
      '  --jobs J     with --runs: spread the seeds over J worker threads (default 1)\n' +
      '  --verbose    with one run: print the profile, the trace and the client history\n' +
      '  --trace-out F  with one run: write it to F as a trace file (JSON) the replication page plays\n',
  );
  process.exit(2);
}

function parseIntArg(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (!/^-?\d+$/.test(v)) usage(`--${name} must be an integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

/** What both swarms report (raft's SwarmResult carries more: the register history). */
type AnySwarmResult = Pick<SwarmResult, 'seed' | 'ok' | 'traceHash' | 'violations' | 'trace'> & {
  verdicts: Record<string, boolean>;
  stats: object;
  history?: SwarmResult['history'];
};

function verdictLine(r: AnySwarmResult): string {
  return Object.entries(r.verdicts)
    .map(([k, v]) => `${k}=${v ? 'ok' : 'FAIL'}`)
    .join(' ');
}

function runSeed(strategy: SwarmStrategy, seed: number): AnySwarmResult {
  switch (strategy) {
    case 'raft':
      return runRaftSwarm(seed);
    case 'single_leader':
    case 'multi_leader':
    case 'leaderless':
      return runKvSwarm(strategy, seed);
  }
}

function replayOf(strategy: SwarmStrategy, seed: number): string {
  return strategy === 'raft' ? replayCommand(seed) : kvReplayCommand(strategy, seed);
}

function profileOf(strategy: SwarmStrategy, seed: number): unknown {
  return strategy === 'raft' ? swarmProfile(seed) : kvSwarmProfile(strategy as KvStrategy, seed);
}

function failureLines(strategy: SwarmStrategy, r: AnySwarmResult): string[] {
  const replay = `  replay: ${replayOf(strategy, r.seed)}`;
  return [`seed ${r.seed} FAIL ${verdictLine(r)}`, ...r.violations.map((v) => `  ${v}`), replay];
}

/** One worker's share of a window: seeds first+offset, first+offset+stride, ... */
interface Share {
  strategy: SwarmStrategy;
  first: number;
  runs: number;
  offset: number;
  stride: number;
}

type WorkerReport = { kind: 'fail'; seed: number; lines: string[] } | { kind: 'progress'; done: number };

function workerMain(share: Share): void {
  const port = parentPort;
  if (!port) return;
  let done = 0;
  for (let s = share.first + share.offset; s < share.first + share.runs; s += share.stride) {
    const r = runSeed(share.strategy, s);
    if (!r.ok) {
      port.postMessage({ kind: 'fail', seed: s, lines: failureLines(share.strategy, r) } satisfies WorkerReport);
    }
    if (++done % 50 === 0) port.postMessage({ kind: 'progress', done: 50 } satisfies WorkerReport);
  }
  port.postMessage({ kind: 'progress', done: done % 50 } satisfies WorkerReport);
}

/** Runs a window of seeds over `jobs` threads; resolves to the failing seeds. */
async function runWindow(strategy: SwarmStrategy, first: number, runs: number, jobs: number): Promise<number[]> {
  const started = performance.now();
  const failures: number[] = [];
  let done = 0;
  let lastReport = started;
  const progress = (n: number): void => {
    done += n;
    const now = performance.now();
    if (now - lastReport > 10_000) {
      lastReport = now;
      console.log(
        `${done}/${runs} runs, ${failures.length} failed, ${(done / ((now - started) / 1000)).toFixed(1)} runs/s`,
      );
    }
  };
  if (jobs <= 1) {
    for (let s = first; s < first + runs; s++) {
      const r = runSeed(strategy, s);
      if (!r.ok) {
        failures.push(s);
        for (const line of failureLines(strategy, r)) console.log(line);
      }
      progress(1);
    }
  } else {
    await Promise.all(
      Array.from({ length: jobs }, (_, offset) => {
        const share: Share = { strategy, first, runs, offset, stride: jobs };
        const w = new Worker(new URL(import.meta.url), { workerData: share });
        w.on('message', (m: WorkerReport) => {
          if (m.kind === 'fail') {
            failures.push(m.seed);
            for (const line of m.lines) console.log(line);
          } else progress(m.done);
        });
        return new Promise<void>((resolve, reject) => {
          w.once('error', reject);
          w.once('exit', (code) =>
            code === 0 ? resolve() : reject(new Error(`worker ${offset} exited with ${code}`)),
          );
        });
      }),
    );
  }
  const secs = (performance.now() - started) / 1000;
  console.log(
    `${runs} runs (seeds ${first}..${first + runs - 1}), ${failures.length} failed, ${secs.toFixed(1)} s, ` +
      `${(runs / secs).toFixed(1)} runs/s` +
      (jobs > 1 ? ` on ${jobs} threads` : ''),
  );
  return failures.sort((a, b) => a - b);
}

function main(): void {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        seed: { type: 'string' },
        strategy: { type: 'string', default: 'raft' },
        runs: { type: 'string' },
        verbose: { type: 'boolean', default: false },
        jobs: { type: 'string' },
        'trace-out': { type: 'string' },
      },
      strict: true,
    });
  } catch (err) {
    usage((err as Error).message);
  }
  const { values } = parsed;
  const strategy = values.strategy as string;
  if (!(strategies as readonly string[]).includes(strategy)) {
    usage(`--strategy must be one of ${strategies.join(', ')} (got ${strategy})`);
  }
  const seed = parseIntArg('seed', values.seed, 42);
  const runs = parseIntArg('runs', values.runs, 1);
  if (runs < 1) usage('--runs must be at least 1');
  const jobs = parseIntArg('jobs', values.jobs, 1);
  if (jobs < 1 || jobs > swarmJobsMax) usage(`--jobs must be between 1 and ${swarmJobsMax}`);

  const traceOut = values['trace-out'];
  if (traceOut !== undefined && runs !== 1) usage('--trace-out needs a single run (no --runs)');
  if (runs === 1) {
    let r: AnySwarmResult;
    if (traceOut !== undefined) {
      const traced = traceSwarmRun(strategy as SwarmStrategy, seed);
      r = traced.result;
      writeFileSync(traceOut, traced.text);
    } else r = runSeed(strategy as SwarmStrategy, seed);
    if (values.verbose) {
      console.log(`profile ${JSON.stringify(profileOf(strategy as SwarmStrategy, seed))}`);
      for (const line of r.trace) console.log(line);
      if (r.history) {
        console.log('--- client history');
        for (const op of r.history) console.log(describeRegisterOp(op));
      }
    }
    console.log(`seed ${seed} strategy ${strategy}`);
    console.log(`trace ${r.traceHash}`);
    console.log(`verdicts ${verdictLine(r)}`);
    console.log(`stats ${JSON.stringify(r.stats)}`);
    for (const v of r.violations) console.log(`violation ${v}`);
    if (traceOut !== undefined) console.log(`trace file ${traceOut}`);
    console.log(r.ok ? 'PASS' : `FAIL (replay: ${replayOf(strategy as SwarmStrategy, seed)})`);
    // exitCode, not exit(): stdout to a pipe is asynchronous, and exit() cut verbose output
    // (and the trace line) at about 64 KiB.
    process.exitCode = r.ok ? 0 : 1;
    return;
  }

  void runWindow(strategy as SwarmStrategy, seed, runs, jobs).then(
    (failures) => {
      if (failures.length) console.log(`failing seeds: ${failures.slice(0, 50).join(' ')}`);
      // Let stdout drain before exiting (the job threads would otherwise keep the process alive).
      process.stdout.write('', () => process.exit(failures.length ? 1 : 0));
    },
    (err: unknown) => {
      console.error(err);
      process.exit(2);
    },
  );
}

if (isMainThread) main();
else workerMain(workerData as Share);
