/**
 * The leader's pending ReadIndex reads (dissertation §6.4), oldest first: each waits until a
 * majority confirmed a heartbeat round at least as new as its own and the state machine applied its
 * read index. Bookkeeping only: the core decides the rounds, the indexes and the answers.
 */

export interface PendingRead {
  reqId: number;
  key: string;
  readIndex: number;
  seq: number;
  deadline: number;
}

/** What takeReady/takeExpired answer when no read is due: one shared empty list, never changed. */
const noReads: readonly PendingRead[] = [];

export class ReadIndexQueue {
  private reads: PendingRead[] = [];

  get length(): number {
    return this.reads.length;
  }

  add(read: PendingRead): void {
    this.reads.push(read);
  }

  nextDeadline(): number {
    return this.reads[0]?.deadline ?? Infinity;
  }

  /**
   * Removes and returns the reads now answerable, in order: rounds up to `confirmedSeq` whose read
   * index is applied. Stops at the first that is not (later ones have later rounds and indexes).
   */
  takeReady(confirmedSeq: number, lastApplied: number): readonly PendingRead[] {
    let k = 0;
    while (k < this.reads.length) {
      const r = this.reads[k] as PendingRead;
      if (r.seq > confirmedSeq || r.readIndex > lastApplied) break;
      k++;
    }
    return k > 0 ? this.reads.splice(0, k) : noReads;
  }

  /** Removes and returns the reads whose deadline is at or before `now` (deadlines only grow). */
  takeExpired(now: number): readonly PendingRead[] {
    let k = 0;
    while (k < this.reads.length && (this.reads[k] as PendingRead).deadline <= now) k++;
    return k > 0 ? this.reads.splice(0, k) : noReads;
  }

  /** Removes and returns every read (a leader stepping down fails them). */
  takeAll(): PendingRead[] {
    const all = this.reads;
    this.reads = [];
    return all;
  }
}
