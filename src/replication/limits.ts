/**
 * Every cap, bound and default of the replication simulator in one place, units in the names, each
 * saying what happens past it (on the model of clocklab/limits.ts). The request bounds live in
 * protocol/replication-limits.ts (protocol imports nothing from src) and are re-exported here.
 * Nothing here is behaviour; relations between constants are checked when this module loads.
 */
import { invariant } from '../util/assert.js';
import { defaultTimings, type CoreTimings } from './core.js';

export {
  batchEntriesMax, clientIdCharsMax, clockSkewMsMax, clusterIdCharsMax, keyCharsMax, latencyMsMax, nodeIdCharsMax,
  partitionGroupNodesMax, valueCharsMax,
} from '../../protocol/replication-limits.js';
import { clockSkewMsMax, nodeIdCharsMax } from '../../protocol/replication-limits.js';

// ---- clusters

/** Most clusters at once (each node is a worker thread); one more is a 409. */
export const clustersMaxDefault = 200;
/** Most nodes in one cluster (node_count, add-node); more is a 400 at creation, a 409 on add-node. */
export const nodeCountMax = 64;

// ---- time

/**
 * Largest distance, ms, a remote HLC timestamp may lie ahead of a node's physical clock and still
 * be adopted into its hybrid logical clock (CockroachDB's max offset, 500 ms there). Further ahead,
 * the clock refuses it and counts it (`hlc_remote_refused` in the node's status); the message that
 * carried it is still applied, so replicas converge. 30 s is six times the skew the ClockSkewLWW
 * scenario teaches with (5 s): skews up to ±15 s per node keep the HLC causal; larger skews (the
 * clock-skew endpoint accepts up to clockSkewMsMax to show it) make nodes refuse each other's clocks,
 * which is what a real system with a max offset does. No value can move a clock further than this.
 */
export const hlcMaxOffsetMs = 30_000;
/**
 * The corrupt debugging route accepts a timestamp at most this far ahead of the node's current HLC
 * or physical time, ms (a day); further is a 400. Peers never adopt it (hlcMaxOffsetMs is smaller).
 */
export const corruptTimestampAheadMsMax = 86_400_000;

// ---- /ws

/** Default most /ws clients at once (REPLSIM_WS_CLIENTS_MAX); one more is refused with 503 {error}. */
export const wsClientsMaxDefault = 64;
/** Bytes a /ws client may have queued before further events to it are dropped and counted. */
export const wsClientQueueBytes = 1024 * 1024;

/** REPLSIM_WS_CLIENTS_MAX when it is a positive integer, else the default. */
export function wsClientsMaxFromEnv(env: Record<string, string | undefined> = process.env): number {
  const n = Number(env['REPLSIM_WS_CLIENTS_MAX']);
  return Number.isInteger(n) && n > 0 ? n : wsClientsMaxDefault;
}

// ---- timings (values in core.ts's defaultTimings; configured ones are checked here)

/**
 * Checks configured protocol timings the way etcd's Config.validate() does: a value with the first
 * problem named, never a throw. heartbeat < election timeout min <= max keeps followers from
 * starting elections against a live leader.
 */
export function validateTimings(t: CoreTimings): { ok: true } | { ok: false; error: string } {
  const positive: Array<keyof CoreTimings> = [
    'requestTimeoutMs', 'retransmitMs', 'heartbeatMs', 'electionTimeoutMsMin', 'electionTimeoutMsMax',
    'snapshotEveryEntries', 'maxEntriesPerMessage',
  ];
  for (const k of positive) {
    const v = t[k];
    if (!Number.isFinite(v) || v <= 0) return { ok: false, error: `${k} must be a positive number (got ${v})` };
  }
  for (const k of ['snapshotEveryEntries', 'maxEntriesPerMessage'] as const) {
    if (!Number.isInteger(t[k])) return { ok: false, error: `${k} must be an integer (got ${t[k]})` };
  }
  const { heartbeatMs, electionTimeoutMsMin: min, electionTimeoutMsMax: max } = t;
  if (heartbeatMs >= min) {
    return { ok: false, error: `heartbeatMs (${heartbeatMs}) must be less than electionTimeoutMsMin (${min})` };
  }
  if (min > max) {
    return { ok: false, error: `electionTimeoutMsMin (${min}) must be at most electionTimeoutMsMax (${max})` };
  }
  return { ok: true };
}

// ---- how the constants relate (TigerBeetle's comptime asserts, run once at load)

const defaultTimingsCheck = validateTimings(defaultTimings);
invariant(defaultTimingsCheck.ok, () => `invalid defaultTimings: ${JSON.stringify(defaultTimingsCheck)}`);
// A corrupted copy may lie further ahead than any peer will adopt: corrupt can never pin a clock.
invariant(hlcMaxOffsetMs < corruptTimestampAheadMsMax, 'hlcMaxOffsetMs must be below corruptTimestampAheadMsMax');
// The ClockSkewLWW lesson (5 s behind, still causal) needs the max offset well above that skew.
invariant(hlcMaxOffsetMs >= 2 * 5_000, 'hlcMaxOffsetMs must leave room for the 5 s ClockSkewLWW skew');
invariant(hlcMaxOffsetMs <= clockSkewMsMax, 'a skew beyond the max offset must be expressible');
invariant(nodeIdCharsMax >= `n${nodeCountMax}`.length, 'node ids n1..nodeCountMax fit nodeIdCharsMax');
invariant(wsClientsMaxDefault > 0, 'the /ws client cap is positive');
invariant(wsClientQueueBytes > 0, 'the /ws queue cap is positive');

// ---- node crashes, deadlines and memory (issue 16: crash/restart and budgets)

