/**
 * End-to-end writes/s over HTTP to a 3-node async single-leader cluster with 64 concurrent
 * connections (wrk), against a bare uWebSockets.js hello-world measured in the same run.
 * Target: at least 0.35 of the hello-world rate, with p99 under 10 ms at that load.
 */
import { postJson, runWrk, startChild, table, wrkAvailable, writeLua } from './lib.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 10);
const connections = 64;

if (!wrkAvailable()) {
  console.error('wrk is not installed (make bench installs it with apt-get)');
  process.exit(2);
}

const hello = await startChild('benchmarks/hello-uws.js', {}, 'HELLO_PORT');
runWrk(`http://127.0.0.1:${hello.port}/`, { connections, seconds: 2 });
const base = runWrk(`http://127.0.0.1:${hello.port}/`, { connections, seconds });
await hello.stop();

const sim = await startChild('src/replication/main.js', {}, 'REPLSIM_PORT');
const url = `http://127.0.0.1:${sim.port}`;
const rows: Array<Record<string, string | number>> = [
  { target: 'bare uWS hello-world', 'req/s': Math.round(base.rps), 'p50 ms': base.p50ms, 'p99 ms': base.p99ms, ratio: 1, errors: base.errors },
];
for (const mode of ['async'] as const) {
  const cl = await postJson(url, '/api/v1/clusters', { strategy: 'single_leader', node_count: 3, replication_mode: mode });
  const path = `/api/v1/clusters/${cl.id}/write`;
  runWrk(url + path, { connections, seconds: 2, lua: writeLua(path) });
  const r = runWrk(url + path, { connections, seconds, lua: writeLua(path) });
  rows.push({ target: `single_leader ${mode}, 3 nodes: POST write`, 'req/s': Math.round(r.rps), 'p50 ms': r.p50ms, 'p99 ms': r.p99ms, ratio: r.rps / base.rps, errors: r.errors });
}
await sim.stop();
console.log(table(rows));
const ratio = Number(rows[1]?.['ratio']);
const p99 = Number(rows[1]?.['p99 ms']);
console.log(`\nwrites/s ratio to hello-world: ${ratio.toFixed(2)} (target >= 0.35); p99 ${p99.toFixed(2)} ms (target < 10 ms)`);
