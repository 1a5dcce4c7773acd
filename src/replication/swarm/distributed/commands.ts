/**
 * The distributed swarm's three commands on BullMQ over Redis: `submit` queues a seed window as
 * ranges (jobs), `worker` takes ranges and runs each seed through the same deterministic swarm as
 * `make sim` (raft-swarm.ts, kv-swarm.ts), recording every seed once in store.ts, and `report`
 * reads the counters back. A worker killed mid-range loses its lock; BullMQ's stalled-job check in
 * the other workers puts the range back, and its retry runs only the seeds not recorded yet.
 * Arguments are parsed in cli.ts; these functions take checked options and return exit codes.
 */
import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { distributedPollMs, distributedRangeAttemptsMax, distributedStalledRetriesMax } from '../../limits.js';
import { runKvSwarm } from '../kv-swarm.js';
import { runRaftSwarm } from '../raft-swarm.js';
import {
  cliReplayCommandFor,
  decodeSeedRange,
  queueKeyPrefix,
  splitRanges,
  type DistributedStrategy,
  type SeedRange,
} from './ranges.js';
import { exitOk, exitUsage, reportExitCode, seedsPerSecond, type Report } from './report.js';
import { ResultStore, type StoredFailure } from './store.js';

/** Ranges added to the queue per round trip by submit. */
const submitBatchRanges = 1_000;
/** Wait before a range whose run threw (Redis gone mid-range, say) is tried again, ms. */
const rangeRetryDelayMs = 1_000;
/** Failed (given-up) ranges the report lists. */
const reportFailedRangesMax = 100;
/** Failures the text report prints (--json prints every kept one). */
const reportTextFailuresMax = 20;
/** Connecting to Redis for submit and report: tries before giving up (a usage error, exit 2). */
const connectTriesMax = 3;
const connectTimeoutMs = 3_000;

export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
}

export interface Target {
  redisUrl: string;
  queue: string;
}

/** A seed's outcome as a worker records it. */
interface SeedOutcome {
  ok: boolean;
  violations: string[];
}

/** One seed through the swarm `make sim` runs; a throw is a failing seed (a bug found), not a crashed range. */
export function runSeed(strategy: DistributedStrategy, seed: number): SeedOutcome {
  try {
    const r = strategy === 'raft' ? runRaftSwarm(seed) : runKvSwarm(strategy, seed);
    return { ok: r.ok, violations: r.violations };
  } catch (err) {
    return { ok: false, violations: [`the run threw: ${(err as Error).stack ?? String(err)}`] };
  }
}

/** Connects for a short command; an unreachable server is a value, not a hang. */
async function connect(url: string): Promise<{ ok: true; redis: Redis } | { ok: false; error: string }> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    maxRetriesPerRequest: 1,
    retryStrategy: (times) => (times >= connectTriesMax ? null : 100 * times),
  });
  redis.on('error', () => undefined); // reported through connect()'s rejection
  try {
    await redis.connect();
    await redis.ping();
    return { ok: true, redis };
  } catch (err) {
    redis.disconnect();
    return { ok: false, error: `cannot reach Redis at ${url}: ${(err as Error).message}` };
  }
}

function bullConnection(url: string): { url: string; maxRetriesPerRequest: null } {
  return { url, maxRetriesPerRequest: null };
}

export interface SubmitOptions extends Target {
  strategy: DistributedStrategy;
  first: number;
  last: number;
  rangeSeeds: number;
  json: boolean;
}

/**
 * Runs `body` with the campaign's result store and queue (submit and report), closing both after it;
 * an unreachable Redis is a usage error (exit 2) before anything runs.
 */
async function withCampaign(
  o: { redisUrl: string; queue: string },
  io: Io,
  body: (store: ResultStore, queue: Queue) => Promise<number>,
): Promise<number> {
  const c = await connect(o.redisUrl);
  if (!c.ok) {
    io.err(c.error);
    return exitUsage;
  }
  const store = new ResultStore(c.redis, o.queue);
  const queue = new Queue(o.queue, { connection: bullConnection(o.redisUrl), prefix: queueKeyPrefix });
  queue.on('error', (e) => io.err(`queue: ${e.message}`));
  try {
    return await body(store, queue);
  } finally {
    await queue.close();
    c.redis.disconnect();
  }
}

