/**
 * A node's durable storage in the front process: the disk a simulated node keeps across a crash.
 * It appends the msgpack bytes of durable records its worker posts (CoreOutput.durable, one
 * document per step) into large chunks, without decoding them, and forgets everything before a
 * checkpoint. It is not a database and holds no protocol knowledge: folding the records back into
 * state is the strategy's DurableFold, run by the restarted worker.
 */

import { durableChunkBytes, durableSpareChunksMax as spareChunksMax } from './limits.js';

export { durableChunkBytes, spareChunksMax };
const spareChunks: Uint8Array[] = [];

function newChunk(bytes: number): Uint8Array {
  if (bytes <= durableChunkBytes) return spareChunks.pop() ?? new Uint8Array(durableChunkBytes);
  return new Uint8Array(bytes);
}

function release(chunk: Uint8Array): void {
  // Only whole standard chunks (a subarray of one keeps its full buffer) are recycled.
  if (chunk.buffer.byteLength === durableChunkBytes && spareChunks.length < spareChunksMax)
    spareChunks.push(new Uint8Array(chunk.buffer));
}

export class DurableStore {
  /** Full chunks, then the one being filled (`fill` bytes used). */
  private chunks: Uint8Array[] = [];
  private current: Uint8Array | undefined;
  private fill = 0;
  /** Bytes held. */
  bytes = 0;

  /** One step's records (a msgpack document); `checkpoint`: it starts with one, older records go. */
  append(doc: Uint8Array, checkpoint: boolean): void {
    if (checkpoint) this.clear();
    const n = doc.byteLength;
    if (this.current === undefined || this.fill + n > this.current.byteLength) {
      if (this.current !== undefined) this.chunks.push(this.current.subarray(0, this.fill));
      this.current = newChunk(n);
      this.fill = 0;
    }
    this.current.set(doc, this.fill);
    this.fill += n;
    this.bytes += n;
  }

  /** Forgets everything (a checkpoint, or the node removed); chunks go back for reuse. */
  clear(): void {
    for (const c of this.chunks) release(c);
    if (this.current !== undefined) release(this.current);
    this.chunks = [];
    this.current = undefined;
    this.fill = 0;
    this.bytes = 0;
  }

  /**
   * Copies of what is held, oldest first, for a restarted worker (transferable): each a sequence
   * of msgpack documents, every document an array of records.
   */
  contents(): ArrayBuffer[] {
    const out: ArrayBuffer[] = this.chunks.map((c) => c.slice().buffer);
    if (this.current !== undefined && this.fill > 0) out.push(this.current.slice(0, this.fill).buffer);
    return out;
  }
}
