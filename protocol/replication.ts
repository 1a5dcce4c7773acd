/**
 * TypeBox schemas for every replication-simulator request and response of the spec and
 * ../shared/specs/DECISIONS.md. Request schemas are validated at the HTTP edge; response schemas document the
 * shapes and are checked in tests. This module imports nothing from src/.
 */
import Type, { type Static } from 'typebox';
import {
  batchEntriesMax,
  clientIdCharsMax,
  clockSkewMsMax,
  keyCharsMax,
  latencyMsMax,
  nodeIdCharsMax,
  partitionGroupNodesMax,
  valueCharsMax,
} from './replication-limits.js';

export const StrategySchema = Type.Union([
  Type.Literal('single_leader'),
  Type.Literal('multi_leader'),
  Type.Literal('leaderless'),
  Type.Literal('raft'),
]);
export const ReplicationModeSchema = Type.Union([
  Type.Literal('async'),
  Type.Literal('sync'),
  Type.Literal('semi_sync'),
]);
export const ConflictResolverSchema = Type.Union([
  Type.Literal('lww'),
  Type.Literal('vector_clock'),
  Type.Literal('crdt'),
  Type.Literal('manual'),
]);
export const ConsistencyLevelSchema = Type.Union([
  Type.Literal('quorum'),
  Type.Literal('local_quorum'),
  Type.Literal('each_quorum'),
]);
export const ReadRepairModeSchema = Type.Union([Type.Literal('async'), Type.Literal('sync'), Type.Literal('digest')]);

const Int = (opts: { minimum?: number; maximum?: number } = {}) => Type.Integer(opts);

/**
 * ClusterConfig as a request body (POST clusters, POST simulation/start). Ranges are checked by the service
 * so messages can name the bound.
 */
export const ClusterConfigBody = Type.Object({
  strategy: StrategySchema,
  node_count: Type.Optional(Int()),
  replication_mode: Type.Optional(ReplicationModeSchema),
  conflict_resolver: Type.Optional(ConflictResolverSchema),
  quorum_n: Type.Optional(Int()),
  quorum_w: Type.Optional(Int()),
  quorum_r: Type.Optional(Int()),
  regions: Type.Optional(Int()),
  inter_region_latency_ms: Type.Optional(Int({ minimum: 0, maximum: latencyMsMax })),
  consistency_level: Type.Optional(ConsistencyLevelSchema),
  read_repair_mode: Type.Optional(ReadRepairModeSchema),
  sloppy_quorum: Type.Optional(Type.Boolean()),
});
export type ClusterConfigBody = Static<typeof ClusterConfigBody>;

/** Only replication_mode is applied (single_leader); other keys are ignored, as the spec says. */
export const ClusterConfigPatch = Type.Object({
  replication_mode: Type.Optional(ReplicationModeSchema),
});
export type ClusterConfigPatch = Static<typeof ClusterConfigPatch>;

/** Input bounds (protocol/replication-limits.ts); the old names stay for existing importers. */
export const keyMaxLength = keyCharsMax;
export const valueMaxLength = valueCharsMax;
const NodeIdString = Type.String({ minLength: 1, maxLength: nodeIdCharsMax });
const ClientIdString = Type.String({ maxLength: clientIdCharsMax });

export const WriteRequest = Type.Object({
  key: Type.String({ minLength: 1, maxLength: keyCharsMax }),
  value: Type.Optional(Type.String({ maxLength: valueCharsMax })),
  client_id: Type.Optional(ClientIdString),
  target_node_id: Type.Optional(Type.String({ maxLength: nodeIdCharsMax })),
});
export type WriteRequest = Static<typeof WriteRequest>;

export const BatchWriteRequest = Type.Object({
  entries: Type.Array(WriteRequest, { minItems: 1, maxItems: batchEntriesMax }),
  client_id: Type.Optional(ClientIdString),
  atomic: Type.Optional(Type.Boolean()),
});
export type BatchWriteRequest = Static<typeof BatchWriteRequest>;

export const ClockSkewRequest = Type.Object({
  ms: Type.Integer({ minimum: -clockSkewMsMax, maximum: clockSkewMsMax }),
});
export type ClockSkewRequest = Static<typeof ClockSkewRequest>;

const NodeIdList = Type.Array(NodeIdString, { minItems: 1, maxItems: partitionGroupNodesMax });
export const PartitionRequest = Type.Object({ group_a: NodeIdList, group_b: NodeIdList });
export type PartitionRequest = Static<typeof PartitionRequest>;

export const LatencyRequest = Type.Object({
  from: NodeIdString,
  to: NodeIdString,
  ms: Type.Integer({ minimum: 0, maximum: latencyMsMax }),
});
export type LatencyRequest = Static<typeof LatencyRequest>;

export const DropRequest = Type.Object({
  from: NodeIdString,
  to: NodeIdString,
  rate: Type.Number({ minimum: 0, maximum: 1 }),
});
export type DropRequest = Static<typeof DropRequest>;

export const ResolveConflictRequest = Type.Object({
  node_id: NodeIdString,
  key: Type.String({ minLength: 1, maxLength: keyCharsMax }),
  choice: Type.Union([Type.Literal('local'), Type.Literal('remote')]),
});
export type ResolveConflictRequest = Static<typeof ResolveConflictRequest>;

// ---- responses ----

