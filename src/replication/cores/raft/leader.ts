/**
 * Raft's leader side of replication: appending its own entries, sending each follower what it
 * lacks (AppendEntries, heartbeats, InstallSnapshot when the log was compacted), taking their
 * answers (§5.3 with fast back-off), committing by majority (§5.4.2), CheckQuorum, and answering
 * ReadIndex reads a majority confirmed. Free functions over the node's state (etcd's stepLeader);
 * they do not take client requests (requests.ts) and never change the role themselves.
 */
import type { NodeId } from '../../core.js';
import { invariant } from '../../../util/assert.js';
import { backedOffNext, lowestMatch, type Progress } from './progress.js';
import { isMajority, majorityValueOf } from './quorum.js';
import type { Raft } from './state.js';
import type {
  AppendRequest,
  AppendResponse,
  EntryBody,
  HeartbeatRequest,
  HeartbeatResponse,
  LogEntry,
  SnapshotRequest,
  SnapshotResponse,
} from './types.js';
import { invariantBroken } from '../invariant-broken.js';

/** Appends an entry of the leader's term to its own log; followers get it at the next flush. */
export function appendEntry(r: Raft, body: EntryBody, now: number): LogEntry {
  const entry = {
    index: r.log.lastIndex + 1,
    term: r.term,
    node_id: r.id,
    timestamp: r.clock.tick(now),
    ...body,
  } as LogEntry;
  r.log.append(entry);
  r.appendedAt.set(entry.index, now);
  r.flushNeeded = true;
  return entry;
}

/**
 * Sends `peer` what it is missing from nextIndex on (at most maxEntriesPerMessage entries), or a
 * raftSnapshot when nextIndex has been compacted away. nextIndex advances optimistically past
 * what was sent; a rejection moves it back (§5.3).
 */
export function sendAppend(r: Raft, peer: NodeId, now: number): void {
  const pr = r.progress.get(peer);
  if (!pr) return;
  pr.unanswered++;
  if (pr.next <= r.log.snapshotIndex) {
    if (now - pr.snapshotSentAt >= r.timings.retransmitMs) {
      pr.snapshotSentAt = now;
      r.send(peer, {
        kind: 'snapshot',
        term: r.term,
        raftSnapshot: r.log.raftSnapshot,
        leaderLastIndex: r.log.lastIndex,
        seq: r.readSeq,
      } satisfies SnapshotRequest);
    } else {
      r.send(peer, {
        kind: 'heartbeat',
        term: r.term,
        leaderCommit: Math.min(r.commitIndex, pr.match),
        leaderLastIndex: r.log.lastIndex,
        seq: r.readSeq,
      } satisfies HeartbeatRequest);
    }
    return;
  }
  const prevLogIndex = pr.next - 1;
  const prevLogTerm = r.log.termAt(prevLogIndex);
  if (prevLogTerm === undefined) invariantBroken(`no term at ${prevLogIndex} (snapshot ${r.log.snapshotIndex})`);
  const last = Math.min(r.log.lastIndex, pr.next + r.timings.maxEntriesPerMessage - 1);
  const entries = last >= pr.next ? r.log.slice(pr.next, last) : [];
  r.send(peer, {
    kind: 'append',
    term: r.term,
    prevLogIndex,
    prevLogTerm,
    entries,
    leaderCommit: r.commitIndex,
    leaderLastIndex: r.log.lastIndex,
    seq: r.readSeq,
  } satisfies AppendRequest);
  if (entries.length > 0) pr.next = last + 1;
}

/** Sends new entries (and ReadIndex heartbeats) gathered since the last drain. */
export function flush(r: Raft, now: number): void {
  if (r.role !== 'leader' || (!r.flushNeeded && !r.readBroadcast)) return;
  for (const [peer, pr] of r.progress) {
    const unsent = pr.next > r.log.snapshotIndex && pr.next <= r.log.lastIndex;
    if (r.readBroadcast || unsent) sendAppend(r, peer, now);
  }
  r.flushNeeded = false;
  r.readBroadcast = false;
}

/** A follower's answer of our term (stepTerm dropped the others): its progress, if we still lead. */
function leaderResponse(r: Raft, from: NodeId, term: number, seq: number, now: number): Progress | undefined {
  invariant(term === r.term, 'stepTerm passes only answers of our term');
  if (r.role !== 'leader') return undefined;
  const pr = r.progress.get(from);
  if (!pr) return undefined;
  pr.lastAckAt = now;
  pr.unanswered = 0;
  if (seq > pr.ackedSeq) pr.ackedSeq = seq;
  return pr;
}