/** Queues first..last as ranges; ranges whose seeds are all recorded already are not queued again. */
export async function submit(o: SubmitOptions, io: Io): Promise<number> {
  return withCampaign(o, io, async (store, queue) => {
    const ranges = splitRanges(o.strategy, o.first, o.last, o.rangeSeeds);
    let rangesQueued = 0;
    let seedsQueued = 0;
    let seedsNew = 0;
    for (let i = 0; i < ranges.length; i += submitBatchRanges) {
      const batch = ranges.slice(i, i + submitBatchRanges);
      const undone = await store.undoneSeeds(batch);
      const toQueue = batch.filter((_, k) => (undone[k]?.length ?? 0) > 0);
      // Queue first, then mark submitted: a submit cut short is re-run, and queues what it missed.
      await queue.addBulk(
        toQueue.map((r) => ({
          name: `${r.strategy} ${r.first}..${r.last}`,
          data: r,
          opts: {
            attempts: distributedRangeAttemptsMax,
            backoff: { type: 'fixed', delay: rangeRetryDelayMs },
            removeOnComplete: true,
            removeOnFail: false,
          },
        })),
      );
      rangesQueued += toQueue.length;
      seedsQueued += undone.reduce((n, u) => n + u.length, 0);
      seedsNew += await store.markSubmitted(batch);
    }
    const summary = {
      queue: o.queue,
      strategy: o.strategy,
      first_seed: o.first,
      last_seed: o.last,
      ranges_queued: rangesQueued,
      seeds_queued: seedsQueued,
      seeds_new: seedsNew,
    };
    if (o.json) io.out(JSON.stringify(summary));
    else {
      io.out(
        `queued ${rangesQueued} ranges (${seedsQueued} seeds to run) of ${o.strategy} seeds ${o.first}..${o.last} ` +
          `on queue ${o.queue}; ${seedsNew} seeds new to this queue, ` +
          `${o.last - o.first + 1 - seedsQueued} already done`,
      );
    }
    return exitOk;
  });
}

export interface WorkerOptions extends Target {
  lockMs: number;
  stalledCheckMs: number;
  exitWhenIdle: boolean;
  verbose: boolean;
  name: string;
}

/** Jobs of a queue not finished yet (waiting, running, delayed for a retry, ...). */
async function pendingRanges(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
  return Object.values(counts).reduce((n, x) => n + x, 0);
}

/**
 * Runs ranges until SIGINT/SIGTERM (finishing the range in hand) or, with exitWhenIdle, until the
 * queue has nothing waiting or running. Exit 0 when it stopped as asked, 2 when Redis is unreachable.
 */
export async function work(o: WorkerOptions, io: Io): Promise<number> {
  const c = await connect(o.redisUrl);
  if (!c.ok) {
    io.err(c.error);
    return exitUsage;
  }
  c.redis.disconnect();
  // The worker's own client reconnects for ever: a Redis restart must not lose a long campaign.
  const redis = new Redis(o.redisUrl, { maxRetriesPerRequest: null });
  redis.on('error', (e) => io.err(`redis: ${e.message}`));
  const store = new ResultStore(redis, o.queue);
  const cpuAtStart = process.cpuUsage();
  let rangesTaken = 0;
  let seedsRun = 0;

  const processor = async (job: Job): Promise<{ ran: number; skipped: number; failed: number }> => {
    const d = decodeSeedRange(job.data);
    if (!d.ok) throw new UnrecoverableError(d.error);
    const range: SeedRange = d.value;
    await store.markStarted();
    const undone = (await store.undoneSeeds([range]))[0] ?? [];
    const size = range.last - range.first + 1;
    io.out(
      `took ${range.strategy} ${range.first}..${range.last} (start ${job.attemptsStarted}): ` +
        `${undone.length} to run, ${size - undone.length} already done`,
    );
    rangesTaken++;
    let failed = 0;
    let ran = 0;
    for (const seed of undone) {
      // Another worker may hold this range too (ours, if our lock lapsed while the CPU was starved):
      // one GETBIT is cheap next to a seed, and spares running a seed it has recorded meanwhile.
      if (await store.isDone(range.strategy, seed)) continue;
      const r = runSeed(range.strategy, seed);
      ran++;
      seedsRun++;
      // Awaiting Redis between seeds also lets BullMQ's lock-renewal timer run.
      const counted = await store.recordSeed(range.strategy, seed, r.ok, r.violations);
      if (!r.ok) failed++;
      if (o.verbose || !r.ok) {
        io.out(`seed ${seed} ${range.strategy} ${r.ok ? 'ok' : 'FAIL'}${counted ? '' : ' (recorded already)'}`);
      }
    }
    return { ran, skipped: size - ran, failed };
  };

  const worker = new Worker(o.queue, processor, {
    connection: bullConnection(o.redisUrl),
    prefix: queueKeyPrefix,
    concurrency: 1,
    lockDuration: o.lockMs,
    stalledInterval: o.stalledCheckMs,
    maxStalledCount: distributedStalledRetriesMax,
    name: o.name,
  });
  worker.on('error', (e) => io.err(`worker: ${e.message}`));
  worker.on('failed', (job, e) => io.err(`range ${job?.name ?? '?'} failed: ${e.message}`));
  worker.on('completed', (job) => io.out(`done ${job.name}`));
  await worker.waitUntilReady();
  io.out(`worker ${o.name} on queue ${o.queue} (${o.redisUrl})`);

  const stopped = new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (): void => {
      if (stopping) return;
      stopping = true;
      void worker.close().then(resolve, resolve);
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    if (o.exitWhenIdle) {
      const queue = new Queue(o.queue, { connection: bullConnection(o.redisUrl), prefix: queueKeyPrefix });
      queue.on('error', (e) => io.err(`queue: ${e.message}`));
      let idleLooks = 0;
      const look = (): void => {
        pendingRanges(queue).then(
          (n) => {
            // Two looks in a row: a range between "stalled" and "waiting" is not missed.
            idleLooks = n === 0 ? idleLooks + 1 : 0;
            if (idleLooks >= 2) {
              void queue.close();
              stop();
            } else setTimeout(look, distributedPollMs);
          },
          (e: Error) => {
            io.err(`queue: ${e.message}`);
            setTimeout(look, distributedPollMs);
          },
        );
      };
      look();
    }
  });
  await stopped;
  redis.disconnect();
  const cpu = process.cpuUsage(cpuAtStart);
  const cpuSecs = (cpu.user + cpu.system) / 1e6;
  io.out(`worker ${o.name} stopped: ${rangesTaken} ranges taken, ${seedsRun} seeds run, cpu ${cpuSecs.toFixed(2)} s`);
  return exitOk;
}