export const KVEntry = Type.Object({
  key: Type.String(),
  value: Type.String({ description: 'base64 of the value bytes' }),
  vclock: Type.Record(Type.String(), Type.Integer()),
  timestamp: Type.Integer({ description: 'hybrid logical clock, Unix nanoseconds' }),
  node_id: Type.String(),
  tombstone: Type.Boolean(),
  version: Type.Integer(),
});
export type KVEntry = Static<typeof KVEntry>;

export const WriteResult = Type.Object({ entry: KVEntry, node_id: Type.String() });
export type WriteResult = Static<typeof WriteResult>;
export const ReadResult = WriteResult;

export const NodeStatus = Type.Object({
  id: Type.String(),
  cluster_id: Type.String(),
  strategy: StrategySchema,
  role: Type.String(),
  /**
   * online, paused, offline (removed); crashed: its worker exited (crash endpoint, out of memory,
   * an error) until restarted; unresponsive: it did not answer within the aggregate deadline (the
   * other fields are its last known status).
   */
  state: Type.Union([
    Type.Literal('online'),
    Type.Literal('paused'),
    Type.Literal('offline'),
    Type.Literal('crashed'),
    Type.Literal('unresponsive'),
  ]),
  commit_index: Type.Integer(),
  last_applied: Type.Integer(),
  leader_id: Type.String(),
  peers: Type.Array(Type.String()),
  lag: Type.Integer(),
  /**
   * Raft: the node still says `leader` but is not the cluster's leader_id (paused, crashed or
   * partitioned away from a majority, or superseded by a newer term it has not heard of yet).
   */
  stale_leader: Type.Optional(Type.Boolean()),
  /** Raft: the node's current term and whom it voted for in it ('' when nobody yet). */
  term: Type.Optional(Type.Integer()),
  voted_for: Type.Optional(Type.String()),
});
export type NodeStatus = Static<typeof NodeStatus>;

export const Partition = Type.Object({
  id: Type.String(),
  group_a: Type.Record(Type.String(), Type.Boolean()),
  group_b: Type.Record(Type.String(), Type.Boolean()),
});
export type Partition = Static<typeof Partition>;

export const EffectiveClusterConfig = Type.Object({
  strategy: StrategySchema,
  node_count: Type.Integer(),
  replication_mode: ReplicationModeSchema,
  conflict_resolver: ConflictResolverSchema,
  quorum_n: Type.Integer(),
  quorum_w: Type.Integer(),
  quorum_r: Type.Integer(),
  regions: Type.Integer(),
  inter_region_latency_ms: Type.Integer(),
  consistency_level: ConsistencyLevelSchema,
  read_repair_mode: ReadRepairModeSchema,
  sloppy_quorum: Type.Boolean(),
});

export const ClusterState = Type.Object({
  id: Type.String(),
  config: EffectiveClusterConfig,
  node_ids: Type.Array(Type.String()),
  nodes: Type.Record(Type.String(), NodeStatus),
  leader_id: Type.Optional(Type.String()),
  metrics: Type.Record(Type.String(), Type.Unknown()),
  created: Type.String({ format: 'date-time' }),
  partitions: Type.Record(Type.String(), Partition),
  dropped_messages: Type.Optional(Type.Integer()),
  node_regions: Type.Optional(Type.Record(Type.String(), Type.Integer())),
});
export type ClusterState = Static<typeof ClusterState>;

export const AtomicBatchResult = Type.Object({ atomic: Type.Literal(true), entries: Type.Array(KVEntry) });
export const NonAtomicBatchResult = Type.Object({
  results: Type.Array(Type.Union([WriteResult, Type.Object({ key: Type.String(), error: Type.String() })])),
});

export const ErrorBody = Type.Object({ error: Type.String() });

/** /ws event envelope (../shared/specs/DECISIONS.md). */
export const SimEvent = Type.Object({
  type: Type.String(),
  cluster_id: Type.String(),
  node_id: Type.Optional(Type.String()),
  timestamp: Type.String({ format: 'date-time' }),
  data: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  /** Position in the cluster's event stream: +1 for each of its events broadcast on /ws. */
  seq: Type.Optional(Type.Integer({ minimum: 1 })),
});
export type SimEvent = Static<typeof SimEvent>;

/**
 * Sent to a /ws client once its queue has drained after events were dropped for it (its bounded
 * queue was full): `count` events it will never see, so a page resynchronises from the state
 * endpoints. cluster_id and seq (that cluster's latest seq) when the client watches one cluster;
 * `last_seq` (cluster id -> latest seq) when it watches them all.
 */
export const EventsDroppedFrame = Type.Object({
  type: Type.Literal('events_dropped'),
  cluster_id: Type.Optional(Type.String()),
  timestamp: Type.String({ format: 'date-time' }),
  seq: Type.Optional(Type.Integer({ minimum: 0 })),
  data: Type.Object({
    count: Type.Integer({ minimum: 1 }),
    last_seq: Type.Optional(Type.Record(Type.String(), Type.Integer())),
  }),
});
export type EventsDroppedFrame = Static<typeof EventsDroppedFrame>;

/** POST nodes/{id}/stall: block the node's thread for `ms` (a GC pause, a hung process). Bounded at the edge. */
export const StallRequest = Type.Object({ ms: Type.Integer({ minimum: 1 }) });
export type StallRequest = Static<typeof StallRequest>;
