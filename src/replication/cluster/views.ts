/**
 * The shapes a cluster shows on the wire, built from what it holds: a stored version as a KVEntry
 * (value in base64), a node's status, the partitions, and the cluster's metrics. Pure builders:
 * they ask no node and change nothing (the Cluster gathers the statuses first).
 */
import type { KVEntry, NodeStatus, Partition } from '../../../protocol/replication.js';
import type { Fabric } from '../../fabric/fabric.js';
import type { WirePayload } from '../../fabric/live.js';
import type { CoreStatus, NodeId, Strategy, Version } from '../core.js';
import type { NodeHandle } from '../node-handle.js';

export function toKVEntry(v: Version): KVEntry {
  return {
    key: v.key,
    value: Buffer.from(v.value, 'utf8').toString('base64'),
    vclock: v.vclock,
    timestamp: v.timestamp,
    node_id: v.node_id,
    tombstone: v.tombstone,
    version: v.version,
  };
}

/** One node's status as GET .../state shows it; its lag is the larger of its own and its leader's view. */
export function toNodeStatus(
  n: NodeHandle,
  s: CoreStatus,
  leader: CoreStatus | undefined,
  cluster: { id: string; strategy: Strategy; shown: NodeStatus['state']; nodeIds: Iterable<NodeId> },
): NodeStatus {
  const fromLeader = leader?.followers?.[n.id]?.lag_entries;
  return {
    id: n.id,
    cluster_id: cluster.id,
    strategy: cluster.strategy,
    role: s.role,
    state: cluster.shown,
    commit_index: s.commit_index,
    last_applied: s.last_applied,
    leader_id: s.leader_id,
    peers: [...cluster.nodeIds].filter((p) => p !== n.id),
    lag: Math.max(s.lag, fromLeader ?? 0),
    // Raft's term and vote (the page draws who votes for whom during an election).
    ...(s.term !== undefined ? { term: s.term } : {}),
    ...(typeof s.extra?.['voted_for'] === 'string' ? { voted_for: s.extra['voted_for'] } : {}),
  };
}

/** The fabric's active partitions, by id, each group as a set of node ids. */
export function partitionsView(fabric: Fabric<WirePayload>): Record<string, Partition> {
  const partitions: Record<string, Partition> = {};
  for (const [pid, p] of fabric.partitions()) {
    partitions[pid] = {
      id: pid,
      group_a: Object.fromEntries(p.groupA.map((x) => [x, true])),
      group_b: Object.fromEntries(p.groupB.map((x) => [x, true])),
    };
  }
  return partitions;
}

/** What clusterMetrics reads of a cluster. */
export interface MetricsInputs {
  fabric: Fabric<WirePayload>;
  leaderId: NodeId | undefined;
  nodes: ReadonlyMap<NodeId, NodeHandle>;
  crashes: number;
  restarts: number;
  durableBytes: Record<NodeId, number>;
  writes: number;
  reads: number;
  writeFailures: number;
  historyOps: number;
  historyDropped: number;
}

/** A cluster's metrics (GET .../state `metrics`, GET /simulation/metrics) from the statuses `st`. */
export function clusterMetrics(c: MetricsInputs, st: ReadonlyMap<NodeId, CoreStatus>): Record<string, unknown> {
  const stats = c.fabric.stats();
  const lag: Record<string, number> = {};
  const leader = c.leaderId ? st.get(c.leaderId) : undefined;
  if (leader?.followers) for (const [f, p] of Object.entries(leader.followers)) lag[f] = p.lag_ms;
  const extra: Record<string, unknown> = {};
  for (const [id, s] of st) if (s.extra) extra[id] = s.extra;
  const down: Record<NodeId, string> = {};
  for (const n of c.nodes.values()) if (n.isDown && n.exit) down[n.id] = n.exit.reason;
  return {
    crashed_nodes: down,
    crashes: c.crashes,
    restarts: c.restarts,
    durable_bytes: c.durableBytes,
    writes: c.writes,
    reads: c.reads,
    write_failures: c.writeFailures,
    dropped_messages: stats.dropped_full,
    fabric: stats,
    replication_lag_ms: lag,
    history_ops: c.historyOps,
    history_dropped: c.historyDropped,
    nodes: extra,
  };
}
