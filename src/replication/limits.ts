/**
 * Every cap, bound and default of the replication simulator in one place, units in the names, each
 * saying what happens past it (on the model of clocklab/limits.ts). The request bounds live in
 * protocol/replication-limits.ts (protocol imports nothing from src) and are re-exported here.
 * Nothing here is behaviour; relations between constants are checked when this module loads.
 */
import { invariant } from '../util/assert.js';
import {
  coreTimingsDefault,
  entriesPerMessageMaxDefault,
  snapshotEveryEntriesDefault,
  validateTimings,
} from '../../protocol/timings.js';

export {
  batchEntriesMax,
  clientIdCharsMax,
  clockSkewMsMax,
  clusterIdCharsMax,
  keyCharsMax,
  latencyMsMax,
  nodeIdCharsMax,
  partitionGroupNodesMax,
  valueCharsMax,
} from '../../protocol/replication-limits.js';
import { clockSkewMsMax, nodeIdCharsMax } from '../../protocol/replication-limits.js';
import { latencyMsMax, valueCharsMax } from '../../protocol/replication-limits.js';
import {
  electionTimeoutMsMaxDefault,
  electionTimeoutMsMinDefault,
  heartbeatMsDefault,
  requestTimeoutMsDefault,
} from '../../protocol/timings.js';

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

/**
 * Longest batching window a /ws client may ask for (`?batch_ms=`, default 0: one frame per event), ms.
 * A batched client gets a JSON array of the frames of each window, in order, in one WebSocket message.
 */
export const wsBatchMsMax = 1_000;
/** Most frames one batch holds; a window that gathers more is sent at once and a new one starts. */
export const wsBatchFramesMax = 4_096;

/** REPLSIM_WS_CLIENTS_MAX when it is a positive integer, else the default. */
export function wsClientsMaxFromEnv(env: Record<string, string | undefined> = process.env): number {
  const n = Number(env['REPLSIM_WS_CLIENTS_MAX']);
  return Number.isInteger(n) && n > 0 ? n : wsClientsMaxDefault;
}

// ---- /ws link_stats, history and snapshot (link-stats.ts, history.ts; README "Watching a cluster")

/** How often a watched cluster's per-link aggregates are sent (a link_stats frame), ms. */
export const linkStatsIntervalMs = 100;
/**
 * Message type names link_stats tells apart (all strategies together use about 30); a new type
 * past it is counted as `other`.
 */
export const linkStatsKindsMax = 64;
/** Longest message type name read from a message's bytes; longer is counted as `other`. */
export const linkStatsKindCharsMax = 32;
/** Operations one GET .../history answers when `limit` is not given. */
export const historyPageOpsDefault = 1_000;
/** Most operations one GET .../history answers (`limit` above it is a 400). */
export const historyPageOpsMax = 10_000;
/**
 * Fault intervals (pause, crash, stall, partition, latency, drop, clock skew, heal) a cluster
 * remembers for its history; past it the oldest is forgotten and counted (`faults_dropped`).
 */
export const faultIntervalsMax = 1_024;

// ---- timings

/**
 * Protocol timing defaults (heartbeat, election timeouts, request timeout, ...) and validateTimings()
 * (etcd's Config.validate(): heartbeat < election timeout min <= max, positive values), in
 * protocol/timings.ts so the deterministic fabric can use them too; re-exported here.
 */
export {
  coreTimingsDefault,
  electionTimeoutMsMaxDefault,
  electionTimeoutMsMinDefault,
  entriesPerMessageMaxDefault,
  heartbeatMsDefault,
  requestTimeoutMsDefault,
  retransmitMsDefault,
  snapshotCatchUpEntriesDefault,
  snapshotEveryEntriesDefault,
  validateTimings,
  type TimingsCheck,
} from '../../protocol/timings.js';

// ---- raft (cores/raft.ts and cores/raft/*)

/**
 * Append times a raft leader remembers (one per entry it appended, for a follower's lag_ms). Past
 * it the oldest is forgotten: a follower further behind shows a lag_ms measured from the oldest
 * time still known (an underestimate), and nothing else changes.
 */
export const raftAppendTimesEntriesMax = 4096;
/**
 * Entries appended since the last durable checkpoint before a raft compaction writes the whole
 * state again (and only once they also outnumber the state's keys and entries). Below it a
 * compaction is a two-number record; storage keeps the records since the last checkpoint.
 */
