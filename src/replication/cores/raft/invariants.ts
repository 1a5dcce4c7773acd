/**
 * What holds between any two steps of a raft node (TigerBeetle's `invariants()`), checked by
 * raft.ts after every input and drain. A failure is a bug in the core (in this node or in the
 * peer whose message it stepped), never a client's fault. It reads the state and changes nothing
 * but its own memory of the last term and vote seen; constant time but for one pass over progress.
 */
import type { NodeId } from '../../core.js';
import { invariant, unreachable } from '../../../util/assert.js';
import type { RaftState } from './state.js';

/** The term and vote the previous check saw, to check that they only move forward. */
export interface CheckedVote {
  term: number;
  votedFor: NodeId | null;
}

export function checkInvariants(r: RaftState, checked: CheckedVote): void {
  const log = r.log;
  // Figure 2: commitIndex never passes the log, lastApplied never passes commitIndex.
  invariant(r.commitIndex <= log.lastIndex, () => `commit ${r.commitIndex} past last index ${log.lastIndex}`);
  invariant(r.lastApplied <= r.commitIndex, () => `applied ${r.lastApplied} past commit`);
  // §7: a raftSnapshot holds applied entries only, and the retained log starts right after it.
  invariant(log.snapshotIndex <= r.lastApplied, () => `snapshot ${log.snapshotIndex} past applied`);
  invariant(log.firstIndex <= log.snapshotIndex + 1, 'the retained log starts right after the snapshot');
  const first = log.entryAt(log.firstIndex);
  if (first) {
    invariant(first.index === log.firstIndex, () => `first entry has index ${first.index}, not ${log.firstIndex}`);
    invariant(first.term >= log.snapshotTerm, 'log terms never decrease across the snapshot');
  }
  // §5.1: the term never decreases, and no entry is from a term beyond the node's own.
  invariant(r.term >= checked.term, () => `term decreased (${checked.term} -> ${r.term})`);
  invariant(log.lastTerm <= r.term, () => `last entry's term ${log.lastTerm} beyond current term ${r.term}`);
  // §5.2: at most one vote per term; once cast it stands until the term changes.
  if (r.term === checked.term && checked.votedFor !== null) {
    invariant(r.votedFor === checked.votedFor, () => `vote of term ${r.term} changed`);
  }
  checked.term = r.term;
  checked.votedFor = r.votedFor;
  // The configuration in effect comes from an entry of the log (§4.1), possibly compacted since.
  invariant(r.configIndex <= log.lastIndex, 'the configuration comes from the log');
  if (r.preCandidate) invariant(r.role === 'candidate', 'a pre-candidate is a candidate');
  switch (r.role) {
    case 'leader':
      checkLeaderInvariants(r);
      return;
    case 'candidate':
      // §5.2: a candidate (past its PreVote round) voted for itself in its term.
      if (!r.preCandidate) invariant(r.votedFor === r.id, 'a candidate votes for itself');
      invariant(r.leaderId === '', 'a candidate knows no leader of its term');
      checkNotLeaderInvariants(r);
      return;
    case 'follower':
      invariant(r.leaderId !== r.id, 'a follower is not its own leader');
      checkNotLeaderInvariants(r);
      return;
    default:
      unreachable(r.role);
  }
}

function checkLeaderInvariants(r: RaftState): void {
  const lastIndex = r.log.lastIndex;
  // §5.2: a leader won an election of its term, in which it voted for itself.
  invariant(r.votedFor === r.id, () => `leader ${r.id} voted for ${r.votedFor} in term ${r.term}`);
  invariant(r.leaderId === r.id, 'a leader names itself as leader');
  invariant(r.electionDeadline === Infinity, 'a leader runs no election timer');
  invariant(r.heartbeatDeadline !== Infinity, 'a leader runs a heartbeat timer');
  // §8: the no-op of this term is in the log (nothing is served before it commits).
  invariant(r.termStartIndex > 0, 'a leader appended its no-op');
  invariant(r.termStartIndex <= lastIndex, 'the no-op is in the log');
  const noopTerm = r.log.termAt(r.termStartIndex);
  if (noopTerm !== undefined) invariant(noopTerm === r.term, 'the no-op is of the leader’s term');
  invariant(!r.progress.has(r.id), 'a leader tracks no progress for itself');
  for (const [peer, pr] of r.progress) {
    // Figure 2: matchIndex < nextIndex ≤ lastIndex + 1.
    invariant(pr.match <= lastIndex, () => `${peer}: match ${pr.match} past last index ${lastIndex}`);
    invariant(pr.next > pr.match, () => `${peer}: next ${pr.next} not past match ${pr.match}`);
    invariant(pr.next <= lastIndex + 1, () => `${peer}: next ${pr.next} past last index + 1 (${lastIndex + 1})`);
  }
}

function checkNotLeaderInvariants(r: RaftState): void {
  invariant(r.progress.size === 0, 'only a leader tracks follower progress');
  invariant(r.pendingReads.length === 0, 'only a leader holds ReadIndex reads');
  invariant(r.heartbeatDeadline === Infinity, 'only a leader runs a heartbeat timer');
  invariant(!r.flushNeeded, 'only a leader has entries to send');
}
