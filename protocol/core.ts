/**
 * The contract every replication strategy implements: a pure state machine in the shape of etcd
 * raft's Step/Ready. Inputs are client requests, peer messages and ticks, each with the current
 * time injected; outputs (messages to send, client replies, events, durable records) are moved out
 * with drain(). A core never touches a socket, a thread, the wall clock or Math.random: the same core
 * runs inside a worker_thread (live mode) and in one thread under the deterministic fabric (tests,
 * fuzzing, detsim). Types and one constructor only; it imports nothing from src/ (the fabric and the
 * cores both build on it). The timing defaults and their checks are in timings.ts.
 */
import type { Rng } from './rng.js';

export type { Rng };

export type NodeId = string;
export type Strategy = 'single_leader' | 'multi_leader' | 'leaderless' | 'raft';
export type ReplicationMode = 'async' | 'sync' | 'semi_sync';
export type ConflictResolver = 'lww' | 'vector_clock' | 'crdt' | 'manual';
export type ConsistencyLevel = 'quorum' | 'local_quorum' | 'each_quorum';
export type ReadRepairMode = 'async' | 'sync' | 'digest';

/** The effective cluster configuration: every default filled in (../shared/specs/DECISIONS.md). */
export interface ClusterConfig {
  strategy: Strategy;
  node_count: number;
  replication_mode: ReplicationMode;
  conflict_resolver: ConflictResolver;
  quorum_n: number;
  quorum_w: number;
  quorum_r: number;
  regions: number;
  inter_region_latency_ms: number;
  consistency_level: ConsistencyLevel;
  read_repair_mode: ReadRepairMode;
  sloppy_quorum: boolean;
}

/** Protocol timing knobs with their units; defaults and validateTimings() are in timings.ts. */
export interface CoreTimings {
  /** Sync/semi-sync ack wait, raft commit wait, quorum wait. */
  requestTimeoutMs: number;
  /** Leader resends unacknowledged entries after this long without progress. */
  retransmitMs: number;
  /** A leader's heartbeat interval; below electionTimeoutMsMin, so a live leader is never voted out. */
  heartbeatMs: number;
  /** Each election timeout is drawn from [min, max] (min <= max). */
  electionTimeoutMsMin: number;
  electionTimeoutMsMax: number;
  /** Raft: applied entries between two raftSnapshots (log compaction). */
  snapshotEveryEntries: number;
  /**
   * Raft: applied entries a leader keeps for followers still answering, so they catch up by
   * AppendEntries rather than InstallSnapshot (etcd's SnapshotCatchUpEntries); 0 compacts all that
   * is applied at each snapshotEveryEntries, whatever the followers hold (cores/raft/compaction.ts).
   */
  snapshotCatchUpEntries: number;
  /** Most entries one replication message carries. */
  maxEntriesPerMessage: number;
}

/**
 * One stored version of a key, as the cores keep it. The HTTP edge turns it into the spec's
 * KVEntry (value base64-encoded). `timestamp` is a hybrid-logical-clock value in Unix nanoseconds.
 */
export interface Version {
  key: string;
  value: string;
  tombstone: boolean;
  timestamp: number;
  node_id: NodeId;
  version: number;
  vclock: Record<NodeId, number>;
}

export type ClientOp =
  | { op: 'write'; key: string; value: string; client_id?: string }
  | { op: 'delete'; key: string; client_id?: string }
  | { op: 'read'; key: string; client_id?: string }
  | { op: 'batch'; entries: Array<{ key: string; value: string }>; client_id?: string };

export interface ClientRequest {
  /** Unique per node handle; the reply carries it back. */
  id: number;
  op: ClientOp;
}

/**
 * Domain outcomes are values with codes, never exceptions (STYLE.md). A core names what happened;
 * the HTTP status is decided once, at the edge, by statusOf(code, opKind) in errors.ts.
 */
export type ErrorCode =
  | 'not_leader'
  | 'no_leader'
  /** Not confirmed in time (sync/semi-sync ack, commit, read confirmation); often indeterminate. */
  | 'timeout'
  | 'quorum_not_met'
  /** An unknown key (reads) or an unknown node. */
  | 'not_found'
  | 'paused'
  /** Malformed input: a bad control argument, an empty batch, a missing query parameter. */
  | 'bad_request'
  /** A command or option this strategy does not support. */
  | 'unsupported'
  /** Well formed, but the current state refuses it (a membership change in progress, nothing to resolve). */
  | 'refused'
  /** The write would take the node's stored bytes past its budget (REPLSIM_NODE_MEMORY_MB). */
  | 'storage_full'
  /** The node's worker exited (crashed, killed or out of memory) before answering. */
  | 'node_crashed';

export type ClientResult = { kind: 'entry'; entry: Version; node_id: NodeId } | { kind: 'batch'; entries: Version[] };

export type ClientReply =
  | { id: number; ok: true; result: ClientResult }
  | {
      id: number;
      ok: false;
      code: ErrorCode;
      error: string;
      /** The write may or may not have taken effect (sync timeout): the history records it as unknown. */
      indeterminate?: boolean;
      /** For not_leader: who the leader is, when known. */
      leader_id?: NodeId;
    };

