/**
 * The read-only views of one raft node: the status the HTTP edge shows (with the leader's
 * followers map), the log view (the raftSnapshot as a first pseudo-entry, then the retained
 * entries) and the inspection that tests and simulation checkers read. Pure functions over the
 * core's state handed in as values: they change nothing and decide nothing (etcd's status.go).
 */
import type { CoreStatus, NodeId } from '../../core.js';
import type { RaftLog } from './log.js';
import type { Progress } from './progress.js';
import type { RaftState } from './state.js';
import type { LogEntry, RaftRole, RaftSnapshot } from './types.js';

/** A read-only look inside, for tests and checkers. */
export interface RaftInspection {
  id: NodeId;
  role: RaftRole;
  preCandidate: boolean;
  term: number;
  votedFor: NodeId | null;
  leaderId: NodeId | '';
  commitIndex: number;
  lastApplied: number;
  voters: readonly NodeId[];
  raftSnapshot: RaftSnapshot;
  entries: readonly LogEntry[];
  lastIndex: number;
  lastTerm: number;
  /** Leader only: per-peer replication progress. */
  progress: Record<NodeId, { next: number; match: number }>;
}

/** What the views read of the core, as it is when they are asked. */
export interface RaftViewState {
  id: NodeId;
  role: RaftRole;
  preCandidate: boolean;
  term: number;
  votedFor: NodeId | null;
  leaderId: NodeId | '';
  commitIndex: number;
  lastApplied: number;
  /** The voters in effect (shared with the core, never copied by inspectView). */
  voters: readonly NodeId[];
  /** Index of the config entry (or raftSnapshot) the voters come from. */
  configIndex: number;
  /** The leader's last index as last heard (a follower's lag). */
  leaderLastIndex: number;
  /** Remote timestamps the hybrid clock refused (too far ahead). */
  hlcRemoteRefused: number;
  log: RaftLog;
  /** Leader only: per-follower progress (empty otherwise). */
  progress: ReadonlyMap<NodeId, Progress>;
  /** Leader only: when the entry at `index` was appended (lag_ms). */
  appendTime(index: number): number;
}

/** The view state of a node as it is now (shares its voters and progress, copies nothing). */
export function viewStateOf(r: RaftState): RaftViewState {
  return {
    id: r.id,
    role: r.role,
    preCandidate: r.preCandidate,
    term: r.term,
    votedFor: r.votedFor,
    leaderId: r.leaderId,
    commitIndex: r.commitIndex,
    lastApplied: r.lastApplied,
    voters: r.voters,
    configIndex: r.configIndex,
    leaderLastIndex: r.leaderLastIndex,
    hlcRemoteRefused: r.clock.remoteRefused,
    log: r.log,
    progress: r.progress,
    // When `index` was appended by this leader; the oldest known time when pruned.
    appendTime: (index) => r.appendedAt.timeOf(index, r.leaderSince),
  };
}

/** GET .../status: role, term, commit and lag, plus a leader's followers map. */
export function statusView(s: RaftViewState, now: number): CoreStatus {
  const status: CoreStatus = {
    role: s.role,
    term: s.term,
    commit_index: s.commitIndex,
    last_applied: s.lastApplied,
    leader_id: s.leaderId,
    lag: s.role === 'leader' ? 0 : Math.max(0, s.leaderLastIndex - s.lastApplied),
    extra: {
      pre_candidate: s.preCandidate,
      voted_for: s.votedFor ?? '',
      voters: [...s.voters],
      last_log_index: s.log.lastIndex,
      raft_snapshot_index: s.log.snapshotIndex,
      log_entries: s.log.length,
      config_index: s.configIndex,
      config_committed: s.configIndex <= s.commitIndex,
      hlc_remote_refused: s.hlcRemoteRefused,
    },
  };
  if (s.role === 'leader') {
    const followers: NonNullable<CoreStatus['followers']> = {};
    const last = s.log.lastIndex;
    for (const [peer, pr] of s.progress) {
      const behind = pr.match < last;
      followers[peer] = {
        match_index: pr.match,
        lag_entries: last - pr.match,
        lag_ms: behind ? Math.max(0, now - s.appendTime(pr.match + 1)) : 0,
      };
    }
    status.followers = followers;
  }
  return status;
}

/** GET .../log: the raftSnapshot standing for the compacted prefix, then the retained entries. */
export function logView(log: RaftLog): unknown[] {
  const snap = log.raftSnapshot;
  return [
    {
      type: 'raft_snapshot',
      last_included_index: snap.lastIncludedIndex,
      last_included_term: snap.lastIncludedTerm,
      voters: [...snap.voters],
    },
    ...log.all(),
  ];
}

export function inspectView(s: RaftViewState): RaftInspection {
  const progress: RaftInspection['progress'] = {};
  for (const [peer, pr] of s.progress) progress[peer] = { next: pr.next, match: pr.match };
  return {
    id: s.id,
    role: s.role,
    preCandidate: s.preCandidate,
    term: s.term,
    votedFor: s.votedFor,
    leaderId: s.leaderId,
    commitIndex: s.commitIndex,
    lastApplied: s.lastApplied,
    voters: s.voters,
    raftSnapshot: s.log.raftSnapshot,
    entries: s.log.all(),
    lastIndex: s.log.lastIndex,
    lastTerm: s.log.lastTerm,
    progress,
  };
}