export const raftCheckpointEntriesMin = 256;
/**
 * Settled proposals at the head of a raft node's deadline queue (and over half of it) before the
 * queue is copied without them: its memory stays within twice its live proposals plus this many.
 */
export const raftProposalQueueSettledEntriesMin = 1024;

/**
 * Messages in a row a raft follower can leave unanswered and still count as answering for log
 * compaction (cores/raft/compaction.ts, under snapshotCatchUpEntries > 0): past it the leader stops
 * keeping entries for it, and it is caught up by InstallSnapshot. A follower that answers gets a
 * handful of messages per round trip; a paused one gets one per flush, so under load it stops
 * holding the log back within this many flushes rather than after an election timeout.
 */
export const raftCatchUpUnansweredMessagesMax = 16;

/**
 * Compacted entries a raft log keeps, at least, before it builds its raftSnapshot's store (a copy
 * of the last one built with those entries applied) even though nobody read it (raft/log.ts); it
 * also waits for as many entries as that store has keys, so a build costs O(1) per entry.
 */
export const raftSnapshotFoldEntriesMin = 256;

invariant(raftAppendTimesEntriesMax >= entriesPerMessageMaxDefault, 'a full append message keeps exact lag_ms');
invariant(raftCheckpointEntriesMin >= snapshotEveryEntriesDefault, 'not every default compaction is a checkpoint');
invariant(raftCatchUpUnansweredMessagesMax > 0, 'a follower that answers every message holds the compaction');
invariant(raftProposalQueueSettledEntriesMin > 0, 'the proposal queue compacts only past some settled proposals');

// ---- single_leader (cores/single-leader.ts and cores/single-leader/*)

/**
 * Log entries a single_leader node (leader or follower) keeps after compaction; a follower further
 * behind than that is sent a full copy of the leader's store (`store_copy`) instead of entries.
 * Kept short on purpose: an entry that outlives a few young-generation GC cycles is copied into
 * the old generation, and with 10,000 retained every entry of every node was (the V8 GC helper
 * threads' CPU during the write benchmark went from ~20% to ~13% of a core).
 */
export const singleLeaderRetainedLogEntriesMax = 1_000;
/**
 * Entries past singleLeaderRetainedLogEntriesMax before the log is compacted, in one chunk (a
 * splice is O(n), so not one entry at a time): a node holds at most the sum of the two.
 */
export const singleLeaderCompactChunkEntries = 250;
/**
 * When the retained log passes its share of the byte budget (retainedLogShareOfBudget), compaction
 * drops the oldest entries until it is at most this fraction of that share (the newest entry stays).
 */
export const singleLeaderCompactTargetShareOfLogBudget = 0.75;
/**
 * Appends in flight to one follower. Past it, entries appended meanwhile wait for the follower's
 * ack (or the retransmit timer) and go out together in the next append: under load, fewer and
 * larger messages through the fabric, while a lone write still goes out at once.
 */
export const singleLeaderAppendsInFlightMax = 1;
/** GET .../log shows at most this many of a single_leader node's newest retained entries. */
export const singleLeaderLogViewEntriesMax = 1_000;

invariant(singleLeaderCompactChunkEntries > 0, 'compaction drops at least one entry at a time');
invariant(
  singleLeaderCompactChunkEntries <= singleLeaderRetainedLogEntriesMax,
  'a compaction chunk is part of the log',
);
invariant(
  singleLeaderCompactTargetShareOfLogBudget > 0 && singleLeaderCompactTargetShareOfLogBudget < 1,
  'compaction by bytes lands below the log budget, so it does not run again on the next write',
);
invariant(singleLeaderAppendsInFlightMax >= 1, 'a follower can always be sent an append');
invariant(
  singleLeaderRetainedLogEntriesMax >= entriesPerMessageMaxDefault,
  'the retained log holds a full append message, so a follower one message behind gets entries, not a store copy',
);
invariant(singleLeaderLogViewEntriesMax > 0, 'the log view shows something');

// ---- multi_leader (cores/multi-leader.ts and cores/multi-leader/*)

/**
 * Local writes are batched for this long, ms, before one replication message per peer carries them
 * all; a write is acknowledged at once, so this only delays when the peers see it.
 */
