/**
 * A benchmark peer: keeps a fixed number of msgpack-encoded messages in flight to random peers,
 * answering every message it receives with a new one, in batched frame buffers exactly like a node
 * actor. Used only by benchmarks/fabric-workers.ts (fabric vs bare relay).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { decode, encode, FrameWriter, nodeIndex, readFrames } from '../protocol/actor.js';

const { self, peers, inflight } = workerData as { self: string; peers: string[]; inflight: number };
const port = parentPort!;
const others = peers.filter((p) => p !== self).map(nodeIndex);
let seq = 0;
let received = 0;
let pick = 0;

function sendBatch(n: number): void {
  const w = new FrameWriter();
  for (let i = 0; i < n; i++) {
    const to = others[pick++ % others.length] as number;
    w.add(to, encode({ t: 'ping', from: self, seq: seq++, body: 'x'.repeat(32) }));
  }
  const buf = w.finish();
  port.postMessage({ net: buf }, [buf]);
}

port.on('message', (m: { net?: ArrayBuffer; report?: boolean; start?: boolean }) => {
  if (m.start) sendBatch(inflight);
  if (m.net) {
    const n = readFrames(m.net, (_from, bytes) => {
      decode(bytes);
    });
    received += n;
    sendBatch(n);
  }
  if (m.report) port.postMessage({ received });
});
