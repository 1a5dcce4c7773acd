/**
 * The /api/v1/simulation routes: start a cluster (the same as POST /clusters), reset (delete every
 * cluster), the whole state with the memory budgets, and every cluster's metrics. Thin: the
 * lifecycle is in context.ts, the views in cluster.ts.
 */
import { ClusterConfigBody } from '../../../protocol/replication.js';
import { nodeCallDeadlineMs, workerHeapMb } from '../limits.js';
import type { RouteContext } from './context.js';

export function registerSimulationRoutes(ctx: RouteContext): void {
  const { app, clusters } = ctx;
  app.post('/api/v1/simulation/start', (req) => ctx.createCluster(req.body as ClusterConfigBody), {
    summary: 'Start a simulation: create a cluster (as POST /api/v1/clusters)',
    successStatus: 201,
    body: ClusterConfigBody,
  });
  app.post(
    '/api/v1/simulation/reset',
    async () => {
      await Promise.all([...clusters.keys()].map((id) => ctx.deleteCluster(id)));
      return { status: 200, body: { status: 'reset' } };
    },
    { summary: 'Delete every cluster' },
  );
  app.get(
    '/api/v1/simulation/state',
    async () => ({
      status: 200,
      body: {
        clusters: await Promise.all([...clusters.values()].map((c) => c.state())),
        // Memory budgets (README "Memory budgets"): per-node stored bytes and worker heap, live-node cap.
        limits: {
          node_memory_mb: ctx.nodeMemoryMb,
          node_stored_bytes_max: ctx.storedBytesMax,
          worker_heap_mb: workerHeapMb(ctx.nodeMemoryMb),
          max_nodes: ctx.maxNodes,
          live_nodes: ctx.liveNodes(),
          node_call_deadline_ms: nodeCallDeadlineMs,
        },
      },
    }),
    { summary: "Every cluster's state" },
  );
  app.get(
    '/api/v1/simulation/metrics',
    async () => {
      const out: Record<string, unknown> = {};
      const all = [...clusters.values()];
      const st = await Promise.all(all.map((c) => c.statuses()));
      all.forEach((c, i) => {
        out[c.id] = c.metrics(st[i]);
      });
      return { status: 200, body: out };
    },
    { summary: 'Simulation counters as JSON' },
  );
}