export const multiLeaderFlushDelayMs = 5;
/**
 * Each node starts one Merkle anti-entropy exchange with the next peer (round robin) this often, ms
 * (the first one staggered at random within it): replicas that diverged behind a partition converge
 * this long after the heal per peer, with no further writes.
 */
export const multiLeaderAntiEntropyIntervalMs = 500;
/** GET .../log keeps this many recent multi_leader audit records; older ones are counted in log_dropped. */
export const multiLeaderAuditRecordsMax = 1_000;
/** status().extra lists the siblings of at most this many keys (sibling_keys counts them all). */
export const multiLeaderSiblingKeysShownMax = 20;

invariant(multiLeaderFlushDelayMs > 0, 'a flush is a later step, so writes in one step share a message');
invariant(
  multiLeaderFlushDelayMs < multiLeaderAntiEntropyIntervalMs,
  'a write is pushed well before anti-entropy would have to repair it',
);
invariant(multiLeaderAuditRecordsMax > 0 && multiLeaderSiblingKeysShownMax > 0, 'the views show something');

// ---- leaderless (cores/leaderless.ts and cores/leaderless/*)

import { batchEntriesMax as leaderlessBatchEntriesMax } from '../../protocol/replication-limits.js';

/**
 * Heartbeat interval to every peer, ms (they feed the peers' phi-accrual detectors): at least
 * leaderlessHeartbeatIntervalMsMin, stretched by leaderlessHeartbeatMsPerMember per member up to
 * leaderlessHeartbeatIntervalMsMax, so all-to-all heartbeats stay near members^2 / (members * 10 ms)
 * messages per second. Past the max a large cluster's heartbeats are no rarer: its message rate grows.
 */
export const leaderlessHeartbeatIntervalMsMin = 100;
export const leaderlessHeartbeatMsPerMember = 10;
export const leaderlessHeartbeatIntervalMsMax = 500;
/** A peer this node suspects gets heartbeats this often instead, ms (a paused inbox is not flooded). */
export const leaderlessSuspectedHeartbeatIntervalMs = 1000;
/** Hints and membership transfers are (re)sent this often until acknowledged, ms. */
export const leaderlessHandoffIntervalMs = 200;
/** One anti-entropy exchange with the next peer (round robin) this often, ms. */
export const leaderlessAntiEntropyIntervalMs = 1000;
/**
 * Most hinted versions a stand-in holds (over every owner); past it, it refuses (no ack) and counts
 * `hints_refused`.
 */
export const leaderlessHintedVersionsMax = 10_000;
/**
 * Most requests a coordinator has in flight (a batch counts one per entry); a request that would
 * pass it is refused at once (`timeout`, counted as `overloaded`).
 */
export const leaderlessPendingRequestsMax = 10_000;
/** A sloppy quorum recruits a stand-in when a replica has not answered within this share of the request timeout. */
export const leaderlessProbeShareOfTimeout = 0.25;
/** ... but never sooner than this, ms. */
export const leaderlessProbeMsMin = 50;
/** Audit records (GET nodes/{id}/log) a node keeps; older ones are dropped and counted in `log_dropped`. */
export const leaderlessAuditRecordsMax = 1000;
/** Keys whose ring walk (preference list, stand-ins) a node remembers; past it the cache starts over. */
export const leaderlessPlacementCacheKeysMax = 10_000;
/** Keys a `hinted_handoff` event lists; past it the event still counts every key (`count`). */
export const leaderlessHandoffEventKeysMax = 50;
/**
 * The `corrupt` control's bad copy is this much older than the copy it replaces, ms (when no
 * timestamp is given), so every correct replica's version beats it.
 */
export const leaderlessCorruptCopyAgeMs = 1_000_000;
/** N of the `placement` control when its `n` is absent. */
export const leaderlessPlacementControlNDefault = 3;

