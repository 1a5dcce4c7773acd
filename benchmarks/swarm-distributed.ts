/**
 * The distributed swarm on this machine: raft seeds/s through `simlab-swarm submit | worker | report`
 * (BullMQ over a private redis-server) with 1, 2 and 3 worker processes on the same seed window,
 * rounds alternating 1, 2, 3 so load drifts hit every row alike. Seeds/s is the report's (first
 * range taken to last seed recorded); the workers' own CPU seconds per seed are shown beside it.
 * Skips with the reason when redis-server cannot be installed (apt-get).
 * Run: npx tsc -p tsconfig.json && node dist/benchmarks/swarm-distributed.js
 * Env: SWARM_DISTRIBUTED_SEEDS (default 1200), SWARM_DISTRIBUTED_ROUNDS (default 2). The window is long
 * enough that each worker's start-up and JIT warm-up are a small part of its share: with 120 seeds in
 * ranges of 10, CPU per seed rose from 15.7 ms (1 worker) to 27 ms (3 workers) and 2 workers were
 * slower than 1, which measured warm-up, not the queue.
 */
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { distRoot, table } from './lib.js';
import { median, recordResult } from './results.js';
import { ensureRedisServer, startLocalRedis } from '../src/replication/swarm/distributed/local-redis.js';

const seeds = Number(process.env['SWARM_DISTRIBUTED_SEEDS'] ?? 1200);
const rounds = Number(process.env['SWARM_DISTRIBUTED_ROUNDS'] ?? 2);
const rangeSeeds = 50;
const workerCounts = [1, 2, 3] as const;
const cli = path.join(distRoot, 'src/replication/swarm/cli.js');
/** A round that has not finished in this long has hung (a bug, not a slow machine), ms. */
const roundMsMax = 600_000;

function runCli(args: string[]): string {
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`simlab-swarm ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** Starts n workers that exit once the queue is empty; resolves to their CPU seconds (from their stop lines). */
async function runWorkers(url: string, queue: string, n: number): Promise<number> {
  const cpu = await Promise.all(
    Array.from({ length: n }, (_, i) => {
      const args = [cli, 'worker', '--redis', url, '--queue', queue, '--exit-when-idle', '--name', `bench-${i}`];
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
      });
      return new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`worker ${i} of ${n} did not finish in ${roundMsMax} ms`));
        }, roundMsMax);
        child.once('exit', (code) => {
          clearTimeout(timer);
          const m = /cpu ([\d.]+) s/.exec(out);
          if (code !== 0 || !m) reject(new Error(`worker ${i} exited ${code}: ${out.slice(-500)}`));
          else resolve(Number(m[1]));
        });
      });
    }),
  );
  return cpu.reduce((a, b) => a + b, 0);
}

async function main(): Promise<void> {
  const bin = ensureRedisServer();
  if (!bin.ok) {
    console.log(`swarm-distributed: SKIPPED, no redis-server (${bin.reason}); nothing recorded`);
    return;
  }
  const redis = await startLocalRedis();
  try {
    const rate: Record<number, number[]> = { 1: [], 2: [], 3: [] };
    const cpuPerSeedMs: Record<number, number[]> = { 1: [], 2: [], 3: [] };
    for (let round = 0; round < rounds; round++) {
      for (const n of workerCounts) {
        const queue = `bench-r${round}-w${n}`;
        runCli([
          'submit',
          '--redis',
          redis.url,
          '--queue',
          queue,
          '--seeds',
          `1..${seeds}`,
          '--range-size',
          String(rangeSeeds),
        ]);
        const cpuSecs = await runWorkers(redis.url, queue, n);
        const rep = JSON.parse(runCli(['report', '--redis', redis.url, '--queue', queue, '--json'])) as {
          seeds_done: number;
          seeds_per_s: number;
          seeds_failed: number;
        };
        if (rep.seeds_done !== seeds)
          throw new Error(`round ${round}, ${n} workers: ${rep.seeds_done}/${seeds} seeds done`);
        if (rep.seeds_failed)
          console.log(`WARNING: ${rep.seeds_failed} seeds failed (simlab-swarm report --queue ${queue})`);
        rate[n]!.push(rep.seeds_per_s);
        cpuPerSeedMs[n]!.push((cpuSecs * 1000) / seeds);
        console.log(`round ${round + 1}/${rounds}: ${n} worker(s) ${rep.seeds_per_s.toFixed(1)} seeds/s`);
      }
    }
    const base = median(rate[1]!);
    console.log(`\ndistributed swarm, raft seeds 1..${seeds} in ranges of ${rangeSeeds}, ${rounds} rounds (medians)`);
    console.log(
      table(
        workerCounts.map((n) => ({
          workers: n,
          'seeds/s': median(rate[n]!).toFixed(1),
          'vs 1 worker': `${(median(rate[n]!) / base).toFixed(2)}x`,
          'worker cpu ms/seed': median(cpuPerSeedMs[n]!).toFixed(1),
        })),
      ),
    );
    for (const n of workerCounts) {
      recordResult({
        benchmark: 'swarm-distributed',
        measure: `distributed swarm seeds/s, ${n} worker${n > 1 ? 's' : ''}`,
        subject: `${n} simlab-swarm worker process${n > 1 ? 'es' : ''}`,
        baseline: '1 worker',
        unit: 'seeds/s',
        runs: rate[n]!,
        baselineRuns: rate[1]!,
        ratio: median(rate[n]!) / base,
        ratioRuns: rate[n]!.map((r, i) => r / (rate[1]![i] ?? base)),
        method:
          `raft seeds 1..${seeds} submitted in ranges of ${rangeSeeds} to a private redis-server (no ` +
          `persistence, loopback), worked by ${n} \`simlab-swarm worker --exit-when-idle\` processes on ` +
          `this machine; seeds/s as \`simlab-swarm report --json\` gives it (first range taken to last ` +
          `seed recorded); ${rounds} rounds alternating 1, 2, 3 workers; ratio = this row ÷ 1 worker ` +
          `in the same round. Worker CPU per seed (median): ${median(cpuPerSeedMs[n]!).toFixed(1)} ms.`,
      });
    }
  } finally {
    await redis.stop();
  }
}

await main();
