/**
 * Benchmark worker for benchmarks/comlink-vs-batch.ts: answers the same request two ways, as a
 * comlink method and as a batched msgpack message, so the two transports can be compared.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { decode, encodeTransferable } from '../protocol/actor.js';

const port = parentPort!;
const api = {
  write(key: string, value: string) {
    return { ok: true, key, len: value.length };
  },
};
Comlink.expose(api, nodeEndpoint((workerData as { control: MessagePort }).control));
port.on('message', (m: { req: ArrayBuffer }) => {
  const reqs = decode<Array<{ id: number; key: string; value: string }>>(new Uint8Array(m.req));
  const replies = reqs.map((r) => ({ id: r.id, ok: true, key: r.key, len: r.value.length }));
  const out = encodeTransferable(replies);
  port.postMessage({ out }, [out]);
});
