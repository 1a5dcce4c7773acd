/**
 * Fabric throughput, node-to-node messages/s through the fabric (LiveFabricDriver: per-link FIFO,
 * latency, drops, partitions, bounded queues) in the front process, two ways in one run:
 * (1) synthetic ping peers (workers/bench-peer.ts: worker threads that only bounce msgpack pings,
 * no replication core), 3 and 5 of them with many messages in flight, against a bare relay
 * (the main thread only regroups batches by destination); target: at least 0.6 of the relay;
 * (2) real simulated nodes: a 3-node single-leader (async) and a 3-node raft cluster built by
 * src/replication/cluster.ts (node actors running the real cores) under a storm of client writes
 * from the front process, against the synthetic peers' fabric rate measured in the same run.
 */
import { Worker } from 'node:worker_threads';
import { FrameWriter, nodeIdOf, readFrames } from '../protocol/actor.js';
import { Fabric } from '../src/fabric/fabric.js';
import { LiveFabricDriver, type WirePayload } from '../src/fabric/live.js';
import { SeededRng } from '../src/util/rng.js';
import { Cluster } from '../src/replication/cluster.js';
import { effectiveConfig } from '../src/replication/config.js';
import { defaultTimings, type ClientReply, type Strategy } from '../src/replication/core.js';
import { table } from './lib.js';
import { median, recordResult } from './results.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 3);
const peerUrl = new URL('../workers/bench-peer.js', import.meta.url);

async function run(nodes: number, mode: 'relay' | 'fabric', inflightPerNode: number): Promise<number> {
  const ids = Array.from({ length: nodes }, (_, i) => `n${i + 1}`);
  const workers = new Map<string, Worker>();
  const post = (to: string, buf: ArrayBuffer) => workers.get(to)?.postMessage({ net: buf }, [buf]);
  let onNet: (from: string, buf: ArrayBuffer) => void;
  if (mode === 'fabric') {
    const fabric = new Fabric<WirePayload>({ rng: new SeededRng(1), linkQueueMax: 1 << 20, inboxMax: 1 << 20 });
    for (const id of ids) fabric.addNode(id);
    const driver = new LiveFabricDriver(fabric, post);
    onNet = (from, buf) => driver.submitFrames(from, buf);
  } else {
    // Bare relay: regroup by destination once per turn, no fabric logic.
    const pending = new Map<string, FrameWriter>();
    let scheduled = false;
    onNet = (from, buf) => {
      const fromIdx = Number(from.slice(1));
      readFrames(buf, (toIdx, bytes) => {
        const to = nodeIdOf(toIdx);
        let w = pending.get(to);
        if (!w) pending.set(to, (w = new FrameWriter()));
        w.add(fromIdx, bytes);
      });
      if (!scheduled) {
        scheduled = true;
        setImmediate(() => {
          scheduled = false;
          for (const [to, w] of pending) if (w.count > 0) post(to, w.finish());
        });
      }
    };
  }
  for (const id of ids) {
    const w = new Worker(peerUrl, { workerData: { self: id, peers: ids, inflight: inflightPerNode } });
    w.on('message', (m: { net?: ArrayBuffer }) => {
      if (m.net) onNet(id, m.net);
    });
    workers.set(id, w);
  }
  await new Promise((r) => setTimeout(r, 300));
  for (const w of workers.values()) w.postMessage({ start: true });
  await new Promise((r) => setTimeout(r, 1000));
  const count = async () => {
    let total = 0;
    for (const w of workers.values()) {
      total += await new Promise<number>((resolve) => {
        const h = (m: { received?: number }) => {
          if (m.received !== undefined) {
            w.off('message', h);
            resolve(m.received);
          }
        };
        w.on('message', h);
        w.postMessage({ report: true });
      });
    }
    return total;
  };
  const c0 = await count();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const c1 = await count();
  const elapsed = (performance.now() - t0) / 1000;
  await Promise.all([...workers.values()].map((w) => w.terminate()));
  return (c1 - c0) / elapsed;
}

/** Client writes kept outstanding against a real cluster (rotating keys, 64-byte values). */
const writesInFlight = 256;
const keysCount = 1000;
const value64 = 'v'.repeat(64);

