/**
 * The distributed swarm (issue 20 point 5): `simlab-swarm submit | worker | report` on BullMQ over a
 * real redis-server (installed on first use, private, on a free loopback port). Three worker
 * processes share a seed window; one is killed with SIGKILL in the middle of a range; every seed
 * must still end up recorded exactly once, the killed range retried from its first undone seed, and
 * the report's JSON keeps its shape. The pure pieces (seed windows, ranges, bitmaps, exit codes) are
 * table-driven; argument errors are checked in-process, as they fail before touching Redis.
 */
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { repoRoot } from '../helpers/server.js';
import { startTestRedis } from '../helpers/redis.js';
import { runDistributedCli } from '../../src/replication/swarm/distributed/cli.js';
import { reportExitCode, seedsPerSecond } from '../../src/replication/swarm/distributed/report.js';
import {
  bitmapChunkSeeds,
  clearSeeds,
  decodeSeedRange,
  parseSeedWindow,
  queueKeyPrefix,
  replayCommandFor,
  splitRanges,
} from '../../src/replication/swarm/distributed/ranges.js';
import { ResultStore } from '../../src/replication/swarm/distributed/store.js';
import { distributedRangeSeedsMax, distributedSeedsPerSubmitMax } from '../../src/replication/limits.js';

const bin = path.join(repoRoot, 'bin/simlab-swarm.mjs');
/** The window the three workers share: small, so the file stays a few seconds of CPU. */
const firstSeed = 1;
const lastSeed = 40;
const rangeSeeds = 8;
/** Short lock and stalled check so the killed worker's range comes back within seconds. */
const lockMs = 3_000;
const stalledCheckMs = 500;
const workersExitMsMax = 45_000;

function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_OPTIONS; // tap's hooks are for the test process only: the bin runs the build
  return env;
}

