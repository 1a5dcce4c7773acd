/**
 * Where raft's log compaction (§7) cuts: the index up to which the log becomes a raftSnapshot.
 * Pure: the core gathers the numbers and does the compaction.
 *
 * Two policies, chosen by the timing snapshotCatchUpEntries (protocol/timings.ts):
 * - 0, 'interval' (the policy before): every snapshotEveryEntries applied entries, everything applied
 *   is compacted, whatever the followers hold. A follower behind the cut that must be resent entries
 *   (it lost a message) is then sent the whole store as InstallSnapshot.
 * - N > 0, 'acked' (etcd's SnapshotCatchUpEntries): a leader keeps the entries that followers still
 *   answering have not acknowledged, so they are caught up by AppendEntries: it cuts at most at the
 *   lowest match of the answering followers, and at least at lastApplied - N, so a slow but
 *   answering follower cannot make the log grow without bound (the retained applied entries stay
 *   below N + snapshotEveryEntries). A follower that stopped answering (nothing heard within the
 *   longest election timeout, or raftCatchUpUnansweredMessagesMax messages in a row unanswered) does not
 *   hold the cut: it is caught up by InstallSnapshot as before. Followers and candidates have no
 *   progress to consult and compact as under 'interval' (a new leader starts from that log). With
 *   the gap resent as entries, the refusals of the appends in flight behind a lost one are answered
 *   by one resend, not one each (leader.ts staleRejection, etcd's probe state).
 * Either way a cut is taken only once it is snapshotEveryEntries past the previous one; a cut behind
 * lastApplied costs no more than one at it (the log builds the raftSnapshot's store from its entries).
 */

/** What a leader knows of one follower, as far as compaction cares. */
export interface FollowerAck {
  /** Highest index known to be stored on the follower (Figure 2 matchIndex). */
  match: number;
  /** When it last answered (ms). */
  lastAckAt: number;
  /** Messages sent to it since its last answer. */
  unanswered: number;
}

export interface CompactionInput {
  lastApplied: number;
  /** The current raftSnapshot's lastIncludedIndex. */
  snapshotIndex: number;
  /** timings.snapshotEveryEntries: applied entries between two cuts (<= 0: never compact). */
  every: number;
  /** timings.snapshotCatchUpEntries: 0 for 'interval', else the most applied entries kept for followers. */
  catchUpEntries: number;
  /** The followers' progress when this node leads, else undefined. */
  followers: Iterable<FollowerAck> | undefined;
  now: number;
  /** A follower silent for longer than this (ms: the longest election timeout) no longer holds the cut. */
  answeringMs: number;
  /** A follower that left this many messages in a row unanswered no longer holds the cut. */
  unansweredMax: number;
}

/** True when `f` still answers: it is kept up by AppendEntries, not by a snapshot. */
export function isAnswering(f: FollowerAck, now: number, answeringMs: number, unansweredMax: number): boolean {
  return now - f.lastAckAt <= answeringMs && f.unanswered < unansweredMax;
}

/** The index to compact up to now, or 0 for no compaction. */
export function compactionPoint(c: CompactionInput): number {
  if (c.every <= 0 || c.lastApplied - c.snapshotIndex < c.every) return 0;
  if (c.catchUpEntries <= 0 || c.followers === undefined) return c.lastApplied;
  let cut = c.lastApplied;
  for (const f of c.followers) {
    if (f.match < cut && isAnswering(f, c.now, c.answeringMs, c.unansweredMax)) cut = f.match;
  }
  const floor = c.lastApplied - c.catchUpEntries;
  if (cut < floor) cut = floor;
  return cut - c.snapshotIndex >= c.every ? cut : 0;
}
