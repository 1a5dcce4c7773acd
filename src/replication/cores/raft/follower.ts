/**
 * Raft's follower side: following the leader of a term, and the AppendEntries (§5.3), heartbeat
 * and InstallSnapshot (§7) receivers with their answers. Free functions over the node's state
 * (etcd's stepFollower); the term rules ran before them (raft.ts's stepTerm), and they never
 * change the role themselves but through raft.ts's becomeFollower.
 */
import type { NodeId } from '../../core.js';
import { invariant } from '../../../util/assert.js';
import { indeterminateReply } from './replies.js';
import type { Raft } from './state.js';
import type {
  AppendRequest,
  AppendResponse,
  HeartbeatRequest,
  HeartbeatResponse,
  SnapshotRequest,
  SnapshotResponse,
} from './types.js';
import { invariantBroken } from '../invariant-broken.js';

/** A message from the leader of term `term` (≥ ours): follow it and restart the election timer. */
export function followLeader(r: Raft, from: NodeId, term: number, leaderLastIndex: number, now: number): void {
  if (term < r.term) invariantBroken(`stepTerm follows leaders of a term >= ours, not ${term} < ${r.term}`);
  if (term === r.term) {
    // Election safety (§5.2): at most one leader per term.
    if (r.role === 'leader') invariantBroken(`election safety: ${from} and ${r.id} both lead term ${term}`);
    const knownLeader = r.role === 'follower' ? r.leaderId : '';
    if (knownLeader !== '') {
      if (knownLeader !== from) invariantBroken(`election safety: ${from} and ${knownLeader} both lead term ${term}`);
    }
  }
  if (term > r.term || r.role !== 'follower') r.becomeFollower(term, from, now);
  else r.resetElectionTimer(now);
  r.leaderId = from;
  r.lastLeaderContactAt = now;
  r.leaderLastIndex = leaderLastIndex;
}

/** AppendEntries receiver (§5.3); stepTerm has made us the sender's follower. */
export function onAppend(r: Raft, from: NodeId, m: AppendRequest, now: number): void {
  invariant(m.term === r.term, 'stepTerm passes only appends of our term');
  let prevIndex = m.prevLogIndex;
  let prevTerm = m.prevLogTerm;
  let entries = m.entries;
  const snapIndex = r.log.snapshotIndex;
  if (prevIndex < snapIndex) {
    // Entries up to our raftSnapshot are committed, hence equal to the leader's (§5.4.3): skip them.
    const skip = Math.min(entries.length, snapIndex - prevIndex);
    const lastSkipped = entries[skip - 1];
    if (skip === entries.length) {
      r.send(from, appendAccept(r, m, m.prevLogIndex + m.entries.length));
      return;
    }
    invariant(lastSkipped, 'at least one entry was skipped');
    invariant(lastSkipped.index === snapIndex, 'entries are contiguous');
    invariant(lastSkipped.term === r.log.snapshotTerm, 'committed entry differs from the raftSnapshot');
    entries = entries.slice(skip);
    prevIndex = snapIndex;
    prevTerm = r.log.snapshotTerm;
  }
  // §5.3 consistency check, with the fast back-off hints.
  if (prevIndex > r.log.lastIndex) {
    r.send(from, appendReject(r, m, 0, r.log.lastIndex + 1));
    return;
  }
  const localPrevTerm = r.log.termAt(prevIndex);
  invariant(localPrevTerm !== undefined, 'prevIndex lies within the retained log');
  if (localPrevTerm !== prevTerm) {
    r.send(from, appendReject(r, m, localPrevTerm, r.log.firstIndexOfTerm(localPrevTerm, prevIndex)));
    return;
  }
  let configTouched = false;
  for (const e of entries) {
    const existing = r.log.termAt(e.index);
    if (existing === e.term) continue; // already have it (a duplicate or a stale resend)
    if (existing !== undefined) {
      // §5.3: a conflicting entry and all that follow it are deleted. Never a committed one.
      if (e.index <= r.commitIndex)
        invariantBroken(`would truncate committed index ${e.index} (commit ${r.commitIndex})`);
      // A proposal of ours among the dropped entries stays pending: another node may still hold
      // it and commit it as a later leader. Only the entry applied at its index decides.
      const dropped = r.log.truncateFrom(e.index);
      configTouched ||= dropped.some((d) => d.type === 'config');
    }
    r.log.append(e);
    r.clock.observe(e.timestamp, now);
    configTouched ||= e.type === 'config';
  }
  if (configTouched) r.refreshConfig(now);
  const matchIndex = prevIndex + entries.length;
  // §5.3 rule 5: commit up to min(leaderCommit, index of the last entry this request verified).
  const newCommit = Math.min(m.leaderCommit, matchIndex);
  if (newCommit > r.commitIndex) {
    r.commitIndex = newCommit;
    r.apply(now);
  }
  r.send(from, appendAccept(r, m, matchIndex));
}