/**
 * Longest wait, ms, for one node's answer when an endpoint aggregates over nodes (cluster state,
 * lists, metrics, /metrics). A node silent past it is reported `unresponsive` (its last known
 * status is shown) instead of holding the whole answer; a crashed node answers at once as `crashed`.
 */
export const nodeCallDeadlineMs = 2_000;
/** Longest stall (`POST .../nodes/{id}/stall`: the node's thread blocked, a GC pause), ms; more is a 400. */
export const nodeStallMsMax = 30_000;

/** Default per-node budget on stored bytes, MiB (REPLSIM_NODE_MEMORY_MB). */
export const nodeMemoryMbDefault = 64;
/** Smallest and largest REPLSIM_NODE_MEMORY_MB accepted; outside, the default is used (and logged). */
export const nodeMemoryMbMin = 1;
export const nodeMemoryMbMax = 4_096;
/**
 * Bytes counted per stored entry on top of its key and value characters (a Version object, its
 * vector clock and map slot): so a million tiny keys are counted near what they cost on the heap.
 */
export const storedEntryOverheadBytes = 64;
/**
 * A node worker's V8 old-generation limit is workerHeapPerBudget x budget + workerHeapBaseMb: room
 * for the budgeted data held twice (a store and the replication message or raftSnapshot built from
 * it, or a value as two-byte string) plus transient decode copies, over the ~10 MiB an idle node
 * uses. The budget refuses writes (507) well before this limit is reached.
 */
export const workerHeapPerBudget = 4;
export const workerHeapBaseMb = 48;
/**
 * Versions a node is sent by repair, hinted handoff or anti-entropy (leaderless) are applied past
 * its budget (refusing them would keep replicas apart), up to this multiple of it; beyond, they are
 * refused too and counted, so the heap limit (workerHeapPerBudget) always has room.
 */
export const repairOverBudgetFactorMax = 2;
/** Single-leader keeps at most this share of its budget as retained log (older entries are compacted). */
export const retainedLogShareOfBudget = 0.25;
/**
 * A core writes a durable checkpoint (its whole durable state, after which the front forgets older
 * records) once the records since the last one outweigh both this and its stored bytes: the front
 * keeps at most about twice a node's stored bytes, and checkpoint cost stays linear in writes.
 */
export const durableCheckpointMinBytes = 1024 * 1024;

/**
 * Measured front-process plus worker memory of one idle live node, bytes: RSS growth per node over
 * 60 three-node clusters, 3 s after creation (this machine, Node 20): single_leader 8.75 MiB, raft
 * 8.90 MiB, leaderless 11.17 MiB (its heartbeats and detectors); the largest, rounded down to whole
 * MiB. REPLSIM_MAX_NODES defaults to the nodes that fit in nodesShareOfMachineMemory of the machine.
 */
export const liveNodeCostBytes = 11 * 1024 * 1024;
export const nodesShareOfMachineMemory = 0.5;
/** Never default below this many live nodes (a small machine still runs a few clusters). */
export const maxNodesDefaultMin = 16;

/** REPLSIM_NODE_MEMORY_MB when it is an integer in range, else the default. */
export function nodeMemoryMbFromEnv(env: Record<string, string | undefined> = process.env): number {
  const n = Number(env['REPLSIM_NODE_MEMORY_MB']);
  return Number.isInteger(n) && n >= nodeMemoryMbMin && n <= nodeMemoryMbMax ? n : nodeMemoryMbDefault;
}

/** Smallest and largest REPLSIM_NODE_HEAP_MB accepted; outside, the heap is sized from the budget. */
export const workerHeapMbMin = 16;
export const workerHeapMbMax = 16_384;

/**
 * The worker heap limit (maxOldGenerationSizeMb) for a node with `budgetMb` of stored bytes.
 * REPLSIM_NODE_HEAP_MB overrides it: an operator's escape hatch, and how the tests make a node run
 * out of heap for real (a heap smaller than its budget needs), to see an OOM handled as a crash.
 */
export function workerHeapMb(budgetMb: number, env: Record<string, string | undefined> = process.env): number {
  const override = Number(env['REPLSIM_NODE_HEAP_MB']);
  if (Number.isInteger(override) && override >= workerHeapMbMin && override <= workerHeapMbMax) return override;
  return Math.ceil(workerHeapPerBudget * budgetMb + workerHeapBaseMb);
}

/** REPLSIM_MAX_NODES when a positive integer, else derived from the machine's memory. */
export function maxNodesFromEnv(totalMemBytes: number, env: Record<string, string | undefined> = process.env): number {
  const n = Number(env['REPLSIM_MAX_NODES']);
  if (Number.isInteger(n) && n > 0) return n;
  return Math.max(maxNodesDefaultMin, Math.floor((totalMemBytes * nodesShareOfMachineMemory) / liveNodeCostBytes));
}

invariant(nodeCallDeadlineMs > 0 && nodeStallMsMax > nodeCallDeadlineMs, 'a stall can outlast the aggregate deadline');
invariant(nodeMemoryMbMin <= nodeMemoryMbDefault && nodeMemoryMbDefault <= nodeMemoryMbMax, 'the default budget is in range');
invariant(workerHeapPerBudget >= 2 * repairOverBudgetFactorMax, 'a worker heap holds a store filled by repairs up to its cap, twice');
invariant(retainedLogShareOfBudget > 0 && retainedLogShareOfBudget < 1, 'the retained log is a share of the budget');
// 24 GiB must allow 200 clusters x 5 nodes (a later issue's target).
invariant(Math.floor((24 * 1024 ** 3 * nodesShareOfMachineMemory) / liveNodeCostBytes) >= 1_000, '1,000 live nodes fit on a 24 GiB machine by default');
