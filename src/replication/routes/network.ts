/**
 * The network fault routes of a cluster: create and heal a partition, set a link's latency or
 * drop rate, and clear every fault. Thin: the fabric applies them (and the cluster's fault log
 * sees them through its onFaultChange); these routes validate, publish and update the gauge.
 */
import { HttpError } from '../../http/index.js';
import { DropRequest, LatencyRequest, PartitionRequest } from '../../../protocol/replication.js';
import type { Cluster } from '../cluster.js';
import type { RouteContext } from './context.js';
import { getNode } from './request-helpers.js';

/** Every id must name a node of the cluster (a 400 otherwise: they are body fields). */
function checkNodes(c: Cluster, ids: string[]): void {
  for (const id of ids) if (!c.nodes.has(id)) throw new HttpError(400, `node ${id} is not in cluster ${c.id}`);
}

/** A link's two ends from a latency or drop body: both nodes of the cluster, and two different nodes. */
function checkLink(c: Cluster, b: { from: string; to: string }): void {
  getNode(c, b.from);
  getNode(c, b.to);
  if (b.from === b.to) throw new HttpError(400, 'from and to must be different nodes');
}

export function registerNetworkRoutes(ctx: RouteContext): void {
  const { app, getCluster, publish, metrics } = ctx;
  app.post(
    '/api/v1/clusters/:id/network/partition',
    (req) => {
      const c = getCluster(req);
      const b = req.body as PartitionRequest;
      checkNodes(c, [...b.group_a, ...b.group_b]);
      const a = new Set(b.group_a);
      const overlap = b.group_b.filter((x) => a.has(x));
      if (overlap.length > 0)
        throw new HttpError(400, `group_a and group_b must be disjoint (both contain ${overlap.join(', ')})`);
      if (new Set(b.group_a).size !== b.group_a.length || new Set(b.group_b).size !== b.group_b.length)
        throw new HttpError(400, 'a group lists the same node twice');
      const pid = c.fabric.partition(b.group_a, b.group_b);
      metrics.partitionActive.set({ cluster_id: c.id }, 1);
      publish(c.id, { type: 'partition_created', data: { partition_id: pid, group_a: b.group_a, group_b: b.group_b } });
      return { status: 201, body: { partition_id: pid } };
    },
    { summary: 'Partition the network into groups of nodes', successStatus: 201, body: PartitionRequest },
  );
  app.delete(
    '/api/v1/clusters/:id/network/partition/:partId',
    (req) => {
      const c = getCluster(req);
      const pid = req.params['partId'] ?? '';
      if (!c.fabric.heal(pid)) throw new HttpError(404, `partition ${pid} not found in cluster ${c.id}`);
      metrics.partitionActive.set({ cluster_id: c.id }, c.fabric.partitions().size > 0 ? 1 : 0);
      publish(c.id, { type: 'partition_healed', data: { partition_id: pid } });
      c.kick();
      return { status: 204 };
    },
    { summary: 'Heal one partition', successStatus: 204 },
  );
  app.post(
    '/api/v1/clusters/:id/network/latency',
    (req) => {
      const c = getCluster(req);
      const b = req.body as LatencyRequest;
      checkLink(c, b);
      c.fabric.setLatency(b.from, b.to, b.ms);
      publish(c.id, { type: 'link_latency_set', data: { from: b.from, to: b.to, ms: b.ms } });
      return { status: 200, body: { status: 'latency set', from: b.from, to: b.to, ms: b.ms } };
    },
    { summary: 'Set link latency (and jitter) between nodes', body: LatencyRequest },
  );
  app.post(
    '/api/v1/clusters/:id/network/drop',
    (req) => {
      const c = getCluster(req);
      const b = req.body as DropRequest;
      checkLink(c, b);
      c.fabric.setDropRate(b.from, b.to, b.rate);
      publish(c.id, { type: 'link_drop_set', data: { from: b.from, to: b.to, rate: b.rate } });
      return { status: 200, body: { status: 'drop rate set', from: b.from, to: b.to, rate: b.rate } };
    },
    { summary: 'Set a message drop rate on links', body: DropRequest },
  );
  app.delete(
    '/api/v1/clusters/:id/network/faults',
    (req) => {
      const c = getCluster(req);
      const healed = [...c.fabric.partitions().keys()];
      c.fabric.clearFaults();
      c.applyRegionLatency();
      metrics.partitionActive.set({ cluster_id: c.id }, 0);
      for (const pid of healed) publish(c.id, { type: 'partition_healed', data: { partition_id: pid } });
      // Latency and drop rates are back to their defaults too (inter-region latency stays).
      publish(c.id, { type: 'network_faults_cleared' });
      c.kick();
      return { status: 200, body: { status: 'faults cleared' } };
    },
    { summary: 'Clear every network fault' },
  );
}