invariant(leaderlessHeartbeatIntervalMsMin <= leaderlessHeartbeatIntervalMsMax, 'leaderless heartbeat min <= max');
invariant(
  leaderlessSuspectedHeartbeatIntervalMs >= leaderlessHeartbeatIntervalMsMax,
  'a suspected peer is never sent heartbeats more often than a live one',
);
invariant(
  leaderlessProbeShareOfTimeout > 0 && leaderlessProbeShareOfTimeout < 1,
  'the probe comes before the deadline',
);
invariant(leaderlessProbeMsMin < requestTimeoutMsDefault, 'the default request timeout leaves room for a probe');
invariant(leaderlessPendingRequestsMax >= leaderlessBatchEntriesMax, 'an idle coordinator admits the largest batch');
invariant(leaderlessHintedVersionsMax > 0 && leaderlessAuditRecordsMax > 0, 'hints and the audit log keep something');
invariant(
  leaderlessPlacementCacheKeysMax > 0 && leaderlessHandoffEventKeysMax > 0,
  'caches and event lists keep something',
);
invariant(leaderlessCorruptCopyAgeMs > 0, 'a corrupted copy is older than the one it replaces');

// ---- how the constants relate (TigerBeetle's comptime asserts, run once at load)

const timingsDefaultCheck = validateTimings(coreTimingsDefault);
invariant(timingsDefaultCheck.ok, () => `invalid coreTimingsDefault: ${JSON.stringify(timingsDefaultCheck)}`);
// A corrupted copy may lie further ahead than any peer will adopt: corrupt can never pin a clock.
invariant(hlcMaxOffsetMs < corruptTimestampAheadMsMax, 'hlcMaxOffsetMs must be below corruptTimestampAheadMsMax');
// The ClockSkewLWW lesson (5 s behind, still causal) needs the max offset well above that skew.
invariant(hlcMaxOffsetMs >= 2 * 5_000, 'hlcMaxOffsetMs must leave room for the 5 s ClockSkewLWW skew');
invariant(hlcMaxOffsetMs <= clockSkewMsMax, 'a skew beyond the max offset must be expressible');
invariant(nodeIdCharsMax >= `n${nodeCountMax}`.length, 'node ids n1..nodeCountMax fit nodeIdCharsMax');
invariant(wsClientsMaxDefault > 0, 'the /ws client cap is positive');
invariant(wsClientQueueBytes > 0, 'the /ws queue cap is positive');
invariant(wsBatchMsMax > 0 && wsBatchFramesMax > 1, 'a /ws batch can hold more than one frame');
invariant(
  linkStatsIntervalMs > 0 && linkStatsKindsMax > 1 && linkStatsKindCharsMax > 0,
  'link_stats bounds are positive',
);
invariant(
  historyPageOpsDefault > 0 && historyPageOpsDefault <= historyPageOpsMax,
  'the default history page fits the cap',
);
invariant(faultIntervalsMax > 0, 'the fault log keeps something');

// ---- node crashes, deadlines and memory (issue 16: crash/restart and budgets)

/**
 * Longest wait, ms, for one node's answer when an endpoint aggregates over nodes (cluster state,
 * lists, metrics, /metrics). A node silent past it is reported `unresponsive` (its last known
 * status is shown) instead of holding the whole answer; a crashed node answers at once as `crashed`.
 */
export const nodeCallDeadlineMs = 2_000;

// ---- /metrics follower lag (routes/context.ts): the leaders' statuses, asked by one shared timer
/**
 * While /metrics is read, each cluster's leader is asked for its status once per this many ms (its
 * followers' lag), a slice of the clusters every lagRefreshTickMs, so a scrape serialises the
 * registry instead of waiting on a worker per cluster. A scrape asks a leader itself only when its
 * last answer is older than lagStatusAgeMsMax (the first scrape, a leader just elected).
 */
export const lagRefreshMs = 1_000;
export const lagRefreshTickMs = 100;
export const lagStatusAgeMsMax = 2 * lagRefreshMs;
/** The timer stops after this long without a scrape, ms (Prometheus scrapes every 15-60 s). */
export const lagRefreshIdleMs = 300_000;
invariant(
  lagRefreshTickMs > 0 && lagRefreshTickMs <= lagRefreshMs && lagRefreshMs < lagStatusAgeMsMax,
  'every leader is asked within its status age, in ticks no longer than the refresh',
);
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
 * Small on purpose: V8 counts the ArrayBuffers the front holds toward collecting its old generation.
 * At 1 MiB per node, a 3-node single_leader cluster under one-key writes made the front mark-compact
 * 6-11 times in 8 s (none in the build before durable storage); at 128 KiB, once.
 */
export const durableCheckpointMinBytes = 128 * 1024;

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

