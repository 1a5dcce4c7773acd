/**
 * End-to-end writes/s over HTTP with 64 concurrent connections (wrk, static body), for every
 * strategy, against a bare uWebSockets.js hello-world measured in the same run, and against
 * single-leader async (the strategies' baseline).
 * Targets: single_leader async 3 nodes >= 0.35 of hello-world with p99 < 10 ms (issue 9);
 * raft 3 nodes >= 0.5 of single-leader async (issue 2); leaderless N3 W2 R2 and multi-leader
 * (3 nodes) >= 0.5 of single-leader async (issue 3).
 * BENCH_SECONDS (default 8): seconds of measured writes (and of hello-world) per target;
 * BENCH_STRATEGIES: comma-separated name prefixes to run only some targets.
 */
import { postJson, runWrk, startChild, staticPostLua, table, wrkAvailable } from './lib.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 8);
const connections = 64;
const only = process.env['BENCH_STRATEGIES']?.split(',');
// The machines are shared and their speed drifts within seconds, so hello-world and the writes are
// measured in alternating 2-second slices (BENCH_SECONDS of each per target) and compared as sums:
// a slow stretch of the machine then weighs on both sides of the ratio alike.
const sliceSeconds = 2;
const rounds = Math.max(1, Math.round(seconds / sliceSeconds));

if (!wrkAvailable()) {
  console.error('wrk is not installed (make bench installs it with apt-get)');
  process.exit(2);
}

const configs: Array<{ name: string; body: Record<string, unknown> }> = [
  { name: 'single_leader async, 3 nodes', body: { strategy: 'single_leader', node_count: 3, replication_mode: 'async' } },
  { name: 'single_leader sync, 3 nodes', body: { strategy: 'single_leader', node_count: 3, replication_mode: 'sync' } },
  { name: 'raft, 3 nodes', body: { strategy: 'raft', node_count: 3 } },
  { name: 'raft, 5 nodes', body: { strategy: 'raft', node_count: 5 } },
  { name: 'leaderless N3 W2 R2', body: { strategy: 'leaderless', node_count: 3, quorum_n: 3, quorum_w: 2, quorum_r: 2 } },
  { name: 'multi_leader, 3 nodes', body: { strategy: 'multi_leader', node_count: 3 } },
].filter((c) => !only || only.some((o) => c.name.startsWith(o)));

const hello = await startChild('benchmarks/hello-uws.js', {}, 'HELLO_PORT');
const helloUrl = `http://127.0.0.1:${hello.port}/`;
runWrk(helloUrl, { connections, seconds: 2 });

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

const rows: Array<Record<string, string | number>> = [];
const helloAll: number[] = [];
let slAsyncRatio = NaN;
for (const cfg of configs) {
  // A fresh server per strategy so one's state (log, store) does not slow the next.
  const sim = await startChild('src/replication/main.js', {}, 'REPLSIM_PORT');
  const url = `http://127.0.0.1:${sim.port}`;
  const cl = await postJson(url, '/api/v1/clusters', cfg.body);
  if (cfg.body['strategy'] === 'raft') await new Promise((r) => setTimeout(r, 1500));
  const path = `/api/v1/clusters/${cl.id}/write`;
  const lua = staticPostLua({ key: 'bench', value: 'a-value-of-some-thirty-two-bytes' });
  runWrk(url + path, { connections, seconds: 2, lua });
  const h: number[] = [];
  const w: Array<ReturnType<typeof runWrk>> = [];
  for (let i = 0; i < rounds; i++) {
    h.push(runWrk(helloUrl, { connections, seconds: sliceSeconds }).rps);
    w.push(runWrk(url + path, { connections, seconds: sliceSeconds, lua }));
  }
  helloAll.push(...h);
  const ratio = sum(w.map((x) => x.rps)) / sum(h);
  if (cfg.name.startsWith('single_leader async')) slAsyncRatio = ratio;
  rows.push({
    target: `${cfg.name}: POST write`,
    'req/s': Math.round(sum(w.map((x) => x.rps)) / rounds),
    'p50 ms': median(w.map((x) => x.p50ms)),
    'p99 ms (median of slices)': median(w.map((x) => x.p99ms)),
    'p99 ms (worst slice)': Math.max(...w.map((x) => x.p99ms)),
    'vs hello': ratio,
    'vs SL async': ratio / slAsyncRatio,
    'slices vs hello': w.map((x, i) => (x.rps / (h[i] as number)).toFixed(2)).join(' '),
    errors: sum(w.map((x) => x.errors)),
  });
  await sim.stop();
}
await hello.stop();
rows.unshift({
  target: 'bare uWS hello-world (GET)', 'req/s': Math.round(sum(helloAll) / Math.max(1, helloAll.length)),
  'p50 ms': '', 'p99 ms (median of slices)': '', 'p99 ms (worst slice)': '', 'vs hello': 1, 'vs SL async': '', 'slices vs hello': '', errors: 0,
});
console.log(table(rows));
console.log(`\n${rounds} alternating ${sliceSeconds}-s slices of hello-world and writes per target; "vs hello" = sum of write rates / sum of hello rates`);
console.log('targets: SL async >= 0.35 x hello with p99 < 10 ms; raft 3 >= 0.5 x SL async; leaderless N3W2R2 and multi_leader >= 0.5 x SL async');
