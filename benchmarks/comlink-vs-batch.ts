/**
 * Why client writes do not use comlink: requests/s to one worker with 64 concurrent callers, as a
 * comlink call per request versus the hot path's transport (requests queued per event-loop turn
 * and posted as one msgpack batch, replies batched back). Both in the same run.
 */
import { MessageChannel, Worker } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { decode, encodeTransferable } from '../protocol/actor.js';
import { table } from './lib.js';
import { median, recordResult } from './results.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 3);
const concurrency = 64;
const { port1, port2 } = new MessageChannel();
const worker = new Worker(new URL('../workers/bench-echo.js', import.meta.url), {
  workerData: { control: port2 },
  transferList: [port2],
});
const remote = Comlink.wrap<{ write(key: string, value: string): { ok: boolean } }>(nodeEndpoint(port1));
await remote.write('warm', 'up');

async function drive(call: () => Promise<unknown>): Promise<number> {
  let done = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await call();
        done++;
      }
    }),
  );
  return done / seconds;
}

// Batched transport, as NodeHandle does it.
let nextId = 1;
const pending = new Map<number, (v: unknown) => void>();
let queue: Array<{ id: number; key: string; value: string }> = [];
let scheduled = false;
worker.on('message', (m: { out?: ArrayBuffer }) => {
  if (!m.out) return;
  for (const r of decode<Array<{ id: number }>>(new Uint8Array(m.out))) {
    pending.get(r.id)?.(r);
    pending.delete(r.id);
  }
});
const batched = (key: string, value: string) =>
  new Promise((resolve) => {
    const id = nextId++;
    pending.set(id, resolve);
    queue.push({ id, key, value });
    if (!scheduled) {
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        const req = encodeTransferable(queue);
        queue = [];
        worker.postMessage({ req }, [req]);
      });
    }
  });

const reps = Math.max(1, Math.floor(Number(process.env['BENCH_REPS'] ?? 3)));
const comlinkRuns: number[] = [];
const batchRuns: number[] = [];
for (let rep = 0; rep < reps; rep++) {
  // Alternate which goes first.
  if (rep % 2 === 0) {
    comlinkRuns.push(await drive(() => remote.write('k', 'a-value-of-some-thirty-two-bytes')));
    batchRuns.push(await drive(() => batched('k', 'a-value-of-some-thirty-two-bytes')));
  } else {
    batchRuns.push(await drive(() => batched('k', 'a-value-of-some-thirty-two-bytes')));
    comlinkRuns.push(await drive(() => remote.write('k', 'a-value-of-some-thirty-two-bytes')));
  }
}
const viaComlink = median(comlinkRuns);
const viaBatch = median(batchRuns);
const ratios = batchRuns.map((b, i) => b / (comlinkRuns[i] as number));
recordResult({
  benchmark: 'comlink-vs-batch',
  measure: '64 concurrent callers to one worker',
  subject: 'batched msgpack per event-loop turn (the hot path)',
  baseline: 'one comlink call per request',
  unit: 'req/s',
  runs: batchRuns,
  baselineRuns: comlinkRuns,
  ratio: median(ratios),
  ratioRuns: ratios,
  method:
    'Requests per second answered by one echo worker (workers/bench-echo.ts, no ' +
    `replication core) with 64 concurrent callers in the front process, ${seconds} s per ` +
    `timing, ${reps} alternating repetitions, worker start-up not timed; ratio = batched ÷ comlink.`,
});
console.log(
  table([
    { transport: 'comlink call per request', 'req/s': Math.round(viaComlink), ratio: 1 },
    { transport: 'batched msgpack per turn (hot path)', 'req/s': Math.round(viaBatch), ratio: viaBatch / viaComlink },
  ]),
);
await worker.terminate();
port1.close();
