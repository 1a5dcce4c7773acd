/**
 * The single-leader core's wire: its replicated log entry and every message a leader and a follower
 * exchange, tagged `kind` like raft's. A cheap guard keeps another strategy's payload from being
 * misread. No behaviour here: what a message does is the core's business (single-leader.ts).
 */
import type { NodeId, Version } from '../../core.js';

/**
 * One replicated log entry (the same idea as raft's LogEntry, so the same name: an entry of the log
 * a leader ships to its followers). `ops` holds one operation, or several for an atomic batch
 * (applied all-or-nothing); a null value is a delete.
 */
export interface LogEntry {
  index: number;
  /** The epoch of the leader that appended it (failover ranks candidates by the last one first). */
  epoch: number;
  /** Hybrid-logical-clock time the leader stamped when it appended the entry. */
  timestamp: number;
  /**
   * The leader that appended the entry. Every replica stamps the versions it applies with this
   * writer, not with the leader it happens to follow when it catches up, so copies agree.
   */
  node_id: NodeId;
  ops: Array<{ key: string; value: string | null }>;
}

/** Leader -> follower: entries after `prevIndex`, with the leader's last and commit index. */
export interface AppendMessage {
  kind: 'append';
  epoch: number;
  leader: NodeId;
  prevIndex: number;
  entries: LogEntry[];
  /** The leader's last index when sent: a follower with entries past it holds orphans. */
  leaderLastIndex: number;
  leaderCommit: number;
}

/**
 * Leader -> follower too far behind the retained log (or on a diverged history): a full copy of the
 * leader's store at `index`, which replaces the follower's store and log. Not a raft snapshot: no
 * log prefix is described, the whole store is simply sent again.
 */
export interface StoreCopyMessage {
  kind: 'store_copy';
  epoch: number;
  leader: NodeId;
  index: number;
  store: Version[];
  leaderLastIndex: number;
  leaderCommit: number;
  /** The epoch of the entry at `index` (kept through store copies so failover can rank by it). */
  lastEntryEpoch?: number;
}

/**
 * Follower -> leader. `matchIndex` is the follower's last index; success=false asks for the entries
 * after it, or for a store copy when matchIndex < 0 (a diverged or orphaned history).
 */
export interface AckMessage {
  kind: 'ack';
  epoch: number;
  matchIndex: number;
  success: boolean;
}

export type SingleLeaderMessage = AppendMessage | StoreCopyMessage | AckMessage;

const messageKinds: ReadonlySet<string> = new Set<SingleLeaderMessage['kind']>(['append', 'store_copy', 'ack']);

/** Peers are trusted code; this only keeps a stray payload (another strategy's) from being misread. */
export function isSingleLeaderMessage(msg: unknown): msg is SingleLeaderMessage {
  if (typeof msg !== 'object' || msg === null) return false;
  const m = msg as { kind?: unknown; epoch?: unknown };
  return typeof m.kind === 'string' && messageKinds.has(m.kind) && typeof m.epoch === 'number';
}
