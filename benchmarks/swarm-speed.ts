/**
 * Swarm speed (issue 20, point 6): seeded swarm seeds per second per core, for each strategy, by
 * CPU time (user + system of one process running seeds back to back in one thread, GC threads
 * included), so neighbours on a shared machine weigh little. With BASE_DIR (a built checkout, as
 * for writes-vs-base.ts) the base build runs the same seeds in the same run, in alternating child
 * processes, and the two builds must give the same runs: the combined trace hash of every seed is
 * compared, and a difference is reported as a failure (an optimisation changed what a seed does).
 *   git worktree add /tmp/swarm-base 3df22bb && ln -s "$PWD/node_modules" /tmp/swarm-base/node_modules &&
 *   (cd /tmp/swarm-base && npx tsc -p tsconfig.json); BASE_DIR=/tmp/swarm-base node dist/benchmarks/swarm-speed.js
 * Two phases per strategy. `long run` (the measure with the target): each child first runs
 * SWARM_SPEED_WARMUP seeds (default 300, untimed), then times seeds 1..N (raft 120, the others 300):
 * the rate of a swarm campaign, which runs 100,000 seeds in a process (make sim-long) or ranges of
 * thousands (simlab-swarm worker). `first seeds` (no target; SWARM_SPEED_FIRST=0 skips it): 20
 * warm-up seeds, then half as many seeds timed: the JIT is still compiling through them (the first 25
 * seeds cost about four times the later ones, and about half a single_leader child's CPU is then
 * off the main thread, compiler and GC helpers), a one-time cost of a process's first second.
 * SWARM_SPEED_ROUNDS (default 3) child runs per build, strategy and phase; SWARM_SPEED_SEEDS scales
 * the timed seeds; SWARM_SPEED_STRATEGIES: names to run.
 * Not a test: nothing here asserts a speed, it records what it measured.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { distRoot, table } from './lib.js';
import { median, recordResult } from './results.js';

const strategies = ['raft', 'single_leader', 'multi_leader', 'leaderless'] as const;
type Strategy = (typeof strategies)[number];

/** Timed seeds per child run of the first-seeds phase at scale 1 (the long run times twice as many). */
const seedsPerRun: Record<Strategy, number> = { raft: 60, single_leader: 150, multi_leader: 150, leaderless: 150 };
/** The two phases: untimed warm-up seeds first in each child (far from the timed ones), and the timed seeds' scale. */
interface Phase {
  name: 'long run' | 'first seeds';
  warmUp: number;
  scale: number;
  /** Whether the >= 2 target applies (a swarm campaign's rate; the first seeds are a one-time cost). */
  target: boolean;
}
const warmUpFirstSeed = 1_000_000;

/** What one child run reports on stdout. */
interface ChildReport {
  strategy: Strategy;
  seeds: number;
  cpuMs: number;
  failed: number;
  /** sha256 over "<seed> <traceHash>\n" of every measured seed: equal runs, equal digest. */
  traces: string;
}

interface SwarmResultLike {
  ok: boolean;
  traceHash: string;
}

/** Child mode: run `count` seeds of `strategy` from the build whose dist/ is `dist`. */
async function child(
  dist: string,
  strategy: Strategy,
  first: number,
  count: number,
  warmUpSeeds: number,
): Promise<void> {
  const load = (file: string): Promise<Record<string, unknown>> =>
    import(pathToFileURL(path.join(dist, 'src/replication/swarm', file)).href) as Promise<Record<string, unknown>>;
  const raft = (await load('raft-swarm.js'))['runRaftSwarm'] as (
    seed: number,
    options?: { snapshotCatchUpEntries?: number },
  ) => SwarmResultLike;
  const kv = (await load('kv-swarm.js'))['runKvSwarm'] as (s: Strategy, seed: number) => SwarmResultLike;
  // Raft under the compaction policy the base builds have ('interval', snapshotCatchUpEntries 0): the seeds'
  // own draw of the policy came later (raft-swarm.ts swarmProfile) and older builds ignore the option.
  const run = (seed: number): SwarmResultLike =>
    strategy === 'raft' ? raft(seed, { snapshotCatchUpEntries: 0 }) : kv(strategy, seed);
  for (let s = warmUpFirstSeed; s < warmUpFirstSeed + warmUpSeeds; s++) run(s);
  const hash = createHash('sha256');
  let failed = 0;
  const before = process.cpuUsage();
  for (let s = first; s < first + count; s++) {
    const r = run(s);
    if (!r.ok) failed++;
    hash.update(`${s} ${r.traceHash}\n`);
  }
  const used = process.cpuUsage(before);
  const report: ChildReport = {
    strategy,
    seeds: count,
    cpuMs: (used.user + used.system) / 1000,
    failed,
    traces: hash.digest('hex'),
  };
  console.log(JSON.stringify(report));
}

