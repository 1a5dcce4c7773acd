/**
 * The /api/v1/clusters collection routes: create, list, delete, one cluster's state, and its
 * config patch (single-leader replication mode). Thin: validation and start-up are the
 * lifecycle's (context.ts), the state view is the cluster's.
 */
import { HttpError } from '../../http/index.js';
import { ClusterConfigBody, ClusterConfigPatch } from '../../../protocol/replication.js';
import type { RouteContext } from './context.js';

export function registerClusterRoutes(ctx: RouteContext): void {
  const { app, clusters, getCluster } = ctx;
  app.post('/api/v1/clusters', (req) => ctx.createCluster(req.body as ClusterConfigBody), {
    summary: 'Create a cluster (strategy, node count, timings); 201 with its id',
    successStatus: 201,
    body: ClusterConfigBody,
  });
  app.get(
    '/api/v1/clusters',
    async () => ({
      status: 200,
      body: await Promise.all([...clusters.values()].map((c) => c.state())),
    }),
    { summary: 'List the clusters' },
  );
  app.delete(
    '/api/v1/clusters/:id',
    async (req) => {
      if (!(await ctx.deleteCluster(req.params['id'] ?? '')))
        throw new HttpError(404, `cluster ${req.params['id']} not found`);
      return { status: 204 };
    },
    { summary: 'Delete a cluster and stop its nodes', successStatus: 204 },
  );
  app.get('/api/v1/clusters/:id/state', async (req) => ({ status: 200, body: await getCluster(req).state() }), {
    summary: "A cluster's state: nodes, roles, terms, faults",
  });
  app.patch(
    '/api/v1/clusters/:id/config',
    async (req) => {
      const c = getCluster(req);
      const body = req.body as ClusterConfigPatch;
      if (body.replication_mode !== undefined && c.config.strategy === 'single_leader') {
        c.config.replication_mode = body.replication_mode;
        // Crashed nodes take the new mode from the config when they restart.
        await Promise.allSettled(
          [...c.nodes.values()]
            .filter((n) => !n.isDown)
            .map((n) => n.remote.control({ kind: 'replication_mode', mode: body.replication_mode as 'async' })),
        );
      }
      return { status: 200, body: await c.state() };
    },
    { summary: "Change a running cluster's configuration (quorums, timings)", body: ClusterConfigPatch },
  );
}