// ---- the warm pool of node actors (node-handle.ts ActorPool)

/**
 * Node actors (worker threads, every strategy's core loaded) kept started ahead of need
 * (REPLSIM_WORKER_POOL; 0 turns the pool off): as many as the largest cluster, so any cluster starts
 * from warm actors. The pool never holds more than REPLSIM_MAX_NODES minus the live nodes: idle
 * actors count against the same memory budget (about liveNodeCostBytes each).
 */
export const workerPoolActorsDefault = nodeCountMax;
/** Largest REPLSIM_WORKER_POOL accepted; above it (or not a whole number) the default is used. */
export const workerPoolActorsMax = 1_024;
/** Pool actors booting at once while it refills (a boot is CPU-bound: more would only queue for the cores). */
export const workerPoolBootsInFlightMax = 2;
/**
 * The pool refills only after this long without a node taken from it, ms: a cluster being created
 * (or a run of them) gets the cores to itself, and refilling happens between requests.
 */
export const workerPoolRefillQuietMs = 50;

/** REPLSIM_WORKER_POOL when it is an integer from 0 to workerPoolActorsMax, else the default. */
export function workerPoolActorsFromEnv(env: Record<string, string | undefined> = process.env): number {
  const raw = env['REPLSIM_WORKER_POOL'];
  const n = raw === undefined || raw.trim() === '' ? NaN : Number(raw);
  return Number.isInteger(n) && n >= 0 && n <= workerPoolActorsMax ? n : workerPoolActorsDefault;
}

invariant(workerPoolActorsDefault <= workerPoolActorsMax, 'the default pool size is accepted');
invariant(workerPoolBootsInFlightMax >= 1 && workerPoolRefillQuietMs >= 0, 'the pool can refill');

invariant(nodeCallDeadlineMs > 0 && nodeStallMsMax > nodeCallDeadlineMs, 'a stall can outlast the aggregate deadline');
invariant(
  nodeMemoryMbMin <= nodeMemoryMbDefault && nodeMemoryMbDefault <= nodeMemoryMbMax,
  'the default budget is in range',
);
invariant(
  workerHeapPerBudget >= 2 * repairOverBudgetFactorMax,
  'a worker heap holds a store filled by repairs up to its cap, twice',
);
invariant(retainedLogShareOfBudget > 0 && retainedLogShareOfBudget < 1, 'the retained log is a share of the budget');
// 24 GiB must allow 200 clusters x 5 nodes (a later issue's target).
invariant(
  Math.floor((24 * 1024 ** 3 * nodesShareOfMachineMemory) / liveNodeCostBytes) >= 1_000,
  '1,000 live nodes fit on a 24 GiB machine by default',
);

// ---- cluster configuration defaults (../shared/specs/DECISIONS.md; config.ts fills them in)

/** node_count when absent or below 1, for every strategy but leaderless. */
export const nodeCountDefault = 3;
/** node_count when absent or below 1, leaderless (N=3 replicas plus room for sloppy-quorum stand-ins). */
export const nodeCountLeaderlessDefault = 5;
/** Leaderless quorum_n when absent: this many replicas per key, or node_count when smaller. */
export const quorumNLeaderlessDefault = 3;
/** regions when absent; more than node_count is a 400. */
export const regionsDefault = 1;
/** inter_region_latency_ms when absent, ms (at most latencyMsMax, else a 400). */
export const interRegionLatencyMsDefault = 80;
/** GET .../placement: replicas in the preference list when `n` is absent (more than the nodes is a 400). */
export const placementReplicasDefault = 3;

// ---- live clusters (cluster.ts)

/**
 * Client operations kept per cluster for the linearizability checker; past it the oldest fall off
 * and are counted (the check then covers the newest ones only and says so).
 */
export const historyOpsMax = 20_000;
/** Default messages in flight on one fabric link (FABRIC_LINK_QUEUE_MAX); past it a send is dropped and counted. */
export const fabricLinkQueueMessagesMaxDefault = 1024;
/** Default messages held for one paused node (FABRIC_INBOX_MAX); past it a due message is dropped and counted. */
export const fabricInboxMessagesMaxDefault = 256;
/**
 * How often a cluster fails client requests past their front-side deadline, ms: a request whose node
 * never answers is answered `timeout` (indeterminate) at most this late.
 */
