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
}

export function createSimMetrics(collect: () => Promise<void>): SimMetrics {
  const registry = new Registry();
  collectProcessMetrics(registry);
  const m: SimMetrics = {
    registry,
    writes: new Counter({ name: 'sim_writes_total', help: 'cumulative writes', labelNames: ['cluster_id', 'node_id', 'strategy'], registers: [registry] }),
    reads: new Counter({ name: 'sim_reads_total', help: 'cumulative reads', labelNames: ['cluster_id', 'node_id'], registers: [registry] }),
    lag: new Gauge({ name: 'sim_replication_lag_ms', help: 'current follower lag', labelNames: ['cluster_id', 'follower_id'], registers: [registry], collect }),
    conflicts: new Counter({ name: 'sim_conflicts_total', help: 'cumulative detected conflicts', labelNames: ['cluster_id', 'resolver'], registers: [registry] }),
    quorumFailures: new Counter({ name: 'sim_quorum_failures_total', help: 'write failures from unavailable quorum', labelNames: ['cluster_id'], registers: [registry] }),
    dropped: new Counter({ name: 'sim_dropped_messages_total', help: 'back-pressure drops (full queues)', labelNames: ['cluster_id'], registers: [registry] }),
    partitionActive: new Gauge({ name: 'sim_partition_active', help: '1 while a partition is active', labelNames: ['cluster_id'], registers: [registry] }),
    wsDropped: new Counter({ name: 'sim_ws_events_dropped_total', help: 'events not delivered to a slow /ws client (bounded queue)', registers: [registry] }),
    historyDropped: new Counter({ name: 'sim_history_dropped_total', help: 'client operations that fell off the per-cluster history cap (linearizability input)', labelNames: ['cluster_id'], registers: [registry] }),
  };
  return m;
}
