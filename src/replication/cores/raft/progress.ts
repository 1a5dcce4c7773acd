/**
 * A leader's bookkeeping about each follower (Raft Figure 2 nextIndex/matchIndex, plus the
 * liveness and ReadIndex fields of the dissertation) and the times it appended entries (for
 * lag_ms). It decides nothing about what to send: the core does.
 */
import type { NodeId } from '../../core.js';

/** Leader's view of one follower (Raft Figure 2 nextIndex/matchIndex, plus liveness bookkeeping). */
export interface Progress {
  next: number;
  match: number;
  /** Last response in this term: CheckQuorum (dissertation §6.2). */
  lastAckAt: number;
  /** Highest ReadIndex round this follower confirmed (dissertation §6.4). */
  ackedSeq: number;
  /** When a raftSnapshot was last sent (-Infinity: none in flight). */
  snapshotSentAt: number;
  /** Messages sent since its last answer: whether it still holds log compaction (compaction.ts). */
  unanswered: number;
  /**
   * The last back-off after a rejection (etcd's probe): when, the first index it resent, and the
   * leader's last index then (every append sent before it ended there or earlier).
   */
  backedOffAt: number;
  backedOffTo: number;
  backedOffLast: number;
}

/** A follower the leader knows nothing about yet: optimistic nextIndex, no match (§5.3). */
export function newProgress(lastIndex: number, now: number): Progress {
  return {
    next: lastIndex + 1,
    match: 0,
    lastAckAt: now,
    ackedSeq: 0,
    snapshotSentAt: -Infinity,
    unanswered: 0,
    backedOffAt: -Infinity,
    backedOffTo: 0,
    backedOffLast: 0,
  };
}

/**
 * Fast back-off (§5.3) after a rejected AppendEntries: skip the follower's whole conflicting term
 * in one step (to just after the leader's last entry of that term when it has one, else to the
 * follower's first index of it), never below match + 1 nor past the rejected index.
 */
export function backedOffNext(
  pr: Readonly<Progress>,
  reject: { rejectIndex: number; conflictTerm: number; conflictIndex: number },
  lastIndexOfTerm: (term: number) => number,
): number {
  let next = reject.conflictIndex;
  if (reject.conflictTerm > 0) {
    const li = lastIndexOfTerm(reject.conflictTerm);
    if (li > 0) next = li + 1;
  }
  return Math.max(pr.match + 1, Math.min(next, reject.rejectIndex));
}

/** Leader-side append times (index -> ms), oldest first, at most `max`; the oldest fall off. */
export class AppendTimes {
  private readonly at = new Map<number, number>();

  constructor(private readonly max: number) {}

  get size(): number {
    return this.at.size;
  }

  set(index: number, now: number): void {
    this.at.set(index, now);
    if (this.at.size > this.max) {
      const oldest = this.at.keys().next();
      if (!oldest.done) this.at.delete(oldest.value);
    }
  }

  /** When `index` was appended; the oldest known time when pruned, else `fallback`. */
  timeOf(index: number, fallback: number): number {
    const t = this.at.get(index);
    if (t !== undefined) return t;
    for (const first of this.at.values()) return first;
    return fallback;
  }

  /** Forgets every index at or below `upTo` (every follower has it). */
  pruneUpTo(upTo: number): void {
    for (const i of this.at.keys()) {
      if (i > upTo) break;
      this.at.delete(i);
    }
  }

  clear(): void {
    this.at.clear();
  }
}

/** The lowest match among `progress` and `commitIndex`: what every follower already holds. */
export function lowestMatch(progress: ReadonlyMap<NodeId, Progress>, commitIndex: number): number {
  let min = commitIndex;
  for (const pr of progress.values()) if (pr.match < min) min = pr.match;
  return min;
}