export const requestSweepMs = 500;
/**
 * Raft membership change right after an election: the leader refuses it until it commits an entry
 * of its term ("retry shortly"); asked again up to this many times, this far apart. After the last
 * refusal the refusal is the answer (a 409).
 */
export const membershipChangeRetriesMax = 10;
export const membershipChangeRetryMs = 100;

/**
 * The fabric caps of live clusters: FABRIC_LINK_QUEUE_MAX and FABRIC_INBOX_MAX when positive integers, else
 * the defaults.
 */
export function fabricLimitsFromEnv(env: Record<string, string | undefined> = process.env): {
  linkQueueMax: number;
  inboxMax: number;
} {
  const positiveInt = (raw: string | undefined, fallback: number): number => {
    const n = Number(raw);
    return Number.isInteger(n) && n > 0 ? n : fallback;
  };
  return {
    linkQueueMax: positiveInt(env['FABRIC_LINK_QUEUE_MAX'], fabricLinkQueueMessagesMaxDefault),
    inboxMax: positiveInt(env['FABRIC_INBOX_MAX'], fabricInboxMessagesMaxDefault),
  };
}

/** Size of a durable-storage chunk, bytes (durable-store.ts); a larger step gets a chunk of its own size. */
export const durableChunkBytes = 64 * 1024;
/**
 * Chunks a checkpoint released, kept for reuse by every node's store (at most this many: 4 MiB);
 * past it released chunks are left to the collector. Allocating fresh chunks at write rates made
 * the front's garbage collector run about five times as much (V8 collects on external-memory
 * growth): recycled, storage allocates nothing in a steady state. Not more: held spare chunks are
 * external memory too (see durableCheckpointMinBytes).
 */
export const durableSpareChunksMax = 64;

// ---- checker routes (checkers/routes.ts)

/** A node that does not answer a checker's store or control call within this, ms, is left out and named. */
export const checkerNodeCallDeadlineMs = 5_000;
/** Linearizability search budget, ms: default `timeout_ms`, and the most it may ask for (more is a 400). */
export const lincheckTimeoutMsDefault = 5_000;
export const lincheckTimeoutMsMax = 60_000;
/** How long an anti-entropy round waits for the replicas to agree, ms: default `wait_ms`, and its most (more: 400). */
export const antiEntropyWaitMsDefault = 3_000;
export const antiEntropyWaitMsMax = 30_000;
/** While waiting, replicas are re-compared this often, ms; exchanges are restarted every this many polls. */
export const replicaComparePollMs = 100;
export const antiEntropyExchangeEveryPolls = 3;
/**
 * Safe add-node: streaming to the new replica waits at most this long, ms, then narrows anyway (overlap keeps
 * it safe).
 */
export const addNodeStreamWaitMsMax = 5_000;
/** Safe add-node: extra wait on top of the request timeout for in-flight requests to finish, ms. */
export const addNodeDrainMarginMs = 100;
/** Longest value of a corrupted replica copy (POST .../corrupt), characters; longer is a 400. */
export const corruptValueCharsMax = 64 * 1024;
/** Diverged keys listed in one convergence report; the rest are only counted (`diverged_total`). */
export const divergedKeysListedMax = 1000;

// ---- scenarios and demos

/** The scenarios' loopback client abandons a call unanswered within this, ms (the server's timeouts are shorter). */
export const apiClientRequestTimeoutMs = 15_000;
/** Scenario reports kept; past it the oldest finished report goes (counted in `evicted`). */
export const scenarioReportsMax = 512;
/**
 * Delay before a scenario's first step, ms, so a client that learns the cluster id from the 201 can subscribe
 * first.
 */
export const scenarioLeadInMs = 150;
/** A scenario script running longer than this, ms, is stopped and reported as an error. */
export const scenarioScriptMsMax = 60_000;
/** Consistency demos: a raft leader not elected within this, ms, fails the demo's write (a 409). */
export const demoLeaderWaitMsMax = 3_000;
/** Consistency demos: a value not on every replica within this, ms, before the lag is injected, fails the demo. */
export const demoSettleMsMax = 1_500;
/** Demo runtime: steps at one virtual instant past which a demo is stopped as a livelock. */
export const demoStepsPerInstantMax = 100_000;
/** Sentences a demo narrative keeps; later ones are counted, not kept. */
export const narrativeSentencesMax = 80;
/** Seed of a demo run when `seed` is absent. */
export const demoSeedDefault = 42;

