/**
 * Scale: create 100 clusters of 3 nodes (300 worker threads) in one simulator process; report
 * creation time per cluster and the process's total RSS, and check the server keeps serving
 * (a write and a read on a cluster, /healthz latency). Target: under 100 ms per cluster and under
 * 4 GiB RSS. Baseline for the ratio: creating the first cluster in the empty process.
 */
import { readFileSync } from 'node:fs';
import { postJson, startChild, table } from './lib.js';

const clusters = Number(process.env['SCALE_CLUSTERS'] ?? 100);
const sim = await startChild('src/replication/main.js', {}, 'REPLSIM_PORT');
const base = `http://127.0.0.1:${sim.port}`;
const rssMb = () => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${sim.proc.pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};
const rss0 = rssMb();
const times: number[] = [];
const ids: string[] = [];
for (let i = 0; i < clusters; i++) {
  const t0 = performance.now();
  const cl = await postJson(base, '/api/v1/clusters', { strategy: 'single_leader', node_count: 3 });
  times.push(performance.now() - t0);
  if (!cl.id) throw new Error(`cluster ${i} failed: ${JSON.stringify(cl)}`);
  ids.push(cl.id);
}
const rss1 = rssMb();
const mid = ids[Math.floor(ids.length / 2)] as string;
const tw = performance.now();
const w = await postJson(base, `/api/v1/clusters/${mid}/write`, { key: 'alive', value: 'yes' });
const writeMs = performance.now() - tw;
await new Promise((r) => setTimeout(r, 100));
const read = (await (await fetch(`${base}/api/v1/clusters/${mid}/read?key=alive&node_id=n3`)).json()) as { entry?: { key?: string } };
const th = performance.now();
const health = await fetch(`${base}/healthz`);
const healthMs = performance.now() - th;
const sorted = [...times].sort((a, b) => a - b);
const mean = times.reduce((a, b) => a + b, 0) / times.length;
console.log(table([
  { measure: 'clusters created', value: clusters },
  { measure: 'worker threads', value: clusters * 3 },
  { measure: 'first cluster ms (baseline)', value: times[0] as number },
  { measure: 'mean ms per cluster', value: mean },
  { measure: 'p50 ms per cluster', value: sorted[Math.floor(sorted.length / 2)] as number },
  { measure: 'max ms per cluster', value: sorted[sorted.length - 1] as number },
  { measure: 'mean / first', value: mean / (times[0] as number) },
  { measure: 'RSS before (MiB)', value: rss0 },
  { measure: 'RSS with all clusters (MiB)', value: rss1 },
  { measure: 'RSS per cluster (MiB)', value: (rss1 - rss0) / clusters },
  { measure: 'write on cluster #50 ms', value: writeMs },
  { measure: 'read from follower ok', value: String(read?.entry?.key === 'alive' && w?.entry?.key === 'alive') },
  { measure: '/healthz ms', value: healthMs },
  { measure: '/healthz status', value: health.status },
]));
console.log(`\ntarget: mean < 100 ms per cluster (${mean.toFixed(1)}), RSS < 4096 MiB (${rss1.toFixed(0)})`);
const tr = performance.now();
await postJson(base, '/api/v1/simulation/reset', {});
console.log(`reset of ${clusters} clusters: ${(performance.now() - tr).toFixed(0)} ms`);
await sim.stop();