function runBin(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { env: childEnv(), encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

interface RunningWorker {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startWorker(url: string, name: string, queue = 'swarm'): RunningWorker {
  const args = [bin, 'worker', '--redis', url, '--queue', queue, '--exit-when-idle', '--verbose', '--name', name];
  args.push('--lock-ms', String(lockMs), '--stalled-check-ms', String(stalledCheckMs));
  const child = spawn(process.execPath, args, { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => out, exited };
}

t.test('seed windows parse, with the per-submit cap at and past its limit', async (t) => {
  const cases: Array<{ name: string; text: string; want: { first: number; last: number } | null }> = [
    { name: 'a window', text: '1..1000000', want: { first: 1, last: 1_000_000 } },
    { name: 'one seed as a window', text: '7..7', want: { first: 7, last: 7 } },
    { name: 'one seed alone', text: '42', want: { first: 42, last: 42 } },
    { name: 'seed 0', text: '0..3', want: { first: 0, last: 3 } },
    {
      name: 'a window at the cap',
      text: `1..${distributedSeedsPerSubmitMax}`,
      want: { first: 1, last: distributedSeedsPerSubmitMax },
    },
    { name: 'a window one past the cap', text: `1..${distributedSeedsPerSubmitMax + 1}`, want: null },
    { name: 'a reversed window', text: '10..1', want: null },
    { name: 'a negative seed', text: '-5..5', want: null },
    { name: 'not a number', text: 'a..b', want: null },
    { name: 'three dots', text: '1...5', want: null },
    { name: 'past the highest seed', text: `${Number.MAX_SAFE_INTEGER}..${Number.MAX_SAFE_INTEGER + 2}`, want: null },
  ];
  for (const c of cases) {
    const r = parseSeedWindow(c.text);
    if (c.want) t.same(r, { ok: true, value: c.want }, c.name);
    else t.equal(r.ok, false, `${c.name} is refused`);
  }
});

t.test('a window splits into ranges that cover it once and never cross a bitmap chunk', async (t) => {
  const cases = [
    { name: 'even split', first: 1, last: 40, size: 8, ranges: 5 },
    { name: 'a short last range', first: 1, last: 41, size: 8, ranges: 6 },
    { name: 'one seed', first: 5, last: 5, size: 100, ranges: 1 },
    { name: 'across a chunk boundary', first: bitmapChunkSeeds - 3, last: bitmapChunkSeeds + 2, size: 100, ranges: 2 },
  ];
  for (const c of cases) {
    const ranges = splitRanges('raft', c.first, c.last, c.size);
    t.equal(ranges.length, c.ranges, `${c.name}: ${c.ranges} ranges`);
    let next = c.first;
    for (const r of ranges) {
      t.equal(r.first, next, `${c.name}: range starts where the previous ended`);
      t.ok(r.last - r.first + 1 <= c.size, `${c.name}: at most ${c.size} seeds`);
      t.equal(Math.floor(r.first / bitmapChunkSeeds), Math.floor(r.last / bitmapChunkSeeds), `${c.name}: one chunk`);
      t.ok(decodeSeedRange(r).ok, `${c.name}: a range decodes as a job payload`);
      next = r.last + 1;
    }
    t.equal(next, c.last + 1, `${c.name}: the ranges end at the window's end`);
  }
});

t.test('job payloads are decoded at the edge; malformed ones are refused with the reason', async (t) => {
  const cases: Array<{ name: string; data: unknown; ok: boolean }> = [
    { name: 'a range', data: { strategy: 'leaderless', first: 1, last: 8 }, ok: true },
    {
      name: 'a range at the largest size',
      data: { strategy: 'raft', first: 0, last: distributedRangeSeedsMax - 1 },
      ok: true,
    },
    {
      name: 'a range one past the largest size',
      data: { strategy: 'raft', first: 0, last: distributedRangeSeedsMax },
      ok: false,
    },
    { name: 'an unknown strategy', data: { strategy: 'paxos', first: 1, last: 2 }, ok: false },
    { name: 'a reversed range', data: { strategy: 'raft', first: 5, last: 2 }, ok: false },
    { name: 'a fractional seed', data: { strategy: 'raft', first: 1.5, last: 2 }, ok: false },
    { name: 'a string seed', data: { strategy: 'raft', first: '1', last: 2 }, ok: false },
    { name: 'null', data: null, ok: false },
  ];
  for (const c of cases) {
    const r = decodeSeedRange(c.data);
    t.equal(r.ok, c.ok, c.name);
    if (!r.ok) t.match(r.error, /^job data: /, `${c.name}: says why`);
  }
});

t.test(
  'clear bits of a bitmap read back as the undone seeds (Redis numbers bits from the top of byte 0)',
  async (t) => {
    const range = { strategy: 'raft' as const, first: 8, last: 19 };
    // Bytes 1..2 of the chunk: bit 8 (seed 8) and bit 17 (seed 17) set.
    const bits = Uint8Array.from([0b1000_0000, 0b0100_0000]);
    t.same(clearSeeds(range, bits, 1), [9, 10, 11, 12, 13, 14, 15, 16, 18, 19]);
    t.same(clearSeeds(range, new Uint8Array(0), 1).length, 12, 'a missing key: every seed undone');
  },
);

t.test('seeds/s and the report exit code', async (t) => {
  t.equal(seedsPerSecond(0, null, null, 10_000, 3), 0, 'nothing started: 0');
  t.equal(seedsPerSecond(100, 1_000, 3_000, 9_000, 0), 50, 'finished: up to the last seed recorded');
  t.equal(seedsPerSecond(100, 1_000, 3_000, 5_000, 2), 25, 'still running: up to now');
  const base = { seeds_total: 10, seeds_done: 10, seeds_failed: 0, ranges_failed: [] };
  const cases = [
    { name: 'all done, none failed', r: base, code: 0 },
    { name: 'a seed failed', r: { ...base, seeds_failed: 1 }, code: 1 },
    { name: 'a seed failed while others are pending', r: { ...base, seeds_done: 5, seeds_failed: 1 }, code: 1 },
    { name: 'seeds pending', r: { ...base, seeds_done: 9 }, code: 3 },
    {
      name: 'a range given up',
      r: { ...base, ranges_failed: [{ strategy: 'raft', first: 1, last: 2, reason: 'x' }] },
      code: 3,
    },
  ];
  for (const c of cases) t.equal(reportExitCode(c.r), c.code, c.name);
});

t.test('argument errors exit 2 with the reason and the usage, before any connection', async (t) => {
  const cases: Array<{ name: string; command: 'submit' | 'worker' | 'report'; argv: string[]; why: RegExp }> = [
    { name: 'submit without --redis', command: 'submit', argv: ['--seeds', '1..2'], why: /--redis URL is required/ },
    { name: 'submit without --seeds', command: 'submit', argv: ['--redis', 'redis://127.0.0.1:1'], why: /--seeds/ },
    {
      name: 'an unknown strategy',
      command: 'submit',
      argv: ['--redis', 'redis://127.0.0.1:1', '--seeds', '1..2', '--strategy', 'paxos'],
      why: /--strategy must be one of raft, single_leader, multi_leader, leaderless/,
    },
    {
      name: 'a range size past the largest',
      command: 'submit',
      argv: ['--redis', 'redis://127.0.0.1:1', '--seeds', '1..2', '--range-size', String(distributedRangeSeedsMax + 1)],
      why: /--range-size must be between 1 and/,
    },
    { name: 'not a redis URL', command: 'report', argv: ['--redis', 'http://x'], why: /redis:\/\/ or rediss:\/\// },
    {
      name: 'a queue name with a colon',
      command: 'report',
      argv: ['--redis', 'redis://h', '--queue', 'a:b'],
      why: /--queue/,
    },
    {
      name: 'a flag of another subcommand',
      command: 'report',
      argv: ['--redis', 'redis://h', '--seeds', '1'],
      why: /not an option of report/,
    },
    { name: 'an unknown flag', command: 'worker', argv: ['--redis', 'redis://h', '--bogus'], why: /Unknown option/ },
    {
      name: 'a lock shorter than the least',
      command: 'worker',
      argv: ['--redis', 'redis://h', '--lock-ms', '10'],
      why: /--lock-ms/,
    },
  ];
  for (const c of cases) {
    const err: string[] = [];
    const code = await runDistributedCli(c.command, c.argv, { out: () => undefined, err: (l) => err.push(l) });
    t.equal(code, 2, `${c.name}: exit 2`);
    t.match(err.join('\n'), c.why, `${c.name}: says why`);
    t.match(err.join('\n'), /exit codes: 0 /, `${c.name}: prints the usage`);
  }
  const out: string[] = [];
  t.equal(
    await runDistributedCli('worker', ['--help'], { out: (l) => out.push(l), err: () => undefined }),
    0,
    '--help exits 0',
  );
  t.match(out.join('\n'), /simlab-swarm submit --redis URL --seeds A\.\.B/, '--help shows the three commands');
});

t.test('an unreachable Redis is exit 2 with the address, not a hang', async (t) => {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const r = runBin(['report', '--redis', `redis://127.0.0.1:${port}`]);
  t.equal(r.status, 2, 'exit 2');
  t.match(r.stderr, new RegExp(`cannot reach Redis at redis://127\\.0\\.0\\.1:${port}`), 'names the address');
});

t.test('with a real redis-server', async (t) => {
  const server = await startTestRedis(t);
  const redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  t.teardown(() => redis.disconnect());

  await t.test('three workers, one killed mid-range: every seed recorded exactly once', async (t) => {
    const sub = runBin([
      'submit',
      '--redis',
      server.url,
      '--seeds',
      `${firstSeed}..${lastSeed}`,
      '--range-size',
      String(rangeSeeds),
      '--json',
    ]);
    t.equal(sub.status, 0, `submit exits 0 (${sub.stderr})`);
    const queued = JSON.parse(sub.stdout) as Record<string, number>;
    const windowSeeds = lastSeed - firstSeed + 1;
    t.equal(queued.ranges_queued, Math.ceil(windowSeeds / rangeSeeds), 'one job per range');
    t.equal(queued.seeds_new, windowSeeds, 'every seed is new to the queue');

    const workers = [0, 1, 2].map((i) => startWorker(server.url, `w${i}`));
    t.teardown(() => {
      for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    });
    // Kill the first worker to record a seed at the start of a range (its next seeds still to run).
    const killed = await new Promise<{ index: number; range: string; seed: number }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no worker recorded a seed in time')), workersExitMsMax);
      const look = (): void => {
        for (const [index, w] of workers.entries()) {
          const m = /took raft (\d+)\.\.(\d+) [^\n]*\nseed (\d+) raft ok/.exec(w.output());
          if (m && Number(m[3]) < Number(m[2])) {
            w.child.kill('SIGKILL');
            clearTimeout(timer);
            resolve({ index, range: `${m[1]}..${m[2]}`, seed: Number(m[3]) });
            return;
          }
        }
        setTimeout(look, 5);
      };
      look();
    });
    t.equal(
      (await workers[killed.index]!.exited).signal,
      'SIGKILL',
      `worker ${killed.index} killed in range ${killed.range}`,
    );
    const survivors = workers.filter((_, i) => i !== killed.index);
    const exits = await Promise.race([
      Promise.all(survivors.map((w) => w.exited)),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), workersExitMsMax)),
    ]);
    t.ok(exits, 'the other two workers finish the queue and exit on their own');
    for (const [i, e] of (exits ?? []).entries()) t.equal(e.code, 0, `surviving worker ${i} exits 0`);
    const logs = survivors.map((w) => w.output()).join('\n');
    const retaken = new RegExp(
      `took raft ${killed.range.replace('..', '\\.\\.')} [^:]*: (\\d+) to run, (\\d+) already done`,
    ).exec(logs);
    t.ok(retaken, `the killed range ${killed.range} is taken again by another worker`);
    t.ok(Number(retaken?.[2]) >= 1, 'the retry skips the seeds the killed worker had recorded');
    // A seed may run twice (the killed range's retry, or a worker so starved of CPU that its lock
    // lapsed and another took its range), but only one run may count it: the others print
    // "(recorded already)". The killed worker may die between recording and printing, hence <= 1.
    const allLogs = workers.map((w) => w.output()).join('\n');
    const countedTwice: number[] = [];
    for (let s = firstSeed; s <= lastSeed; s++) {
      const counted = allLogs.match(new RegExp(`^seed ${s} raft (ok|FAIL)$`, 'gm'))?.length ?? 0;
      if (counted > 1) countedTwice.push(s);
    }
    t.same(countedTwice, [], 'no seed is counted by two runs');

    const store = new ResultStore(redis, 'swarm');
    const missing: number[] = [];
    for (let s = firstSeed; s <= lastSeed; s++) if (!(await store.isDone('raft', s))) missing.push(s);
    t.same(missing, [], 'every seed of the window is recorded');
    t.notOk(await store.isDone('raft', lastSeed + 1), 'a seed outside the window is not recorded');
    t.notOk(await store.isDone('raft', firstSeed - 1), 'nor the one before it');
    const counters = await store.counters();
    t.equal(counters.seedsDone, windowSeeds, 'seeds_done counts each seed once, the retried range included');

    const rep = runBin(['report', '--redis', server.url, '--json']);
    const json = JSON.parse(rep.stdout) as Record<string, unknown>;
    t.equal(rep.status, json.seeds_failed === 0 ? 0 : 1, 'report exits 0 when every seed passed, 1 when one failed');
    t.equal(json.seeds_total, windowSeeds, 'seeds_total');
    t.equal(json.seeds_done, windowSeeds, 'seeds_done');
    t.ok(typeof json.seeds_per_s === 'number' && (json.seeds_per_s as number) > 0, 'seeds_per_s is a positive number');
    t.ok(Array.isArray(json.failures), 'failures is a list');
    for (const f of json.failures as Array<Record<string, unknown>>) {
      t.same(Object.keys(f).sort(), ['replay', 'seed', 'strategy'], 'a failure is {seed, strategy, replay}');
      t.equal(f.replay, replayCommandFor('raft', f.seed as number), 'with the command that replays it');
    }
    t.equal(json.ranges_pending, 0, 'nothing pending');
    t.same(json.ranges_failed, [], 'no range given up');

    const again = runBin(['submit', '--redis', server.url, '--seeds', `${firstSeed}..${lastSeed}`, '--json']);
    const second = JSON.parse(again.stdout) as Record<string, number>;
    t.same(
      [second.ranges_queued, second.seeds_new],
      [0, 0],
      'submitting the window again queues nothing and adds nothing',
    );
  });

  await t.test('a failing seed is recorded once and reported with its replay command (exit 1)', async (t) => {
    const queue = 'failing';
    const store = new ResultStore(redis, queue);
    t.equal(await store.markSubmitted([{ strategy: 'leaderless', first: 7, last: 8 }]), 2, 'two seeds submitted');
    t.equal(await store.recordSeed('leaderless', 7, false, ['convergence: replicas differ']), true, 'recorded');
    t.equal(
      await store.recordSeed('leaderless', 7, false, ['convergence: replicas differ']),
      false,
      'a second record of the same seed does not count',
    );
    t.equal(await store.recordSeed('leaderless', 8, true, []), true);
    const counters = await store.counters();
    t.same([counters.seedsTotal, counters.seedsDone, counters.seedsFailed], [2, 2, 1], 'counted once each');

    const rep = runBin(['report', '--redis', server.url, '--queue', queue, '--json']);
    t.equal(rep.status, 1, 'exit 1: a seed failed');
    const json = JSON.parse(rep.stdout) as Record<string, unknown>;
    t.same(json.failures, [{ seed: 7, strategy: 'leaderless', replay: 'make sim STRATEGY=leaderless SEED=7' }]);
    t.same([json.seeds_total, json.seeds_done, json.seeds_failed], [2, 2, 1]);
    const text = runBin(['report', '--redis', server.url, '--queue', queue]);
    t.equal(text.status, 1);
    t.match(
      text.stdout,
      new RegExp(
        'seed 7 leaderless FAIL\n {2}convergence: replicas differ\n' +
          ' {2}replay: make sim STRATEGY=leaderless SEED=7 {3}' +
          '\\(or: simlab-swarm --seed 7 --strategy leaderless --verbose\\)',
      ),
    );
  });

  await t.test('a window with no worker yet, then a range given up, report incomplete (exit 3)', async (t) => {
    const sub = runBin([
      'submit',
      '--redis',
      server.url,
      '--queue',
      'idle',
      '--seeds',
      '1..3',
      '--strategy',
      'single_leader',
    ]);
    t.equal(sub.status, 0);
    t.match(sub.stdout, /queued 1 ranges \(3 seeds to run\) of single_leader seeds 1\.\.3 on queue idle/);
    const rep = runBin(['report', '--redis', server.url, '--queue', 'idle', '--json']);
    t.equal(rep.status, 3, 'exit 3');
    const json = JSON.parse(rep.stdout) as Record<string, unknown>;
    t.same([json.seeds_total, json.seeds_done, json.seeds_per_s, json.ranges_pending], [3, 0, 0, 1]);

    // A job whose payload does not decode (written by something else) is given up at once, with the
    // reason; the worker goes on with the good range, and the report still says incomplete.
    const queue = new Queue('idle', { connection: { url: server.url }, prefix: queueKeyPrefix });
    await queue.add('bogus', { strategy: 'paxos', first: 1, last: 2 });
    await queue.close();
    const w = startWorker(server.url, 'w-idle', 'idle');
    const exit = await w.exited;
    t.equal(exit.code, 0, 'the worker empties the queue and exits 0');
    const after = runBin(['report', '--redis', server.url, '--queue', 'idle', '--json']);
    t.equal(after.status, 3, 'exit 3: a range was given up');
    const given = JSON.parse(after.stdout) as Record<string, unknown>;
    t.same([given.seeds_total, given.seeds_done, given.ranges_pending], [3, 3, 0], 'the good range ran');
    t.match(
      given.ranges_failed,
      [{ strategy: '?', reason: /unknown strategy "paxos"/ }],
      'the bad one is listed with why',
    );
  });
});
