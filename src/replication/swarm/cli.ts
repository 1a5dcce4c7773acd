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
 * Installed as `simlab-swarm` (bin/simlab-swarm.mjs). `--json` prints one JSON object per
 * invocation on stdout instead of the text; a window shows progress (seeds/s, ETA) on stderr when
 * it is a TTY or with `--progress`. Exit codes: 0 every seed passed, 1 a seed failed (its replay
 * command is printed), 2 a usage or internal error.
 *
 * `simlab-swarm submit | worker | report` is the distributed mode (BullMQ over Redis, many workers
 * on many machines): distributed/cli.ts, loaded only for those words; `simlab-swarm submit --help`.
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

function usageText(): string {
  return (
    'usage: simlab-swarm --seed N [--strategy S] [--runs K] [--jobs J] [--verbose] [--json] [--progress]\n' +
    `  --strategy S ${strategies.join(' | ')} (default raft)\n` +
    '  --seed N     first (or only) seed, an integer\n' +
    '  --runs K     run seeds N..N+K-1 and report runs/s (default 1: replay seed N)\n' +
    '  --jobs J     with --runs: spread the seeds over J worker threads (default 1)\n' +
    '  --verbose    with one run: print the profile, the trace and the client history\n' +
    '  --trace-out F  with one run: write it to F as a trace file (JSON) the replication page plays\n' +
    '  --json       print one JSON object on stdout (the run, or the window with its failures)\n' +
    `  --progress   with --runs: seeds done, seeds/s and ETA on stderr every ${progressEveryMs / 1000} s\n` +
    '               (on by default when stderr is a terminal)\n' +
    '  --help       this text\n' +
    'exit codes: 0 every seed passed; 1 a seed failed (the command that replays it is printed);\n' +
    '  2 a usage error or an internal error\n' +
    'distributed mode over Redis: simlab-swarm submit | worker | report --redis URL ... (each with --help)\n'
  );
}

function usage(msg: string): never {
  process.stderr.write(`${msg}\n${usageText()}`);
  process.exit(2);
}

/** How often a window reports progress on stderr, ms. */
const progressEveryMs = 2_000;

