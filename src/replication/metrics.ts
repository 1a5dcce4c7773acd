/**
 * Prometheus metrics of the replication simulator (names and labels as the spec gives them),
 * on the service's own prom-client registry, plus the process metrics.
 */
import client from 'prom-client';

export interface SimMetrics {
  registry: client.Registry;
  writes: client.Counter<'cluster_id' | 'node_id' | 'strategy'>;
  reads: client.Counter<'cluster_id' | 'node_id'>;
  lag: client.Gauge<'cluster_id' | 'follower_id'>;
  conflicts: client.Counter<'cluster_id' | 'resolver'>;
  quorumFailures: client.Counter<'cluster_id'>;
  dropped: client.Counter<'cluster_id'>;
  partitionActive: client.Gauge<'cluster_id'>;
  wsDropped: client.Counter;
  historyDropped: client.Counter<'cluster_id'>;
}

export function createSimMetrics(collect: () => Promise<void>): SimMetrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const m: SimMetrics = {
    registry,
    writes: new client.Counter({ name: 'sim_writes_total', help: 'cumulative writes', labelNames: ['cluster_id', 'node_id', 'strategy'], registers: [registry] }),
    reads: new client.Counter({ name: 'sim_reads_total', help: 'cumulative reads', labelNames: ['cluster_id', 'node_id'], registers: [registry] }),
    lag: new client.Gauge({ name: 'sim_replication_lag_ms', help: 'current follower lag', labelNames: ['cluster_id', 'follower_id'], registers: [registry], collect }),
    conflicts: new client.Counter({ name: 'sim_conflicts_total', help: 'cumulative detected conflicts', labelNames: ['cluster_id', 'resolver'], registers: [registry] }),
    quorumFailures: new client.Counter({ name: 'sim_quorum_failures_total', help: 'write failures from unavailable quorum', labelNames: ['cluster_id'], registers: [registry] }),
    dropped: new client.Counter({ name: 'sim_dropped_messages_total', help: 'back-pressure drops (full queues)', labelNames: ['cluster_id'], registers: [registry] }),
    partitionActive: new client.Gauge({ name: 'sim_partition_active', help: '1 while a partition is active', labelNames: ['cluster_id'], registers: [registry] }),
    wsDropped: new client.Counter({ name: 'sim_ws_events_dropped_total', help: 'events not delivered to a slow /ws client (bounded queue)', registers: [registry] }),
    historyDropped: new client.Counter({ name: 'sim_history_dropped_total', help: 'client operations that fell off the per-cluster history cap (linearizability input)', labelNames: ['cluster_id'], registers: [registry] }),
  };
  return m;
}