/** An event for the /ws stream (../shared/specs/DECISIONS.md envelope); the shell adds cluster_id and timestamp. */
export interface CoreEvent {
  type: string;
  node_id?: NodeId;
  data?: Record<string, unknown>;
}

export interface OutMessage {
  to: NodeId;
  msg: unknown;
}

export interface CoreOutput {
  messages: OutMessage[];
  replies: ClientReply[];
  events: CoreEvent[];
  /**
   * Durable hand-off, etcd raft's Ready contract: the records of what this step changed in the
   * node's durable state (raft: term, vote, log, raftSnapshot; single-leader: log and store). The
   * shell hands them to storage outside the worker before it posts any message or reply of the
   * same step, so a crash after a send never loses what the send promised. Folding every record
   * drained since the node was created, in order, with the strategy's DurableFold gives the state
   * persistentState() returns at that moment; a restarted node is built from that fold
   * (CoreOptions.persisted). Optional while a strategy has nothing durable.
   */
  durable?: unknown[];
}

/**
 * Folds durable records into the state a restarted core is built from (CoreOptions.persisted).
 * Pure; `state` is undefined before the first record. A record may replace the whole state
 * (a checkpoint), which lets storage drop every record before it.
 */
export interface DurableFold {
  fold(state: unknown, record: unknown): unknown;
  /** True when `record` replaces the whole state, so storage may forget the records before it. */
  isCheckpoint(record: unknown): boolean;
}

export type ControlCommand =
  /** Physical-clock offset of this node, milliseconds (ClockSkewRequest). */
  | { kind: 'clock_skew'; ms: number }
  /** PATCH config: replication_mode (single_leader only). */
  | { kind: 'replication_mode'; mode: ReplicationMode }
  /** The cluster's node set changed (node added or removed) outside the log. */
  | { kind: 'peers'; peers: NodeId[] }
  /** single_leader failover: this node becomes the leader (or learns who is). */
  | { kind: 'set_leader'; leader_id: NodeId; epoch?: number }
  /** raft membership change through the log. */
  | { kind: 'add_server'; node_id: NodeId; reqId: number }
  | { kind: 'remove_server'; node_id: NodeId; reqId: number }
  /** Strategy-specific extension point (manual conflict resolution, anti-entropy, ...). */
  | { kind: 'custom'; name: string; args?: unknown; reqId?: number };

/** A control's outcome: a value, like a client reply (the edge maps `code` with statusOf). */
export type ControlResult = { ok: true; data?: unknown } | { ok: false; code: ErrorCode; error: string };

export interface CoreStatus {
  role: string;
  commit_index: number;
  last_applied: number;
  leader_id: NodeId | '';
  term?: number;
  /** Entries this node is behind its leader (followers), as this node knows it. */
  lag: number;
  /** Leader only: per-follower progress, for live lag values and sim_replication_lag_ms. */
  followers?: Record<NodeId, { match_index: number; lag_entries: number; lag_ms: number }>;
  /** Strategy-specific extras shown in ClusterMetrics. */
  extra?: Record<string, unknown>;
}

export interface CoreOptions {
  id: NodeId;
  cluster_id: string;
  /** Every member of the cluster, this node included, in creation order. */
  peers: NodeId[];
  config: ClusterConfig;
  timings: CoreTimings;
  rng: Rng;
  /** Start time (ms). */
  now: number;
  /** Region index per node (leaderless geo clusters). */
  regions?: Record<NodeId, number>;
  /** State a previous incarnation persisted (raft restart); absent on first start. */
  persisted?: unknown;
  /**
   * Budget on the bytes this node stores (keys + values + the log it keeps, each entry counted with
   * storedEntryOverheadBytes); a client write that would pass it is refused with `storage_full`.
   * Absent: unbounded (deterministic tests).
   */
  storedBytesMax?: number;
}

export interface NodeCore {
  readonly id: NodeId;
  onClient(req: ClientRequest, now: number): void;
  onMessage(from: NodeId, msg: unknown, now: number): void;
  onTick(now: number): void;
  /** Absolute time (ms) at which onTick must next run; Infinity when nothing is pending. */
  nextDeadline(): number;
  /** Moves pending output into `out` (appending) and clears it. */
  drain(out: CoreOutput): void;
  control(cmd: ControlCommand, now: number): ControlResult;
  status(now: number): CoreStatus;
  /** GET nodes/{id}/log: LogEntry[] (free-form objects). */
  logView(): unknown[];
  /** GET nodes/{id}/store: key -> Version (tombstones included). */
  storeView(): Record<string, Version>;
  /** What must survive a restart (raft term, vote, log, raftSnapshot); undefined when nothing. */
  persistentState?(): unknown;
}

export type CoreFactory = (opts: CoreOptions) => NodeCore;

export function emptyOutput(): CoreOutput {
  return { messages: [], replies: [], events: [], durable: [] };
}