/** `1h02m`, `3m05s`, `42s`: a duration for the ETA. */
function formatEta(secs: number): string {
  if (!Number.isFinite(secs)) return '?';
  const s = Math.max(0, Math.round(secs));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const pad = (n: number): string => String(n).padStart(2, '0');
  return h > 0 ? `${h}h${pad(m)}m` : m > 0 ? `${m}m${pad(s % 60)}s` : `${s}s`;
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

type WorkerReport =
  | { kind: 'fail'; seed: number; lines: string[]; violations: string[] }
  | { kind: 'progress'; done: number };

function workerMain(share: Share): void {
  const port = parentPort;
  if (!port) return;
  let done = 0;
  for (let s = share.first + share.offset; s < share.first + share.runs; s += share.stride) {
    const r = runSeed(share.strategy, s);
    if (!r.ok) {
      const report: WorkerReport = {
        kind: 'fail',
        seed: s,
        lines: failureLines(share.strategy, r),
        violations: r.violations,
      };
      port.postMessage(report);
    }
    if (++done % 50 === 0) port.postMessage({ kind: 'progress', done: 50 } satisfies WorkerReport);
  }
  port.postMessage({ kind: 'progress', done: done % 50 } satisfies WorkerReport);
}

/** How a window prints: text or one JSON object at the end; progress on stderr or not. */
interface WindowOutput {
  json: boolean;
  progress: boolean;
}

/** A failing seed of a window, as --json reports it. */
interface WindowFailure {
  seed: number;
  violations: string[];
  replay: string;
}

/** Runs a window of seeds over `jobs` threads; resolves to the failing seeds. */
async function runWindow(
  strategy: SwarmStrategy,
  first: number,
  runs: number,
  jobs: number,
  output: WindowOutput = { json: false, progress: false },
): Promise<number[]> {
  const started = performance.now();
  const failures: number[] = [];
  const failed: WindowFailure[] = [];
  const onFail = (seed: number, lines: string[], violations: string[]): void => {
    failures.push(seed);
    failed.push({ seed, violations, replay: replayOf(strategy, seed) });
    if (!output.json) for (const line of lines) console.log(line);
  };
  let done = 0;
  let lastReport = started;
  const tty = process.stderr.isTTY === true;
  const progress = (n: number): void => {
    done += n;
    const now = performance.now();
    if (!output.progress || now - lastReport < progressEveryMs) return;
    lastReport = now;
    const rate = done / ((now - started) / 1000);
    const line =
      `${done}/${runs} seeds, ${failures.length} failed, ${rate.toFixed(1)} seeds/s, ` +
      `ETA ${formatEta((runs - done) / rate)}`;
    process.stderr.write(tty ? `\r\x1b[K${line}` : `${line}\n`);
  };
  if (jobs <= 1) {
    for (let s = first; s < first + runs; s++) {
      const r = runSeed(strategy, s);
      if (!r.ok) onFail(s, failureLines(strategy, r), r.violations);
      progress(1);
    }
  } else {
    await Promise.all(
      Array.from({ length: jobs }, (_, offset) => {
        const share: Share = { strategy, first, runs, offset, stride: jobs };
        const w = new Worker(new URL(import.meta.url), { workerData: share });
        w.on('message', (m: WorkerReport) => {
          if (m.kind === 'fail') onFail(m.seed, m.lines, m.violations);
          else progress(m.done);
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
  if (output.progress && tty) process.stderr.write('\r\x1b[K');
  if (output.json) {
    failed.sort((a, b) => a.seed - b.seed);
    const summary = { strategy, first_seed: first, runs, jobs, failed: failed.length, secs, seeds_per_s: runs / secs };
    console.log(JSON.stringify({ ...summary, ok: failed.length === 0, failures: failed }));
    return failures.sort((a, b) => a - b);
  }
  console.log(
    `${runs} runs (seeds ${first}..${first + runs - 1}), ${failures.length} failed, ${secs.toFixed(1)} s, ` +
      `${(runs / secs).toFixed(1)} runs/s` +
      (jobs > 1 ? ` on ${jobs} threads` : ''),
  );
  return failures.sort((a, b) => a - b);
}

/** `simlab-swarm submit | worker | report ...`: the distributed mode, loaded on demand (BullMQ, ioredis). */
function distributedMain(command: string, argv: string[]): void {
  const io = {
    out: (line: string): void => void process.stdout.write(`${line}\n`),
    err: (line: string): void => void process.stderr.write(`${line}\n`),
  };
  import('./distributed/cli.js')
    .then(async (m) => (m.isDistributedCommand(command) ? m.runDistributedCli(command, argv, io) : 2))
    .then(
      (code) => process.stdout.write('', () => process.exit(code)),
      (err: unknown) => {
        console.error(err);
        process.exit(2);
      },
    );
}

function main(): void {
  const command = process.argv[2];
  if (command === 'submit' || command === 'worker' || command === 'report') {
    distributedMain(command, process.argv.slice(3));
    return;
  }
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
        json: { type: 'boolean', default: false },
        progress: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
    });
  } catch (err) {
    usage((err as Error).message);
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(usageText());
    return;
  }
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
    if (values.json) {
      const o = { seed, strategy, ok: r.ok, trace_hash: r.traceHash, verdicts: r.verdicts, stats: r.stats };
      const replay = r.ok ? {} : { replay: replayOf(strategy as SwarmStrategy, seed) };
      const trace = traceOut === undefined ? {} : { trace_file: traceOut };
      console.log(JSON.stringify({ ...o, violations: r.violations, ...trace, ...replay }));
      process.exitCode = r.ok ? 0 : 1;
      return;
    }
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

  const output = { json: values.json, progress: values.progress || process.stderr.isTTY === true };
  void runWindow(strategy as SwarmStrategy, seed, runs, jobs, output).then(
    (failures) => {
      if (failures.length && !values.json) {
        console.log(`failing seeds: ${failures.slice(0, 50).join(' ')}`);
        console.log(`replay the first: ${replayOf(strategy as SwarmStrategy, failures[0] as number)}`);
      }
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
