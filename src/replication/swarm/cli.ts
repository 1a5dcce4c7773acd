/**
 * Command line for the seeded swarm: replay one seed exactly (trace hash and verdicts), or run a
 * window of seeds and report runs per second. What `make sim SEED=<n>` and `make sim-long` call.
 * It only parses arguments and prints; the runs themselves are runRaftSwarm's.
 *
 *   node dist/src/replication/swarm/cli.js --seed 42 [--strategy raft] [--verbose]
 *   node dist/src/replication/swarm/cli.js --seed 1 --runs 100000 [--strategy raft]
 */
import { parseArgs } from 'node:util';
import { replayCommand, runRaftSwarm, swarmProfile, type SwarmResult } from './raft-swarm.js';
import { describeRegisterOp } from './register-lincheck.js';

const strategies = ['raft'] as const;
type SwarmStrategy = (typeof strategies)[number];

function usage(msg: string): never {
  process.stderr.write(
    `${msg}\nusage: cli.js --seed N [--strategy raft] [--runs K] [--verbose]\n` +
      '  --seed N     first (or only) seed, an integer\n' +
      '  --runs K     run seeds N..N+K-1 and report runs/s (default 1: replay seed N)\n' +
      '  --verbose    with one run: print the profile, the trace and the client history\n',
  );
  process.exit(2);
}

function parseIntArg(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (!/^-?\d+$/.test(v)) usage(`--${name} must be an integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

function verdictLine(r: SwarmResult): string {
  return Object.entries(r.verdicts)
    .map(([k, v]) => `${k}=${v ? 'ok' : 'FAIL'}`)
    .join(' ');
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
  const run = (seed: number): SwarmResult => {
    switch (strategy as SwarmStrategy) {
      case 'raft':
        return runRaftSwarm(seed);
    }
  };
  const seed = parseIntArg('seed', values.seed, 42);
  const runs = parseIntArg('runs', values.runs, 1);
  if (runs < 1) usage('--runs must be at least 1');

  if (runs === 1) {
    const r = run(seed);
    if (values.verbose) {
      console.log(`profile ${JSON.stringify(swarmProfile(seed))}`);
      for (const line of r.trace) console.log(line);
      console.log('--- client history');
      for (const op of r.history) console.log(describeRegisterOp(op));
    }
    console.log(`seed ${seed} strategy ${strategy}`);
    console.log(`trace ${r.traceHash}`);
    console.log(`verdicts ${verdictLine(r)}`);
    console.log(`stats ${JSON.stringify(r.stats)}`);
    for (const v of r.violations) console.log(`violation ${v}`);
    console.log(r.ok ? 'PASS' : `FAIL (replay: ${replayCommand(seed)})`);
    process.exit(r.ok ? 0 : 1);
  }

  const started = performance.now();
  const failures: number[] = [];
  let lastReport = started;
  for (let s = seed; s < seed + runs; s++) {
    const r = run(s);
    if (!r.ok) {
      failures.push(s);
      console.log(`seed ${s} FAIL ${verdictLine(r)}`);
      for (const v of r.violations) console.log(`  ${v}`);
      console.log(`  replay: ${replayCommand(s)}`);
    }
    const now = performance.now();
    if (now - lastReport > 10_000) {
      lastReport = now;
      const done = s - seed + 1;
      console.log(`${done}/${runs} runs, ${failures.length} failed, ${(done / ((now - started) / 1000)).toFixed(1)} runs/s`);
    }
  }
  const secs = (performance.now() - started) / 1000;
  console.log(
    `${runs} runs (seeds ${seed}..${seed + runs - 1}), ${failures.length} failed, ${secs.toFixed(1)} s, ${(runs / secs).toFixed(1)} runs/s`,
  );
  if (failures.length) console.log(`failing seeds: ${failures.slice(0, 50).join(' ')}`);
  process.exit(failures.length ? 1 : 0);
}

main();