export interface ReportOptions extends Target {
  json: boolean;
  waitSecs: number | null;
}

export async function report(o: ReportOptions, io: Io): Promise<number> {
  return withCampaign(o, io, async (store, queue) => {
    let pending = await pendingRanges(queue);
    if (o.waitSecs !== null) {
      const deadline = Date.now() + o.waitSecs * 1000;
      while (pending > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, distributedPollMs));
        pending = await pendingRanges(queue);
      }
    }
    const [counters, failures, failedJobs] = await Promise.all([
      store.counters(),
      store.failures(),
      queue.getFailed(0, reportFailedRangesMax - 1),
    ]);
    // A range given up counts until its seeds are all recorded (a later submit of the same seeds
    // queues them again); a payload that does not decode is listed as it is.
    const given = failedJobs.map((j) => ({ job: j, range: decodeSeedRange(j.data) }));
    const decoded = given.flatMap((g) => (g.range.ok ? [g.range.value] : []));
    const undone = await store.undoneSeeds(decoded);
    const stillOpen = new Set(decoded.filter((_, i) => (undone[i]?.length ?? 0) > 0));
    const rangesFailed = given
      .filter((g) => !g.range.ok || stillOpen.has(g.range.value))
      .map((g) => {
        const r = g.range.ok ? g.range.value : { strategy: '?', first: -1, last: -1 };
        return { strategy: r.strategy, first: r.first, last: r.last, reason: g.job.failedReason };
      });
    const rep: Report = {
      seeds_total: counters.seedsTotal,
      seeds_done: counters.seedsDone,
      seeds_per_s: seedsPerSecond(counters.seedsDone, counters.startedMs, counters.lastDoneMs, counters.nowMs, pending),
      failures: failures.map((f: StoredFailure) => ({ seed: f.seed, strategy: f.strategy, replay: f.replay })),
      queue: o.queue,
      seeds_failed: counters.seedsFailed,
      ranges_pending: pending,
      ranges_failed: rangesFailed,
    };
    if (o.json) io.out(JSON.stringify(rep));
    else printReport(rep, failures, io);
    return reportExitCode(rep);
  });
}

function printReport(rep: Report, failures: StoredFailure[], io: Io): void {
  if (rep.seeds_total === 0) {
    io.out(`queue ${rep.queue}: nothing submitted`);
    return;
  }
  io.out(
    `queue ${rep.queue}: ${rep.seeds_done}/${rep.seeds_total} seeds done, ${rep.seeds_failed} failed, ` +
      `${rep.seeds_per_s.toFixed(1)} seeds/s; ${rep.ranges_pending} ranges pending, ` +
      `${rep.ranges_failed.length} given up`,
  );
  for (const r of rep.ranges_failed) {
    io.out(`range ${r.strategy} ${r.first}..${r.last} given up: ${r.reason}`);
    io.out(
      `  resubmit: simlab-swarm submit --redis URL --queue ${rep.queue} --strategy ${r.strategy} ` +
        `--seeds ${r.first}..${r.last}`,
    );
  }
  for (const f of failures.slice(0, reportTextFailuresMax)) {
    io.out(`seed ${f.seed} ${f.strategy} FAIL`);
    for (const v of f.violations.slice(0, 3)) io.out(`  ${v.split('\n')[0]}`);
    io.out(`  replay: ${f.replay}   (or: ${cliReplayCommandFor(f.strategy, f.seed)})`);
  }
  if (failures.length > reportTextFailuresMax) {
    io.out(`... ${failures.length - reportTextFailuresMax} more failing seeds (report --json lists them all)`);
  }
  if (rep.seeds_failed > failures.length) {
    io.out(`(${rep.seeds_failed - failures.length} failing seeds counted past the kept ${failures.length})`);
  }
}
