/**
 * Prometheus metrics of the replication simulator (names and labels as the spec gives them),
 * on the service's own prom-client registry, plus the process metrics.
 */
import { Counter, Gauge, Registry, collectProcessMetrics } from '../util/metrics.js';

export interface SimMetrics {
  registry: Registry;
  writes: Counter<'cluster_id' | 'node_id' | 'strategy'>;
  reads: Counter<'cluster_id' | 'node_id'>;
  lag: Gauge<'cluster_id' | 'follower_id'>;
  conflicts: Counter<'cluster_id' | 'resolver'>;
  quorumFailures: Counter<'cluster_id'>;
  dropped: Counter<'cluster_id'>;
  partitionActive: Gauge<'cluster_id'>;
  wsDropped: Counter;
  historyDropped: Counter<'cluster_id'>;
  /** Node worker exits by reason (node-handle.ts ExitReason): stopped, killed, out_of_memory, error, exited. */
  workerExits: Counter<'reason'>;
}

/**
 * Per-(cluster, node) increments kept as plain numbers and handed to a labelled prom-client counter
 * when the registry is read: prom-client hashes the label set on every inc(), and the write and read
 * counters are bumped once per client operation (the hottest path of the service).
 */
export class DeferredCounts {
  private readonly counts = new Map<string, Map<string, number>>();
  /** Per cluster, the node ids whose counts were handed over (the series that exist), for removal. */
  private readonly drained = new Map<string, Set<string>>();

  add(clusterId: string, nodeId: string): void {
    let byNode = this.counts.get(clusterId);
    if (byNode === undefined) {
      byNode = new Map();
      this.counts.set(clusterId, byNode);
    }
    byNode.set(nodeId, (byNode.get(nodeId) ?? 0) + 1);
  }

  /** Hands every pending increment to `fn` and clears them. */
  drain(fn: (clusterId: string, nodeId: string, n: number) => void): void {
    for (const [cid, byNode] of this.counts) {
      let seen = this.drained.get(cid);
      if (seen === undefined) {
        seen = new Set();
        this.drained.set(cid, seen);
      }
      for (const [nid, n] of byNode) {
        seen.add(nid);
        fn(cid, nid, n);
      }
    }
    this.counts.clear();
  }

  /** The node ids of a cluster that `drain` has handed over at least once (each is a labelled series). */
  drainedNodes(clusterId: string): ReadonlySet<string> {
    return this.drained.get(clusterId) ?? new Set();
  }

  forget(clusterId: string): void {
    this.counts.delete(clusterId);
    this.drained.delete(clusterId);
  }
}

/**
 * `collect` refreshes the gauges (run from the lag gauge); `flushWrites` and `flushReads` hand the
 * deferred write and read counts to their counters (each run from its own counter, so the values
 * are current when that counter is read).
 */
export function createSimMetrics(
  collect: () => Promise<void>,
  flushWrites: () => void = () => {},
  flushReads: () => void = () => {},
): SimMetrics {
  const registry = new Registry();
  collectProcessMetrics(registry);
  const m: SimMetrics = {
    registry,
    writes: new Counter({
      name: 'sim_writes_total',
      help: 'cumulative writes',
      labelNames: ['cluster_id', 'node_id', 'strategy'],
      registers: [registry],
      collect: flushWrites,
    }),
    reads: new Counter({
      name: 'sim_reads_total',
      help: 'cumulative reads',
      labelNames: ['cluster_id', 'node_id'],
      registers: [registry],
      collect: flushReads,
    }),
    lag: new Gauge({
      name: 'sim_replication_lag_ms',
      help: 'current follower lag',
      labelNames: ['cluster_id', 'follower_id'],
      registers: [registry],
      collect,
    }),
    conflicts: new Counter({
      name: 'sim_conflicts_total',
      help: 'cumulative detected conflicts',
      labelNames: ['cluster_id', 'resolver'],
      registers: [registry],
    }),
    quorumFailures: new Counter({
      name: 'sim_quorum_failures_total',
      help: 'write failures from unavailable quorum',
      labelNames: ['cluster_id'],
      registers: [registry],
    }),
    dropped: new Counter({
      name: 'sim_dropped_messages_total',
      help: 'back-pressure drops (full queues)',
      labelNames: ['cluster_id'],
      registers: [registry],
    }),
    partitionActive: new Gauge({
      name: 'sim_partition_active',
      help: '1 while a partition is active',
      labelNames: ['cluster_id'],
      registers: [registry],
    }),
    wsDropped: new Counter({
      name: 'sim_ws_events_dropped_total',
      help: 'events not delivered to a slow /ws client (bounded queue)',
      registers: [registry],
    }),
    historyDropped: new Counter({
      name: 'sim_history_dropped_total',
      help: 'client operations that fell off the per-cluster history cap (linearizability input)',
      labelNames: ['cluster_id'],
      registers: [registry],
    }),
    workerExits: new Counter({
      name: 'sim_worker_exits_total',
      help:
        'node worker exits by reason (stopped on purpose, killed by the crash endpoint, ' +
        'out_of_memory, error, exited)',
      labelNames: ['reason'],
      registers: [registry],
    }),
  };
  return m;
}