function runChild(dist: string, strategy: Strategy, count: number, warmUp: number): ChildReport {
  const self = path.join(distRoot, 'benchmarks', 'swarm-speed.js');
  const args = [self, '--child', dist, strategy, '1', String(count), String(warmUp)];
  const r = spawnSync(process.execPath, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`swarm-speed child (${dist}, ${strategy}) failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string) as ChildReport;
}

async function main(): Promise<void> {
  const baseDir = process.env['BASE_DIR'];
  const rounds = Number(process.env['SWARM_SPEED_ROUNDS'] ?? 3);
  const scale = Number(process.env['SWARM_SPEED_SEEDS'] ?? 1);
  const only = process.env['SWARM_SPEED_STRATEGIES']?.split(',');
  const phases: Phase[] = [
    { name: 'long run', warmUp: Number(process.env['SWARM_SPEED_WARMUP'] ?? 300), scale: 2 * scale, target: true },
  ];
  if (process.env['SWARM_SPEED_FIRST'] !== '0') phases.push({ name: 'first seeds', warmUp: 20, scale, target: false });
  const builds: Array<{ name: string; dist: string }> = [{ name: 'this build', dist: distRoot }];
  if (baseDir) builds.push({ name: 'base', dist: path.join(path.resolve(baseDir), 'dist') });
  const rows: Array<Record<string, string | number>> = [];
  let mismatches = 0;
  for (const phase of phases) {
    for (const strategy of strategies.filter((s) => !only || only.includes(s))) {
      const r = measure(builds, strategy, phase, rounds, baseDir);
      if (!r.sameRuns) mismatches++;
      rows.push(r.row);
    }
  }
  console.log(table(rows));
  if (!baseDir) console.log('(set BASE_DIR to a built checkout to compare with it; see the file header)');
  if (mismatches > 0) {
    console.error(`swarm-speed: ${mismatches} strategies ran different traces on the two builds (not the same runs)`);
    process.exitCode = 1;
  }
}

/** One strategy in one phase: `rounds` child runs per build, recorded; its table row. */
function measure(
  builds: Array<{ name: string; dist: string }>,
  strategy: Strategy,
  phase: Phase,
  rounds: number,
  baseDir: string | undefined,
): { row: Record<string, string | number>; sameRuns: boolean } {
  const count = Math.max(1, Math.round(seedsPerRun[strategy] * phase.scale));
  const rates: number[][] = builds.map(() => []);
  const digests = builds.map(() => new Set<string>());
  let failed = 0;
  for (let round = 0; round < rounds; round++) {
    // Alternate which build goes first, so a slow stretch of the machine weighs on both.
    const order = round % 2 === 0 ? builds.map((_, i) => i) : builds.map((_, i) => builds.length - 1 - i);
    for (const k of order) {
      const rep = runChild((builds[k] as { dist: string }).dist, strategy, count, phase.warmUp);
      (rates[k] as number[]).push(rep.seeds / (rep.cpuMs / 1000));
      (digests[k] as Set<string>).add(rep.traces);
      failed += rep.failed;
    }
  }
  const mine = rates[0] as number[];
  const sameRuns =
    builds.length === 1 || [...(digests[0] as Set<string>)].join() === [...(digests[1] as Set<string>)].join();
  const row: Record<string, string | number> = {
    phase: phase.name,
    strategy,
    seeds: `1..${count}`,
    'this build seeds/s/core': median(mine).toFixed(1),
  };
  // The long run keeps the measure's old name (its target row); the first seeds are named as such.
  const what = phase.target ? `${strategy} swarm` : `${strategy} swarm, first seeds of a process`;
  const method =
    `CPU time (user + system, GC threads included) of one child process running seeds 1..${count} of ` +
    `the ${strategy} swarm back to back in one thread after ${phase.warmUp} warm-up seeds; ${rounds} child ` +
    'runs per build';
  if (baseDir) {
    const base = rates[1] as number[];
    const ratio = median(mine) / median(base);
    row['base seeds/s/core'] = median(base).toFixed(1);
    row['this / base'] = ratio.toFixed(2);
    row['same runs'] = sameRuns ? 'yes' : 'NO';
    recordResult({
      benchmark: 'swarm-speed',
      measure: `${what}: seeds/s per core, this build vs base build`,
      subject: 'this build',
      baseline: `the build at BASE_DIR (${path.basename(baseDir)}), same seeds, alternating child processes`,
      unit: 'seeds/s per core',
      runs: mine,
      baselineRuns: base,
      ratio,
      ratioRuns: mine.map((x, i) => x / ((base[i] as number) || Number.NaN)),
      method:
        `${method}; ratio = median of this build ÷ median of the base; same runs: ` +
        `${sameRuns ? 'yes' : 'NO'} (combined trace hash of every seed)`,
      ...(phase.target ? { target: { op: '>=' as const, value: 2, met: ratio >= 2 } } : {}),
    });
  } else {
    recordResult({
      benchmark: 'swarm-speed',
      measure: `${what}: seeds/s per core`,
      subject: 'this build',
      baseline: 'none (set BASE_DIR to compare with another build)',
      unit: 'seeds/s per core',
      runs: mine,
      method,
    });
  }
  row['failed seeds'] = failed;
  return { row, sameRuns };
}

if (process.argv[2] === '--child') {
  const [dist, strategy, first, count, warmUp] = process.argv.slice(3);
  await child(dist as string, strategy as Strategy, Number(first), Number(count), Number(warmUp ?? 20));
} else {
  await main();
}
