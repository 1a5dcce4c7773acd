/**
 * Write throughput of this build against another build of simlab in the same run (issue 16: the
 * memory accounting and durable-state hand-off must cost at most 5% of writes/s). BASE_DIR is a
 * built checkout to compare with, e.g. main before the change:
 *   git worktree add /tmp/base <commit> && ln -s "$PWD/node_modules" /tmp/base/node_modules &&
 *   (cd /tmp/base && npx tsc -p tsconfig.json); BASE_DIR=/tmp/base node dist/benchmarks/writes-vs-base.js
 * Both servers run side by side and are measured in alternating 2-second wrk slices (64
 * connections, the http-writes body), so a slow stretch of the shared machine weighs on both.
 * BENCH_SECONDS (default 10) per server and strategy; BENCH_STRATEGIES: name prefixes to run.
 * Besides req/s, it reports CPU time per acknowledged write (from /proc: the whole server process,
 * and its main thread alone, which runs HTTP and the fabric and is the bottleneck): on a machine
 * shared with other work, req/s swings with the neighbours, CPU per write much less.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { distRoot, postJson, runWrk, startChild, staticPostLua, table, wrkAvailable, type Child } from './lib.js';
import { recordResult } from './results.js';

const baseDir = process.env['BASE_DIR'];
if (!baseDir) {
  // Part of `make bench` only when a base build is named: it compares two builds, and there is no
  // second build to compare with by default. Nothing is recorded.
  console.log('writes-vs-base: SKIPPED (set BASE_DIR to a built checkout to compare with; see the file header)');
  process.exit(0);
}
if (!wrkAvailable()) {
  console.error('wrk is not installed (make bench installs it with apt-get)');
  process.exit(2);
}
const seconds = Number(process.env['BENCH_SECONDS'] ?? 10);
const sliceSeconds = 2;
const rounds = Math.max(1, Math.round(seconds / sliceSeconds));
const connections = 64;
const only = process.env['BENCH_STRATEGIES']?.split(',');

const configs: Array<{ name: string; body: Record<string, unknown> }> = [
  {
    name: 'single_leader async, 3 nodes',
    body: { strategy: 'single_leader', node_count: 3, replication_mode: 'async' },
  },
  { name: 'single_leader sync, 3 nodes', body: { strategy: 'single_leader', node_count: 3, replication_mode: 'sync' } },
  {
    name: 'leaderless N3 W2 R2',
    body: { strategy: 'leaderless', node_count: 3, quorum_n: 3, quorum_w: 2, quorum_r: 2 },
  },
  { name: 'multi_leader, 3 nodes', body: { strategy: 'multi_leader', node_count: 3 } },
  { name: 'raft, 3 nodes', body: { strategy: 'raft', node_count: 3 } },
].filter((c) => !only || only.some((o) => c.name.startsWith(o)));

/** CPU seconds (user + system) of a process, or of its main thread only, from /proc. */
function cpuSeconds(pid: number, mainThreadOnly: boolean): number {
  const stat = readFileSync(mainThreadOnly ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat (11 and 12 after the command), in clock ticks (100 Hz).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** BASE_ENV: extra environment (JSON object) for the base server only, to compare a switch within one build. */
const baseEnv = JSON.parse(process.env['BASE_ENV'] ?? '{}') as Record<string, string>;

/** The replication simulator of the build at `root` (a checkout with dist/ built). */
const start = (root: string, extraEnv: Record<string, string> = {}): Promise<Child> =>
  startChild('src/replication/main.js', extraEnv, 'REPLSIM_PORT', path.join(root, 'dist'));

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
const lua = staticPostLua({ key: 'bench', value: 'a-value-of-some-thirty-two-bytes' });
const rows: Array<Record<string, string | number>> = [];
for (const cfg of configs) {
  // Fresh servers per strategy, one of each build; only one is loaded at a time.
  const mine = await start(distRoot.endsWith('dist') ? path.dirname(distRoot) : distRoot);
  const base = await start(baseDir, baseEnv);
  const urls: string[] = [];
  for (const s of [mine, base]) {
    const url = `http://127.0.0.1:${s.port}`;
    const cl = await postJson(url, '/api/v1/clusters', cfg.body);
    urls.push(`${url}/api/v1/clusters/${cl.id}/write`);
  }
  if (cfg.body['strategy'] === 'raft') await new Promise((r) => setTimeout(r, 1500));
  for (const u of urls) runWrk(u, { connections, seconds: 2, lua });
  const got: number[][] = [[], []];
  const p99: number[][] = [[], []];
  const cpu = [
    { all: 0, main: 0, writes: 0 },
    { all: 0, main: 0, writes: 0 },
  ];
  const servers = [mine, base];
  for (let i = 0; i < rounds; i++) {
    // Alternate which goes first so neither always follows the other's garbage.
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    for (const k of order) {
      const pid = (servers[k] as Child).proc.pid as number;
      const [all0, main0] = [cpuSeconds(pid, false), cpuSeconds(pid, true)];
      const r = runWrk(urls[k] as string, { connections, seconds: sliceSeconds, lua });
      const c = cpu[k] as { all: number; main: number; writes: number };
      c.all += cpuSeconds(pid, false) - all0;
      c.main += cpuSeconds(pid, true) - main0;
      c.writes += r.rps * sliceSeconds;
      (got[k] as number[]).push(r.rps);
      (p99[k] as number[]).push(r.p99ms);
    }
  }
  const usPerWrite = (k: number, which: 'all' | 'main'): number =>
    ((cpu[k] as { all: number; main: number; writes: number })[which] / (cpu[k] as { writes: number }).writes) * 1e6;
  const [m, b] = [sum(got[0] as number[]) / rounds, sum(got[1] as number[]) / rounds];
  rows.push({
    target: `${cfg.name}: POST write`,
    'this build req/s': Math.round(m),
    'base req/s': Math.round(b),
    'this / base': (m / b).toFixed(3),
    'CPU us/write this/base': `${usPerWrite(0, 'all').toFixed(1)}/${usPerWrite(1, 'all').toFixed(1)}`,
    'main-thread CPU us/write this/base': `${usPerWrite(0, 'main').toFixed(1)}/${usPerWrite(1, 'main').toFixed(1)}`,
    'CPU ratio (all, main)':
      `${(usPerWrite(0, 'all') / usPerWrite(1, 'all')).toFixed(3)}, ` +
      `${(usPerWrite(0, 'main') / usPerWrite(1, 'main')).toFixed(3)}`,
    'slices this/base': (got[0] as number[])
      .map((x, i) => (x / ((got[1] as number[])[i] as number)).toFixed(2))
      .join(' '),
    'p99 ms this/base (max)': `${Math.max(...(p99[0] as number[]))}/${Math.max(...(p99[1] as number[]))}`,
  });
  const ratios = (got[0] as number[]).map((x, i) => x / ((got[1] as number[])[i] as number));
  const ratio = m / b;
  recordResult({
    benchmark: 'writes-vs-base',
    measure: `${cfg.name}: POST write, this build vs base build`,
    subject: 'this build',
    baseline: `the build at BASE_DIR (${path.basename(baseDir)}), side by side`,
    unit: 'req/s',
    runs: got[0] as number[],
    baselineRuns: got[1] as number[],
    ratio,
    ratioRuns: ratios,
    method:
      `wrk, ${connections} connections, one key, alternating ${sliceSeconds}-s slices of ` +
      `each server (${rounds} each), both servers up throughout; ratio = sum of this build's ` +
      `writes/s over the base's; not timed: server start, cluster creation; CPU per write ` +
      `this/base ${usPerWrite(0, 'all').toFixed(1)}/${usPerWrite(1, 'all').toFixed(1)} us ` +
      `(whole process), ${usPerWrite(0, 'main').toFixed(1)}/${usPerWrite(1, 'main').toFixed(1)} ` +
      'us (main thread)',
    target: { op: '>=', value: 0.95, met: ratio >= 0.95 },
  });
  await mine.stop();
  await base.stop();
}
console.log(table(rows));
