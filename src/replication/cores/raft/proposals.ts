/**
 * Client proposals (writes, membership changes) waiting for the fate of their log entry, found by
 * log index (when that index is applied) and by deadline (commit timeout). Several may wait on one
 * index: a proposal whose entry was truncated stays pending, because another node may still hold
 * the entry and commit it as a later leader, while this node proposes anew at the same index.
 * Bookkeeping only; what to answer is the core's decision.
 */
import { raftProposalQueueSettledEntriesMin } from '../../limits.js';

export interface PendingProposal {
  reqId: number;
  index: number;
  term: number;
  deadline: number;
  kind: 'write' | 'control';
  settled: boolean;
}

/** What the take* methods answer when nothing is settled: one shared empty list, never changed. */
const noProposals: readonly PendingProposal[] = [];

export class PendingProposals {
  private readonly byIndex = new Map<number, PendingProposal[]>();
  /** Insertion order, which is deadline order (time never goes back); settled ones skipped lazily. */
  private byDeadline: PendingProposal[] = [];
  private head = 0;

  get size(): number {
    return this.byIndex.size;
  }

  add(p: Omit<PendingProposal, 'settled'>): void {
    const entry: PendingProposal = { ...p, settled: false };
    const list = this.byIndex.get(p.index);
    if (list) list.push(entry);
    else this.byIndex.set(p.index, [entry]);
    this.byDeadline.push(entry);
  }

  /** Settles and returns every proposal waiting on `index`. */
  takeAt(index: number): readonly PendingProposal[] {
    const list = this.byIndex.get(index);
    if (!list) return noProposals;
    this.byIndex.delete(index);
    for (const p of list) p.settled = true;
    return list;
  }

  /** Settles and returns every proposal waiting on an index at or below `index`. */
  takeUpTo(index: number): PendingProposal[] {
    const out: PendingProposal[] = [];
    for (const i of [...this.byIndex.keys()]) if (i <= index) out.push(...this.takeAt(i));
    return out;
  }

  /** Settles and returns the proposals whose deadline is at or before `now`, oldest first. */
  takeExpired(now: number): readonly PendingProposal[] {
    let out: PendingProposal[] | undefined;
    for (;;) {
      const p = this.peek();
      if (!p || p.deadline > now) break;
      out ??= [];
      this.head++;
      const list = this.byIndex.get(p.index) as PendingProposal[];
      const rest = list.filter((x) => x !== p);
      if (rest.length) this.byIndex.set(p.index, rest);
      else this.byIndex.delete(p.index);
      p.settled = true;
      out.push(p);
    }
    return out ?? noProposals;
  }

  nextDeadline(): number {
    return this.peek()?.deadline ?? Infinity;
  }

  private peek(): PendingProposal | undefined {
    while (this.head < this.byDeadline.length && (this.byDeadline[this.head] as PendingProposal).settled) this.head++;
    if (this.head > raftProposalQueueSettledEntriesMin && this.head * 2 > this.byDeadline.length) {
      this.byDeadline = this.byDeadline.slice(this.head);
      this.head = 0;
    }
    return this.byDeadline[this.head];
  }
}