/** Accepts `m`: the follower's log matches the leader's up to `matchIndex`. */
export function appendAccept(r: Raft, m: AppendRequest, matchIndex: number): AppendResponse {
  return {
    kind: 'append_resp',
    term: r.term,
    success: true,
    matchIndex,
    rejectIndex: 0,
    conflictTerm: 0,
    conflictIndex: 0,
    seq: m.seq,
  };
}

/** Refuses `m` with the fast back-off hints (§5.3): the conflicting term and its first index here. */
export function appendReject(r: Raft, m: AppendRequest, conflictTerm: number, conflictIndex: number): AppendResponse {
  return {
    kind: 'append_resp',
    term: r.term,
    success: false,
    matchIndex: 0,
    rejectIndex: m.prevLogIndex,
    conflictTerm,
    conflictIndex,
    seq: m.seq,
  };
}

/** A heartbeat (an empty append without the log check); stepTerm has made us the sender's follower. */
export function onHeartbeat(r: Raft, from: NodeId, m: HeartbeatRequest, now: number): void {
  invariant(m.term === r.term, 'stepTerm passes only heartbeats of our term');
  const newCommit = Math.min(m.leaderCommit, r.log.lastIndex);
  if (newCommit > r.commitIndex) {
    r.commitIndex = newCommit;
    r.apply(now);
  }
  r.send(from, { kind: 'heartbeat_resp', term: r.term, seq: m.seq } satisfies HeartbeatResponse);
}

/** InstallSnapshot receiver (§7). */
export function onSnapshot(r: Raft, from: NodeId, m: SnapshotRequest, now: number): void {
  invariant(m.term === r.term, 'stepTerm passes only snapshots of our term');
  const snap = m.raftSnapshot;
  if (snap.lastIncludedIndex > r.commitIndex) {
    // Entries discarded past the snapshot may still commit elsewhere: their proposals stay pending.
    r.log.install(snap);
    r.journal.checkpoint(r.persistentState());
    r.store = { ...snap.store };
    r.storeKeys = Object.keys(r.store).length;
    r.commitIndex = snap.lastIncludedIndex;
    r.lastApplied = snap.lastIncludedIndex;
    for (const v of Object.values(snap.store)) r.clock.observe(v.timestamp, now);
    // Proposals the raftSnapshot swallowed: their fate is in the store, not in a log we can read.
    for (const p of r.pending.takeUpTo(snap.lastIncludedIndex)) {
      r.reply(indeterminateReply(p.reqId, 'this node was caught up by a raftSnapshot'));
    }
    r.refreshConfig(now);
    r.emit({ type: 'entry_replicated', node_id: r.id, data: { index: r.lastApplied, raft_snapshot: true } });
    r.snapshotInstalled(snap.lastIncludedIndex);
  }
  r.send(from, {
    kind: 'snapshot_resp',
    term: r.term,
    matchIndex: snap.lastIncludedIndex,
    seq: m.seq,
  } satisfies SnapshotResponse);
}