// ---- seeded swarms (swarm/*)

/** Register linearizability search: states explored per key before it gives up (reported, not a pass). */
export const lincheckStatesPerKeyMax = 2_000_000;
/** Trace lines a key-value swarm run keeps in memory (the hash still covers every line). */
export const kvSwarmTraceLinesMax = 50_000;
/** Most worker threads `make sim-long` / the swarm CLI runs at once (--jobs); more is a usage error. */
export const swarmJobsMax = 64;

// ---- the distributed swarm (swarm/distributed/*: simlab-swarm submit | worker | report over BullMQ)

/** Seeds one `simlab-swarm submit` enqueues (--seeds A..B spans at most this many); more is a usage error. */
export const distributedSeedsPerSubmitMax = 10_000_000;
/** Highest seed the distributed mode takes (seeds are bit offsets in Redis bitmaps, so no negatives). */
export const distributedSeedMax = Number.MAX_SAFE_INTEGER;
/** Seeds per queued job (a range) unless --range-size says otherwise: a few seconds of work each. */
export const distributedRangeSeedsDefault = 100;
/** Most seeds per queued job (--range-size); a range is re-run from its first undone seed when retried. */
export const distributedRangeSeedsMax = 10_000;
/** Failing seeds whose details (violations, replay) Redis keeps per queue; past it only the count grows. */
export const distributedFailuresKeptMax = 10_000;
/** A worker's lock on its range, ms (--lock-ms): a range whose worker stops renewing it for this long is retried. */
export const distributedLockMsDefault = 30_000;
export const distributedLockMsMin = 200;
export const distributedLockMsMax = 600_000;
/** How often workers look for ranges whose lock expired (a killed worker's), ms (--stalled-check-ms). */
export const distributedStalledCheckMsDefault = 15_000;
/** Times a range may be taken back from a dead worker before it is given up (reported as a failed range). */
export const distributedStalledRetriesMax = 5;
/** Times a range whose run threw (Redis unreachable mid-range, say) is tried before it is given up. */
export const distributedRangeAttemptsMax = 3;
/** How often `report --wait` and `worker --exit-when-idle` look at the queue, ms. */
export const distributedPollMs = 250;
/** Longest `report --wait SECS`, s. */
export const distributedReportWaitSecsMax = 7 * 24 * 3600;

invariant(heartbeatMsDefault < electionTimeoutMsMinDefault, 'heartbeatMsDefault < electionTimeoutMsMinDefault');
invariant(electionTimeoutMsMinDefault <= electionTimeoutMsMaxDefault, 'electionTimeoutMsMinDefault <= ...MaxDefault');
invariant(quorumNLeaderlessDefault <= nodeCountLeaderlessDefault, 'the default leaderless N fits its default cluster');
invariant(nodeCountDefault <= nodeCountMax, 'the default node count is within nodeCountMax');
invariant(nodeCountLeaderlessDefault <= nodeCountMax, 'the default leaderless node count is within nodeCountMax');
invariant(placementReplicasDefault <= nodeCountDefault, 'the default preference list fits a default cluster');
invariant(interRegionLatencyMsDefault <= latencyMsMax, 'the default inter-region latency is accepted by the schema');
invariant(historyOpsMax > 0 && divergedKeysListedMax > 0, 'the history and the diverged list keep something');
invariant(lincheckTimeoutMsDefault <= lincheckTimeoutMsMax, 'the default linearizability budget is within its max');
invariant(antiEntropyWaitMsDefault <= antiEntropyWaitMsMax, 'the default anti-entropy wait is within its max');
invariant(replicaComparePollMs < antiEntropyWaitMsDefault, 'replicas are compared more than once per default wait');
// A request's front-side deadline is checked at sweep granularity: keep it well below the request timeout.
invariant(requestSweepMs <= requestTimeoutMsDefault, 'requests are swept at least once per request timeout');
invariant(
  membershipChangeRetriesMax * membershipChangeRetryMs >= electionTimeoutMsMaxDefault,
  'membership retries outlast an election',
);
invariant(corruptValueCharsMax <= valueCharsMax, 'a corrupted copy is no longer than a storable value');