/** Real node actors: node-to-node messages/s through the cluster's fabric while clients write. */
async function runReal(strategy: Strategy): Promise<{ msgsPerSec: number; writesPerSec: number; failures: number }> {
  const eff = effectiveConfig({ strategy, node_count: 3 });
  if (!eff.ok) throw new Error(eff.error);
  const cluster = new Cluster(eff.config, defaultTimings, { event: () => {}, nodeExit: () => {} });
  try {
    await cluster.start();
    const leaderDeadline = performance.now() + 10_000;
    while (cluster.leaderId === undefined) {
      if (performance.now() > leaderDeadline) throw new Error(`${strategy}: no leader within 10 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
    let running = true;
    let written = 0;
    let failures = 0;
    let n = 0;
    const writeOne = (): void => {
      if (!running) return;
      const target = cluster.leaderId ?? cluster.defaultTarget();
      if (target === undefined) return;
      const key = `k${n++ % keysCount}`;
      cluster.submit(target, { op: 'write', key, value: value64 }, (r: ClientReply) => {
        if (r.ok) written++;
        else failures++;
        setImmediate(writeOne);
      });
    };
    for (let i = 0; i < writesInFlight; i++) writeOne();
    await new Promise((r) => setTimeout(r, 1000)); // warm-up
    const d0 = cluster.fabric.stats().delivered;
    const w0 = written;
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const elapsed = (performance.now() - t0) / 1000;
    const msgs = cluster.fabric.stats().delivered - d0;
    const writes = written - w0;
    running = false;
    return { msgsPerSec: msgs / elapsed, writesPerSec: writes / elapsed, failures };
  } finally {
    await cluster.close();
  }
}

const reps = Math.max(1, Math.floor(Number(process.env['BENCH_REPS'] ?? 3)));
const inflight = 2000;
const rows: Array<Record<string, string | number>> = [];
const syntheticMethod =
  'Messages per second delivered to synthetic ping peers (worker threads that only ' +
  `bounce msgpack pings, no replication core; ${inflight} in flight per peer) over ` +
  `${seconds} s after 1 s of warm-up, through the fabric in the front process vs through ` +
  `a bare relay that only regroups batches by destination; ${reps} alternating run(s) ` +
  'per mode, worker start-up not timed; ratio = fabric ÷ relay.';
const synthetic3: number[] = [];
for (const nodes of [3, 5]) {
  // Alternate the two modes: the machine is noisy.
  const relays: number[] = [];
  const fabrics: number[] = [];
  for (let rep = 0; rep < reps; rep++) {
    relays.push(await run(nodes, 'relay', inflight));
    fabrics.push(await run(nodes, 'fabric', inflight));
  }
  if (nodes === 3) synthetic3.push(...fabrics);
  const ratios = fabrics.map((f, i) => f / (relays[i] as number));
  const ratio = median(ratios);
  rows.push({
    peers: `${nodes} synthetic ping peers`,
    'in flight': inflight * nodes,
    'bare relay msg/s': Math.round(median(relays)),
    'fabric msg/s': Math.round(median(fabrics)),
    ratio,
  });
  recordResult({
    benchmark: 'fabric-workers',
    measure: `${nodes} synthetic ping peers (not simulated nodes)`,
    subject: 'fabric (LiveFabricDriver)',
    baseline: 'bare relay (regroup by destination only)',
    unit: 'msgs/s',
    runs: fabrics,
    baselineRuns: relays,
    ratio,
    ratioRuns: ratios,
    method: syntheticMethod,
    target: { op: '>=', value: 0.6, met: ratio >= 0.6 },
  });
}
console.log(table(rows));
console.log('\ntarget: ratio >= 0.6 (synthetic peers)');

// Real simulated nodes, alternating with a synthetic 3-peer fabric run as the baseline.
const realRows: Array<Record<string, string | number>> = [];
let failed = false;
for (const strategy of ['single_leader', 'raft'] as const) {
  const real: number[] = [];
  const writes: number[] = [];
  const synth: number[] = [];
  let failures = 0;
  for (let rep = 0; rep < reps; rep++) {
    synth.push(await run(3, 'fabric', inflight));
    const r = await runReal(strategy);
    real.push(r.msgsPerSec);
    writes.push(r.writesPerSec);
    failures += r.failures;
  }
  const ratios = real.map((x, i) => x / (synth[i] as number));
  realRows.push({
    nodes: `3 real ${strategy} nodes`,
    'client writes/s': Math.round(median(writes)),
    'fabric msg/s (real)': Math.round(median(real)),
    'fabric msg/s (synthetic, same run)': Math.round(median(synth)),
    ratio: median(ratios),
    'failed writes': failures,
  });
  if (failures > 0) {
    failed = true;
    console.error(`${strategy}: ${failures} client writes failed during the run; nothing recorded for it`);
    continue;
  }
  recordResult({
    benchmark: 'fabric-workers',
    measure: `3 real simulated nodes, ${strategy === 'raft' ? 'raft' : 'single-leader async'}, client write storm`,
    subject: `fabric carrying real ${strategy} node actors`,
    baseline: 'fabric carrying 3 synthetic ping peers',
    unit: 'msgs/s',
    runs: real,
    baselineRuns: synth,
    ratio: median(ratios),
    ratioRuns: ratios,
    method:
      `Node-to-node messages per second delivered by the fabric of a 3-node ${strategy} ` +
      'cluster (src/replication/cluster.ts: node actors in worker threads running the real ' +
      `core) while the front process keeps ${writesInFlight} client writes outstanding ` +
      `(${keysCount} rotating keys, 64-byte values; ` +
      `${Math.round(median(writes)).toLocaleString('en-US')} writes/s median), counted over ` +
      `${seconds} s after 1 s of warm-up, cluster start-up and leader election not timed; ` +
      'alternating with a synthetic 3-peer fabric run; ratio = real ÷ synthetic (how much of ' +
      `the fabric's synthetic rate the real cores drive).`,
  });
}
console.log('\n' + table(realRows));
if (failed) process.exit(1);
