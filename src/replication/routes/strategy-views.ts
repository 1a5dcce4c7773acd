/**
 * Routes that only make sense for some strategies: a key's preference list (placement), the
 * leaderless failure suspicion (phi accrual), and the multi-leader conflicts with their manual
 * resolution. Thin: the answers come from the nodes' custom controls or the pure ring.
 */
import Type from 'typebox';
import { HttpError } from '../../http/index.js';
import { ResolveConflictRequest } from '../../../protocol/replication.js';
import { withinMs, type Cluster } from '../cluster.js';
import { preferenceList } from '../dynamo/ring.js';
import { statusOf } from '../errors.js';
import { keyCharsMax, nodeCallDeadlineMs, placementReplicasDefault } from '../limits.js';
import type { NodeHandle } from '../node-handle.js';
import type { RouteContext } from './context.js';
import { boundedQuery, callNode, getNode, wellFormed } from './request-helpers.js';

/** The first online node of a cluster, or a 409 saying none is. */
function firstOnline(c: Cluster): string {
  for (const n of c.nodes.values()) if (n.state === 'online') return n.id;
  throw new HttpError(409, `no node of cluster ${c.id} is online`);
}

export function registerStrategyViewRoutes(ctx: RouteContext): void {
  const { app, getCluster } = ctx;
  app.get(
    '/api/v1/clusters/:id/placement',
    async (req) => {
      const c = getCluster(req);
      const key = boundedQuery(req, 'key', keyCharsMax) ?? '';
      const nRaw = req.query.get('n');
      const n = nRaw === null ? placementReplicasDefault : Number(nRaw);
      if (!Number.isInteger(n) || n < 1)
        throw new HttpError(400, `n must be a positive integer (got ${JSON.stringify(nRaw)})`);
      if (n > c.nodes.size) throw new HttpError(400, `n must be at most the number of nodes (${c.nodes.size})`);
      return { status: 200, body: { key, preference_list: preferenceList(key, n, [...c.nodes.keys()]) } };
    },
    {
      summary: 'Where a key lives (consistent hashing: its preference list)',
      query: Type.Object({ key: Type.Optional(Type.String()), n: Type.Optional(Type.String({ pattern: '^[0-9]+$' })) }),
    },
  );
  app.get(
    '/api/v1/clusters/:id/suspicion',
    async (req) => {
      const c = getCluster(req);
      if (c.config.strategy !== 'leaderless')
        throw new HttpError(
          400,
          `failure suspicion (phi accrual) is tracked by leaderless clusters; this cluster is ${c.config.strategy}`,
        );
      const r = await callNode(c.nodes.get(firstOnline(c)) as NodeHandle, (h) =>
        h.remote.control({ kind: 'custom', name: 'suspicion' }),
      );
      if (!r.ok) throw new HttpError(statusOf(r.code, 'control'), r.error);
      return { status: 200, body: r.data };
    },
    { summary: 'Failure-detector suspicion of each node' },
  );
  app.get(
    '/api/v1/clusters/:id/conflicts',
    async (req) => {
      const c = getCluster(req);
      if (c.config.strategy !== 'multi_leader') return { status: 200, body: { conflicts: [] } };
      const all = await Promise.all(
        [...c.nodes.values()].map(async (n) => {
          const r = n.isDown
            ? undefined
            : await withinMs(n.remote.control({ kind: 'custom', name: 'conflicts' }), nodeCallDeadlineMs);
          return r?.ok && Array.isArray(r.data) ? (r.data as unknown[]) : [];
        }),
      );
      return { status: 200, body: { conflicts: all.flat() } };
    },
    { summary: 'Keys with concurrent versions (siblings)' },
  );
  app.post(
    '/api/v1/clusters/:id/conflicts/resolve',
    async (req) => {
      const c = getCluster(req);
      const b = req.body as ResolveConflictRequest;
      wellFormed('key', b.key);
      if (c.config.strategy !== 'multi_leader')
        throw new HttpError(
          400,
          `manual conflict resolution applies to multi_leader clusters; this cluster is ${c.config.strategy}`,
        );
      const node = getNode(c, b.node_id);
      const r = await callNode(c.nodes.get(node) as NodeHandle, (h) =>
        h.remote.control({ kind: 'custom', name: 'resolve', args: { key: b.key, choice: b.choice } }),
      );
      if (!r.ok) throw new HttpError(statusOf(r.code, 'control'), r.error);
      c.kick();
      return { status: 200, body: r.data ?? { status: 'resolved', key: b.key, choice: b.choice } };
    },
    { summary: "Resolve a key's siblings with a chosen value", body: ResolveConflictRequest },
  );
}
