/**
 * End-to-end writes/s over HTTP with 64 concurrent connections (wrk, static body), for every
 * strategy, against a bare uWebSockets.js hello-world measured in the same run, and against
 * single-leader async (the strategies' baseline).
 * Targets: single_leader async 3 nodes >= 0.35 of hello-world with p99 < 10 ms (issue 9);
 * raft 3 nodes >= 0.5 of single-leader async (issue 2); leaderless N3 W2 R2 and multi-leader
 * (3 nodes) >= 0.5 of single-leader async (issue 3).
 */
import { postJson, runWrk, startChild, staticPostLua, table, wrkAvailable } from './lib.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 8);
const connections = 64;
const only = process.env['BENCH_STRATEGIES']?.split(',');

if (!wrkAvailable()) {
  console.error('wrk is not installed (make bench installs it with apt-get)');
  process.exit(2);
}

const hello = await startChild('benchmarks/hello-uws.js', {}, 'HELLO_PORT');
runWrk(`http://127.0.0.1:${hello.port}/`, { connections, seconds: 2 });
const base = runWrk(`http://127.0.0.1:${hello.port}/`, { connections, seconds });
await hello.stop();

const configs: Array<{ name: string; body: Record<string, unknown> }> = [
  { name: 'single_leader async, 3 nodes', body: { strategy: 'single_leader', node_count: 3, replication_mode: 'async' } },
  { name: 'single_leader sync, 3 nodes', body: { strategy: 'single_leader', node_count: 3, replication_mode: 'sync' } },
  { name: 'raft, 3 nodes', body: { strategy: 'raft', node_count: 3 } },
  { name: 'raft, 5 nodes', body: { strategy: 'raft', node_count: 5 } },
  { name: 'leaderless N3 W2 R2', body: { strategy: 'leaderless', node_count: 3, quorum_n: 3, quorum_w: 2, quorum_r: 2 } },
  { name: 'multi_leader, 3 nodes', body: { strategy: 'multi_leader', node_count: 3 } },
].filter((c) => !only || only.some((o) => c.name.startsWith(o)));

const rows: Array<Record<string, string | number>> = [
  { target: 'bare uWS hello-world (GET)', 'req/s': Math.round(base.rps), 'p50 ms': base.p50ms, 'p99 ms': base.p99ms, 'vs hello': 1, 'vs SL async': '', errors: base.errors },
];
let slAsync = NaN;
for (const cfg of configs) {
  // A fresh server per strategy so one's state (log, store) does not slow the next.
  const sim = await startChild('src/replication/main.js', {}, 'REPLSIM_PORT');
  const url = `http://127.0.0.1:${sim.port}`;
  const cl = await postJson(url, '/api/v1/clusters', cfg.body);
  if (cfg.body['strategy'] === 'raft') await new Promise((r) => setTimeout(r, 1500));
  const path = `/api/v1/clusters/${cl.id}/write`;
  const lua = staticPostLua({ key: 'bench', value: 'a-value-of-some-thirty-two-bytes' });
  runWrk(url + path, { connections, seconds: 2, lua });
  const r = runWrk(url + path, { connections, seconds, lua });
  if (cfg.name.startsWith('single_leader async')) slAsync = r.rps;
  rows.push({ target: `${cfg.name}: POST write`, 'req/s': Math.round(r.rps), 'p50 ms': r.p50ms, 'p99 ms': r.p99ms, 'vs hello': r.rps / base.rps, 'vs SL async': r.rps / slAsync, errors: r.errors });
  await sim.stop();
}
console.log(table(rows));
console.log('\ntargets: SL async >= 0.35 x hello with p99 < 10 ms; raft 3 >= 0.5 x SL async; leaderless N3W2R2 and multi_leader >= 0.5 x SL async');
