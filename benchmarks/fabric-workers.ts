/**
 * Fabric throughput with real node workers: simulated node-to-node messages/s through the fabric
 * (LiveFabricDriver: per-link FIFO, latency, drops, partitions, bounded queues) with 3 and 5
 * worker peers and many messages in flight, against a bare relay measured in the same run
 * (workers post batches of msgpack messages through the main thread, which only regroups them by
 * destination). Target: at least 0.6 of the bare relay, and about 150k messages/s or more.
 */
import { Worker } from 'node:worker_threads';
import { FrameWriter, nodeIdOf, readFrames } from '../protocol/actor.js';
import { Fabric } from '../src/fabric/fabric.js';
import { LiveFabricDriver, type WirePayload } from '../src/fabric/live.js';
import { SeededRng } from '../src/util/rng.js';
import { table } from './lib.js';

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

const rows: Array<Record<string, string | number>> = [];
for (const nodes of [3, 5]) {
  const inflight = 2000;
  // Alternate the two modes and take medians: the machine is noisy.
  const relays: number[] = [];
  const fabrics: number[] = [];
  for (let rep = 0; rep < 3; rep++) {
    relays.push(await run(nodes, 'relay', inflight));
    fabrics.push(await run(nodes, 'fabric', inflight));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1] as number;
  const relay = median(relays);
  const fabric = median(fabrics);
  rows.push({ nodes, 'in flight': inflight * nodes, 'bare relay msg/s': Math.round(relay), 'fabric msg/s': Math.round(fabric), ratio: fabric / relay });
}
console.log(table(rows));
console.log('\ntarget: ratio >= 0.6 and fabric >= ~150k msg/s');
