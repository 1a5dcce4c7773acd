/**
 * What holds between any two steps of a raft node (TigerBeetle's `invariants()`), checked by
 * raft.ts after every input and drain. A failure is a bug in the core (in this node or in the
 * peer whose message it stepped), never a client's fault. It reads the state and changes nothing
 * but its own memory of the last term and vote seen; constant time but for one pass over progress.
 * It runs after every step, so it allocates nothing: plain comparisons, and a failure's message is
 * built only when the check fails.
 */
import type { NodeId } from '../../core.js';
import { unreachable } from '../../../util/assert.js';
import { invariantBroken as fail } from '../invariant-broken.js';
import type { Progress } from './progress.js';
import type { RaftState } from './state.js';

/** The term and vote the previous check saw, to check that they only move forward. */
export interface CheckedVote {
  term: number;
  votedFor: NodeId | null;
}

export function checkInvariants(r: RaftState, checked: CheckedVote): void {
  const log = r.log;
  const lastIndex = log.lastIndex;
  // Figure 2: commitIndex never passes the log, lastApplied never passes commitIndex.
  if (r.commitIndex > lastIndex) fail(`commit ${r.commitIndex} past last index ${lastIndex}`);
  if (r.lastApplied > r.commitIndex) fail(`applied ${r.lastApplied} past commit`);
  // §7: a raftSnapshot holds applied entries only, and the retained log starts right after it.
  const snapshotIndex = log.snapshotIndex;
  if (snapshotIndex > r.lastApplied) fail(`snapshot ${snapshotIndex} past applied`);
  if (log.firstIndex > snapshotIndex + 1) fail('the retained log starts right after the snapshot');
  // compaction.ts: what a node keeps of the applied entries is bounded (the catch-up tail, 0 under
  // the old policy, plus less than one compaction interval).
  const keptMax = r.timings.snapshotEveryEntries + r.timings.snapshotCatchUpEntries;
  if (r.lastApplied - snapshotIndex >= keptMax)
    fail(`applied entries kept past ${keptMax} (snapshot ${snapshotIndex})`);
  const first = log.entryAt(log.firstIndex);
  if (first) {
    if (first.index !== log.firstIndex) fail(`first entry has index ${first.index}, not ${log.firstIndex}`);
    if (first.term < log.snapshotTerm) fail('log terms never decrease across the snapshot');
  }
  // §5.1: the term never decreases, and no entry is from a term beyond the node's own.
  if (r.term < checked.term) fail(`term decreased (${checked.term} -> ${r.term})`);
  if (log.lastTerm > r.term) fail(`last entry's term ${log.lastTerm} beyond current term ${r.term}`);
  // §5.2: at most one vote per term; once cast it stands until the term changes.
  if (r.term === checked.term && checked.votedFor !== null && r.votedFor !== checked.votedFor) {
    fail(`vote of term ${r.term} changed`);
  }
  checked.term = r.term;
  checked.votedFor = r.votedFor;
  // The configuration in effect comes from an entry of the log (§4.1), possibly compacted since.
  if (r.configIndex > lastIndex) fail('the configuration comes from the log');
  if (r.preCandidate && r.role !== 'candidate') fail('a pre-candidate is a candidate');
  switch (r.role) {
    case 'leader':
      checkLeaderInvariants(r, lastIndex);
      return;
    case 'candidate':
      // §5.2: a candidate (past its PreVote round) voted for itself in its term.
      if (!r.preCandidate && r.votedFor !== r.id) fail('a candidate votes for itself');
      if (r.leaderId !== '') fail('a candidate knows no leader of its term');
      checkNotLeaderInvariants(r);
      return;
    case 'follower':
      if (r.leaderId === r.id) fail('a follower is not its own leader');
      checkNotLeaderInvariants(r);
      return;
    default:
      unreachable(r.role);
  }
}

function checkLeaderInvariants(r: RaftState, lastIndex: number): void {
  // §5.2: a leader won an election of its term, in which it voted for itself.
  if (r.votedFor !== r.id) fail(`leader ${r.id} voted for ${r.votedFor} in term ${r.term}`);
  if (r.leaderId !== r.id) fail('a leader names itself as leader');
  if (r.electionDeadline !== Infinity) fail('a leader runs no election timer');
  if (r.heartbeatDeadline === Infinity) fail('a leader runs a heartbeat timer');
  // §8: the no-op of this term is in the log (nothing is served before it commits).
  if (r.termStartIndex <= 0) fail('a leader appended its no-op');
  if (r.termStartIndex > lastIndex) fail('the no-op is in the log');
  const noopTerm = r.log.termAt(r.termStartIndex);
  if (noopTerm !== undefined && noopTerm !== r.term) fail('the no-op is of the leader’s term');
  if (r.progress.has(r.id)) fail('a leader tracks no progress for itself');
  for (const pr of r.progress.values()) {
    // Figure 2: matchIndex < nextIndex ≤ lastIndex + 1.
    if (pr.match > lastIndex || pr.next <= pr.match || pr.next > lastIndex + 1) progressFailure(r, pr, lastIndex);
  }
}

/** Names the broken progress entry (only ever called to fail). */
function progressFailure(r: RaftState, pr: Progress, lastIndex: number): never {
  let peer = '?';
  for (const [id, p] of r.progress) if (p === pr) peer = id;
  if (pr.match > lastIndex) fail(`${peer}: match ${pr.match} past last index ${lastIndex}`);
  if (pr.next <= pr.match) fail(`${peer}: next ${pr.next} not past match ${pr.match}`);
  return fail(`${peer}: next ${pr.next} past last index + 1 (${lastIndex + 1})`);
}

function checkNotLeaderInvariants(r: RaftState): void {
  if (r.progress.size !== 0) fail('only a leader tracks follower progress');
  if (r.pendingReads.length !== 0) fail('only a leader holds ReadIndex reads');
  if (r.heartbeatDeadline !== Infinity) fail('only a leader runs a heartbeat timer');
  if (r.flushNeeded) fail('only a leader has entries to send');
}
