/**
 * The data Raft moves around: log entries (which double as the GET .../log view), the raftSnapshot
 * that replaces a compacted log prefix, the messages between peers, and what survives a restart.
 * Plain JSON-able objects only (they cross worker boundaries through msgpack); no behaviour here.
 */
import type { NodeId, Version } from '../../core.js';

interface EntryBase {
  index: number;
  term: number;
  /** The leader that accepted the entry into its log. */
  node_id: NodeId;
  /** Hybrid-logical-clock time (Unix ns) the leader stamped when it accepted the entry. */
  timestamp: number;
}

/** What an entry does, before the leader gives it an index, a term and a timestamp. */
export type EntryBody =
  | { type: 'put'; key: string; value: string }
  | { type: 'delete'; key: string }
  | { type: 'batch'; entries: Array<{ key: string; value: string }> }
  | { type: 'config'; voters: NodeId[] }
  | { type: 'noop' };

/**
 * One log entry. `noop` is the entry a new leader appends at the start of its term (Raft §8: it
 * commits the previous terms' entries and anchors ReadIndex); `config` is a single-server membership
 * change carrying the complete new voter set (dissertation §4.1).
 */
export type LogEntry = EntryBase & EntryBody;

export type EntryType = LogEntry['type'];

/** A node's role (Figure 2); a candidate may still be in its PreVote round (dissertation §9.6). */
export type RaftRole = 'follower' | 'candidate' | 'leader';

/** The state machine at a log index, replacing every entry up to it (Raft §7). Immutable once built. */
export interface RaftSnapshot {
  lastIncludedIndex: number;
  lastIncludedTerm: number;
  /** The membership in effect at lastIncludedIndex. */
  voters: NodeId[];
  store: Record<string, Version>;
}

/** What a node must have on stable storage before it answers (Raft Figure 2, "Persistent state"). */
export interface RaftPersistentState {
  term: number;
  votedFor: NodeId | null;
  log: LogEntry[];
  raftSnapshot: RaftSnapshot;
}

/**
 * RequestVote (§5.2), also used for PreVote (dissertation §9.6): a pre-vote asks "would you vote for
 * me at `term`?" without anyone changing term or vote.
 */
export interface VoteRequest {
  kind: 'vote_req';
  term: number;
  preVote: boolean;
  lastLogIndex: number;
  lastLogTerm: number;
}

/**
 * `term` is the responder's term, except for a granted pre-vote where it echoes the proposed term
 * (so that the candidate can match the answer to its round).
 */
export interface VoteResponse {
  kind: 'vote_resp';
  term: number;
  preVote: boolean;
  granted: boolean;
}

/** AppendEntries (§5.3). `seq` is the leader's ReadIndex round (dissertation §6.4), echoed back. */
export interface AppendRequest {
  kind: 'append';
  term: number;
  prevLogIndex: number;
  prevLogTerm: number;
  entries: LogEntry[];
  leaderCommit: number;
  /** The leader's last log index when sent: followers report lag against it. */
  leaderLastIndex: number;
  seq: number;
}

/**
 * On success `matchIndex` is the last index the request proved equal to the leader's log. On a
 * mismatch the follower sends the fast back-off hints of §5.3: the term of its entry at
 * prevLogIndex (`conflictTerm`, 0 when it has no entry there) and the first index it holds of that
 * term (`conflictIndex`), plus the rejected prevLogIndex so that a stale rejection can be ignored.
 */
export interface AppendResponse {
  kind: 'append_resp';
  term: number;
  success: boolean;
  matchIndex: number;
  rejectIndex: number;
  conflictTerm: number;
  conflictIndex: number;
  seq: number;
}

/**
 * An empty heartbeat for a follower that is being sent a raftSnapshot, whose log the leader cannot
 * address by (index, term). `leaderCommit` is capped at what the follower is known to match
 * (etcd raft's MsgHeartbeat rule), so it never commits an entry the follower does not share.
 */
export interface HeartbeatRequest {
  kind: 'heartbeat';
  term: number;
  leaderCommit: number;
  leaderLastIndex: number;
  seq: number;
}

export interface HeartbeatResponse {
  kind: 'heartbeat_resp';
  term: number;
  seq: number;
}

/** InstallSnapshot (§7), sent whole: stores in this simulator are small. */
export interface SnapshotRequest {
  kind: 'snapshot';
  term: number;
  raftSnapshot: RaftSnapshot;
  leaderLastIndex: number;
  seq: number;
}

export interface SnapshotResponse {
  kind: 'snapshot_resp';
  term: number;
  matchIndex: number;
  seq: number;
}

export type RaftMessage =
  | VoteRequest
  | VoteResponse
  | AppendRequest
  | AppendResponse
  | HeartbeatRequest
  | HeartbeatResponse
  | SnapshotRequest
  | SnapshotResponse;

const messageKinds: ReadonlySet<string> = new Set<RaftMessage['kind']>([
  'vote_req',
  'vote_resp',
  'append',
  'append_resp',
  'heartbeat',
  'heartbeat_resp',
  'snapshot',
  'snapshot_resp',
]);

/** Peers are trusted code; this only keeps a stray payload (another strategy's) from being misread. */
export function isRaftMessage(msg: unknown): msg is RaftMessage {
  if (typeof msg !== 'object' || msg === null) return false;
  const m = msg as { kind?: unknown; term?: unknown };
  return typeof m.kind === 'string' && messageKinds.has(m.kind) && typeof m.term === 'number';
}

export function isPersistentState(x: unknown): x is RaftPersistentState {
  if (typeof x !== 'object' || x === null) return false;
  const p = x as Partial<RaftPersistentState>;
  return (
    typeof p.term === 'number' &&
    Array.isArray(p.log) &&
    typeof p.raftSnapshot === 'object' &&
    p.raftSnapshot !== null &&
    typeof p.raftSnapshot.lastIncludedIndex === 'number'
  );
}