export function onAppendResponse(r: Raft, from: NodeId, m: AppendResponse, now: number): void {
  const pr = leaderResponse(r, from, m.term, m.seq, now);
  if (!pr) return;
  if (m.success) {
    if (m.matchIndex > pr.match) pr.match = m.matchIndex;
    if (pr.next <= pr.match) pr.next = pr.match + 1;
    maybeCommit(r, now);
  } else if (m.rejectIndex > pr.match && !staleRejection(r, pr, m.rejectIndex, now)) {
    // Fast back-off (§5.3): skip the follower's whole conflicting term in one step.
    pr.next = backedOffNext(pr, m, (term) => r.log.lastIndexOfTerm(term));
    pr.backedOffAt = now;
    pr.backedOffTo = pr.next;
    pr.backedOffLast = r.log.lastIndex;
    sendAppend(r, from, now);
  }
  if (r.role === 'leader') {
    if (pr.next > r.log.snapshotIndex && pr.next <= r.log.lastIndex) sendAppend(r, from, now);
    resolveReads(r);
  }
}

/**
 * Under snapshotCatchUpEntries > 0 (compaction.ts), where a follower that lost one message is sent
 * entries rather than a raftSnapshot: each append in flight behind the lost one is refused in turn,
 * and each refusal would resend the whole gap again. A refusal of an append sent before the last
 * back-off (one that followed an entry from where that back-off resent up to the leader's last
 * index then), within retransmitMs of it, is therefore not acted on (etcd's probe state, which
 * ignores all but the answer to its probe); past retransmitMs any refusal backs off again, so a lost
 * resend is repaired. Under the old policy every refusal backs off, as before.
 */
function staleRejection(r: Raft, pr: Progress, rejectIndex: number, now: number): boolean {
  if (r.timings.snapshotCatchUpEntries <= 0) return false;
  const sentBefore = rejectIndex >= pr.backedOffTo && rejectIndex < pr.backedOffLast;
  return sentBefore && now - pr.backedOffAt < r.timings.retransmitMs;
}

export function onHeartbeatResponse(r: Raft, from: NodeId, m: HeartbeatResponse, now: number): void {
  const pr = leaderResponse(r, from, m.term, m.seq, now);
  if (!pr) return;
  resolveReads(r);
}

export function onSnapshotResponse(r: Raft, from: NodeId, m: SnapshotResponse, now: number): void {
  const pr = leaderResponse(r, from, m.term, m.seq, now);
  if (!pr) return;
  pr.snapshotSentAt = -Infinity;
  if (m.matchIndex > pr.match) pr.match = m.matchIndex;
  if (pr.next <= pr.match) pr.next = pr.match + 1;
  maybeCommit(r, now);
  if (r.role !== 'leader') return;
  if (pr.next <= r.log.lastIndex) sendAppend(r, from, now);
  resolveReads(r);
}

/**
 * §5.3/§5.4.2: the highest index stored on a majority of the voters becomes committed, but only
 * if it belongs to the current term; earlier terms' entries commit indirectly. A leader outside
 * the configuration does not count itself (dissertation §4.2.2).
 */
export function maybeCommit(r: Raft, now: number): void {
  if (r.role !== 'leader') return;
  const n = majorityValueOf(r.voters, r, matchOf);
  if (n > r.commitIndex && r.log.termAt(n) === r.term) {
    r.commitIndex = n;
    r.appendedAt.pruneUpTo(lowestMatch(r.progress, r.commitIndex));
    r.apply(now);
  }
}

/** What a voter stores as far as the leader knows: its own last index, a follower's match. */
function matchOf(r: Raft, v: NodeId): number {
  return v === r.id ? r.log.lastIndex : (r.progress.get(v)?.match ?? 0);
}

/** The ReadIndex round a voter confirmed: the leader's own current one, a follower's acknowledged one. */
function ackedOf(r: Raft, v: NodeId): number {
  return v === r.id ? r.readSeq : (r.progress.get(v)?.ackedSeq ?? 0);
}

/** CheckQuorum (dissertation §6.2): a majority answered within the longest election timeout. */
export function quorumActive(r: Raft, now: number): boolean {
  return isMajority(r.voters, (v) => {
    if (v === r.id) return true;
    const pr = r.progress.get(v);
    return pr !== undefined && now - pr.lastAckAt <= r.timings.electionTimeoutMsMax;
  });
}

/** Answers the ReadIndex reads a majority confirmed and whose index is applied (dissertation §6.4). */
export function resolveReads(r: Raft): void {
  if (r.role !== 'leader' || r.pendingReads.length === 0) return;
  const confirmed = majorityValueOf(r.voters, r, ackedOf);
  for (const read of r.pendingReads.takeReady(confirmed, r.lastApplied)) {
    const v = r.store[read.key];
    if (!v || v.tombstone) {
      r.reply({ id: read.reqId, ok: false, code: 'not_found', error: `key not found: ${read.key}` });
    } else {
      r.reply({ id: read.reqId, ok: true, result: { kind: 'entry', entry: v, node_id: r.id } });
    }
  }
}
