/**
 * The node routes of a cluster: add and remove, pause and resume, clock skew, a node's log and
 * store, crash and restart, and stall. Thin: each calls the cluster (or one node within the call
 * deadline), turns a refusal into its status (controlFailed), and publishes the state change.
 */
import { HttpError } from '../../http/index.js';
import { ClockSkewRequest, StallRequest, type KVEntry } from '../../../protocol/replication.js';
import { preciseNowMs, toKVEntry } from '../cluster.js';
import { nodeCountMax, nodeStallMsMax } from '../limits.js';
import type { NodeHandle } from '../node-handle.js';
import type { RouteContext } from './context.js';
import { callNode, controlFailed, getNode } from './request-helpers.js';

export function registerNodeRoutes(ctx: RouteContext): void {
  const { app, getCluster, publish, checkNodeRoom } = ctx;
  app.post(
    '/api/v1/clusters/:id/nodes',
    async (req) => {
      const c = getCluster(req);
      if (c.nodes.size >= nodeCountMax) throw new HttpError(409, `a cluster has at most ${nodeCountMax} nodes`);
      checkNodeRoom(1);
      const h = await c.addNode().catch(controlFailed);
      publish(c.id, { type: 'node_state_changed', node_id: h.id, data: { state: 'online', reason: 'added' } });
      return { status: 201, body: await c.nodeStatus(h.id) };
    },
    { summary: 'Add a node to the cluster', successStatus: 201 },
  );
  app.delete(
    '/api/v1/clusters/:id/nodes/:nodeId',
    async (req) => {
      const c = getCluster(req);
      const nodeId = getNode(c, req.params['nodeId']);
      await c.removeNode(nodeId).catch(controlFailed);
      publish(c.id, { type: 'node_state_changed', node_id: nodeId, data: { state: 'offline', reason: 'removed' } });
      return { status: 204 };
    },
    { summary: 'Remove a node', successStatus: 204 },
  );
  app.post(
    '/api/v1/clusters/:id/nodes/:nodeId/pause',
    async (req) => {
      const c = getCluster(req);
      const nodeId = getNode(c, req.params['nodeId']);
      await c.pause(nodeId).catch(controlFailed);
      publish(c.id, { type: 'node_state_changed', node_id: nodeId, data: { state: 'paused' } });
      return { status: 200, body: { status: 'paused', node: nodeId } };
    },
    { summary: 'Pause a node (it keeps its state, answers nothing)' },
  );
  app.post(
    '/api/v1/clusters/:id/nodes/:nodeId/resume',
    async (req) => {
      const c = getCluster(req);
      const nodeId = getNode(c, req.params['nodeId']);
      await c.resume(nodeId).catch(controlFailed);
      publish(c.id, { type: 'node_state_changed', node_id: nodeId, data: { state: 'online' } });
      return { status: 200, body: { status: 'resumed', node: nodeId } };
    },
    { summary: 'Resume a paused node' },
  );
  app.post(
    '/api/v1/clusters/:id/nodes/:nodeId/clock-skew',
    async (req) => {
      const c = getCluster(req);
      const nodeId = getNode(c, req.params['nodeId']);
      const ms = (req.body as ClockSkewRequest).ms;
      await callNode(c.nodes.get(nodeId) as NodeHandle, (h) => h.remote.control({ kind: 'clock_skew', ms }));
      if (ms === 0) c.faults.close(`clock_skew ${nodeId}`, preciseNowMs());
      else c.faults.open(`clock_skew ${nodeId}`, { kind: 'clock_skew', node: nodeId, value: ms }, preciseNowMs());
      publish(c.id, { type: 'clock_skew_set', node_id: nodeId, data: { skew_ms: ms } });
      return { status: 200, body: { status: 'skewed', node: nodeId, skew_ms: ms } };
    },
    { summary: "Skew a node's clock", body: ClockSkewRequest },
  );
  app.get(
    '/api/v1/clusters/:id/nodes/:nodeId/log',
    async (req) => {
      const c = getCluster(req);
      const nodeId = getNode(c, req.params['nodeId']);
      return { status: 200, body: await callNode(c.nodes.get(nodeId) as NodeHandle, (h) => h.remote.log()) };
    },
    { summary: "A node's replication log" },
  );
  app.get(
    '/api/v1/clusters/:id/nodes/:nodeId/store',
    async (req) => {
      const c = getCluster(req);
      const nodeId = getNode(c, req.params['nodeId']);
      const store = await callNode(c.nodes.get(nodeId) as NodeHandle, (h) => h.remote.store());
      const out: Record<string, KVEntry> = {};
      for (const [k, v] of Object.entries(store)) out[k] = toKVEntry(v);
      return { status: 200, body: out };
    },
    { summary: "A node's key-value store" },
  );

  // Crash and restart (README "Node crashes"): the worker is killed with no goodbye; a restart
  // builds a new one from the node's durable storage, and it catches up by its strategy's repair.
  app.post(
    '/api/v1/clusters/:id/nodes/:nodeId/crash',
    async (req) => {
      const c = getCluster(req);
      const nodeId = getNode(c, req.params['nodeId']);
      await c.crash(nodeId).catch(controlFailed);
      return { status: 200, body: { status: 'crashed', node: nodeId } };
    },
    { summary: 'Crash a node (volatile state lost)' },
  );
  app.post(
    '/api/v1/clusters/:id/nodes/:nodeId/restart',
    async (req) => {
      const c = getCluster(req);
      const nodeId = getNode(c, req.params['nodeId']);
      if (c.nodes.get(nodeId)?.isDown) checkNodeRoom(1);
      await c.restart(nodeId).catch(controlFailed);
      publish(c.id, { type: 'node_state_changed', node_id: nodeId, data: { state: 'online', reason: 'restarted' } });
      return { status: 200, body: await c.nodeStatus(nodeId) };
    },
    { summary: 'Restart a crashed node' },
  );
  app.post(
    '/api/v1/clusters/:id/nodes/:nodeId/stall',
    (req) => {
      const c = getCluster(req);
      const nodeId = getNode(c, req.params['nodeId']);
      const ms = (req.body as StallRequest).ms;
      if (ms > nodeStallMsMax) throw new HttpError(400, `ms: must be at most ${nodeStallMsMax} (nodeStallMsMax)`);
      const n = c.nodes.get(nodeId) as NodeHandle;
      if (n.isDown) throw new HttpError(409, `node ${nodeId} has crashed; restart it first`);
      // Not awaited: the node answers nothing until the stall ends.
      const stallKey = `stall ${nodeId}`;
      c.faults.open(stallKey, { kind: 'stall', node: nodeId, value: ms }, preciseNowMs());
      n.remote
        .stall(ms)
        .catch(() => {
          // crashed meanwhile
        })
        .finally(() => c.faults.close(stallKey, preciseNowMs()));
      return { status: 202, body: { status: 'stalled', node: nodeId, ms } };
    },
    { summary: 'Stall a node for a while (a GC pause)', body: StallRequest },
  );
}
