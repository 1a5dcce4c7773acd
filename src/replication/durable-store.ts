/**
 * A node's durable storage in the front process: the disk a simulated node keeps across a crash.
 * It appends the msgpack buffers of durable records its worker posts (CoreOutput.durable, one
 * buffer per step), without decoding them, and forgets everything before a checkpoint. It is not a
 * database and holds no protocol knowledge: folding the records back into state is the strategy's
 * DurableFold, run by the restarted worker.
 */

/** Unmerged buffers kept before they are concatenated into one chunk (bounds per-buffer overhead). */
export const durableBuffersMergeAt = 512;

export class DurableStore {
  /** Merged chunks (several msgpack documents each), then the latest buffers as posted. */
  private chunks: Uint8Array[] = [];
  private recent: ArrayBuffer[] = [];
  private recentBytes = 0;
  /** Bytes held. */
  bytes = 0;
  /** Buffers appended since the node was created (for metrics). */
  appended = 0;

  /** One step's records; `checkpoint`: the buffer starts with a checkpoint, older records go. */
  append(buf: ArrayBuffer, checkpoint: boolean): void {
    if (checkpoint) {
      this.chunks = [];
      this.recent = [];
      this.recentBytes = 0;
      this.bytes = 0;
    }
    this.recent.push(buf);
    this.recentBytes += buf.byteLength;
    this.bytes += buf.byteLength;
    this.appended++;
    if (this.recent.length >= durableBuffersMergeAt) this.merge();
  }

  private merge(): void {
    const chunk = new Uint8Array(this.recentBytes);
    let off = 0;
    for (const b of this.recent) {
      chunk.set(new Uint8Array(b), off);
      off += b.byteLength;
    }
    this.chunks.push(chunk);
    this.recent = [];
    this.recentBytes = 0;
  }

  /**
   * Copies of what is held, oldest first, for a restarted worker: each a sequence of msgpack
   * documents, every document an array of records (the store keeps its own copies).
   */
  contents(): ArrayBuffer[] {
    const out: ArrayBuffer[] = this.chunks.map((c) => c.slice().buffer);
    for (const b of this.recent) out.push(b.slice(0));
    return out;
  }
}
