/**
 * The data routes of a cluster: write, read, delete a key, and write-batch (atomic on a
 * single-leader cluster, else one write per entry). Thin: decode and bound the input, send the
 * client operation to a node (cluster.ts submit), map a failure's code to its status (statusOf).
 * Writes are the service's hot path, so they are answered through callbacks, not promise layers.
 */
import Type from 'typebox';
import { HttpError, type HttpResult } from '../../http/index.js';
import { BatchWriteRequest, WriteRequest, type KVEntry } from '../../../protocol/replication.js';
import { inSpan, tracing } from '../../tracing/tracing.js';
import { toKVEntry, type Cluster } from '../cluster.js';
import type { ClientOp, Version } from '../core.js';
import { statusOf } from '../errors.js';
import { clientIdCharsMax, keyCharsMax, nodeIdCharsMax } from '../limits.js';
import type { RouteContext } from './context.js';
import { boundedQuery, getNode, replyError, wellFormed } from './request-helpers.js';

type WriteOutcome = { ok: true; entry: KVEntry; node_id: string } | { ok: false; status: number; error: string };

export function registerKvRoutes(ctx: RouteContext): void {
  const { app, getCluster, metrics, events, publish } = ctx;

  const countWrite = (c: Cluster, nodeId: string): void => ctx.writeCounts.add(c.id, nodeId);

  const doWrite = (c: Cluster, op: ClientOp, target: string | undefined): Promise<WriteOutcome> =>
    new Promise((resolve) => submitWrite(c, op, target, resolve));
  /** A write (or delete) answered through `done`: the hot path, with no promise per layer. */
  const submitWrite = (c: Cluster, op: ClientOp, target: string | undefined, done: (o: WriteOutcome) => void): void => {
    if (tracing.on) {
      // The span stays open until the outcome is known; the actor request is queued inside it.
      void inSpan(
        'write',
        () =>
          new Promise<void>((spanDone) =>
            submitWriteInner(c, op, target, (o) => {
              spanDone();
              done(o);
            }),
          ),
        { cluster_id: c.id, op: op.op },
      );
      return;
    }
    submitWriteInner(c, op, target, done);
  };
  const submitWriteInner = (
    c: Cluster,
    op: ClientOp,
    target: string | undefined,
    done: (o: WriteOutcome) => void,
  ): void => {
    const nodeId = target ?? c.defaultTarget();
    if (!nodeId || !c.nodes.has(nodeId)) {
      done({ ok: false, status: statusOf('not_found', op.op), error: `node ${nodeId} not found in cluster ${c.id}` });
      return;
    }
    if (events.opEventsWanted) {
      const data = { key: 'key' in op ? op.key : undefined, op: op.op };
      publish(c.id, { type: 'write_received', node_id: nodeId, data });
    }
    c.submit(nodeId, op, (r) => {
      if (!r.ok) {
        if (r.code === 'quorum_not_met') metrics.quorumFailures.inc({ cluster_id: c.id });
        done({ ok: false, status: statusOf(r.code, op.op), error: r.error });
        return;
      }
      countWrite(c, nodeId);
      const result = r.result;
      if (result.kind !== 'entry') done({ ok: false, status: 500, error: 'unexpected batch result' });
      else done({ ok: true, entry: toKVEntry(result.entry), node_id: result.node_id });
    });
  };

  app.post(
    '/api/v1/clusters/:id/write',
    (req) => {
      const c = getCluster(req);
      const b = req.body as WriteRequest;
      wellFormed('key', b.key);
      wellFormed('value', b.value);
      wellFormed('client_id', b.client_id);
      const op: ClientOp = { op: 'write', key: b.key, value: b.value ?? '' };
      if (b.client_id !== undefined) op.client_id = b.client_id;
      return new Promise<HttpResult>((resolve) =>
        submitWrite(c, op, b.target_node_id, (r) => {
          resolve(
            r.ok
              ? { status: 200, body: { entry: r.entry, node_id: r.node_id } }
              : { status: r.status, body: { error: r.error } },
          );
        }),
      );
    },
    { summary: 'Write a key through a node (client_id for session guarantees)', body: WriteRequest },
  );

  app.get(
    '/api/v1/clusters/:id/read',
    async (req) => {
      const c = getCluster(req);
      const key = boundedQuery(req, 'key', keyCharsMax);
      // 404, not 400: every read failure is a 404 (statusOf in errors.ts, ../shared/specs/DECISIONS.md).
      if (key === null || key === '') {
        throw new HttpError(statusOf('bad_request', 'read'), 'query parameter key is required');
      }
      const nodeId = boundedQuery(req, 'node_id', nodeIdCharsMax) ?? c.defaultTarget();
      getNode(c, nodeId);
      const op: ClientOp = { op: 'read', key };
      const clientId = boundedQuery(req, 'client_id', clientIdCharsMax);
      if (clientId) op.client_id = clientId;
      if (events.opEventsWanted) publish(c.id, { type: 'read_received', node_id: nodeId as string, data: { key } });
      const r = tracing.on
        ? await inSpan('read', () => c.clientOp(nodeId as string, op), { cluster_id: c.id })
        : await c.clientOp(nodeId as string, op);
      if (!r.ok) return replyError(r, 'read');
      ctx.readCounts.add(c.id, nodeId as string);
      if (r.result.kind !== 'entry') throw new HttpError(500, 'unexpected read result');
      return { status: 200, body: { entry: toKVEntry(r.result.entry), node_id: r.result.node_id } };
    },
    {
      summary: 'Read a key through a node',
      query: Type.Object({
        key: Type.String(),
        node_id: Type.Optional(Type.String()),
        client_id: Type.Optional(Type.String()),
      }),
    },
  );

  app.delete(
    '/api/v1/clusters/:id/kv',
    async (req) => {
      const c = getCluster(req);
      const key = boundedQuery(req, 'key', keyCharsMax);
      // 400 here but 404 on read: the spec's table (statusOf in errors.ts).
      if (key === null || key === '') {
        throw new HttpError(statusOf('bad_request', 'delete'), 'query parameter key is required');
      }
      const nodeId = boundedQuery(req, 'node_id', nodeIdCharsMax) ?? undefined;
      if (nodeId !== undefined) getNode(c, nodeId);
      const op: ClientOp = { op: 'delete', key };
      const clientId = boundedQuery(req, 'client_id', clientIdCharsMax);
      if (clientId) op.client_id = clientId;
      const r = await doWrite(c, op, nodeId);
      if (!r.ok) return { status: r.status, body: { error: r.error } };
      return { status: 200, body: { status: 'deleted', key } };
    },
    {
      summary: 'Delete a key through a node',
      query: Type.Object({
        key: Type.String(),
        node_id: Type.Optional(Type.String()),
        client_id: Type.Optional(Type.String()),
      }),
    },
  );

  app.post(
    '/api/v1/clusters/:id/write-batch',
    async (req) => {
      const c = getCluster(req);
      const b = req.body as BatchWriteRequest;
      wellFormed('client_id', b.client_id);
      b.entries.forEach((e, i) => {
        wellFormed(`entries[${i}].key`, e.key);
        wellFormed(`entries[${i}].value`, e.value);
        wellFormed(`entries[${i}].client_id`, e.client_id);
      });
      if (b.atomic) {
        if (c.config.strategy !== 'single_leader')
          throw new HttpError(
            400,
            `atomic batches are supported on single_leader clusters only (this cluster is ${c.config.strategy})`,
          );
        const leader = c.defaultTarget();
        for (const e of b.entries) {
          if (e.target_node_id !== undefined && e.target_node_id !== leader) {
            if (!c.nodes.has(e.target_node_id))
              throw new HttpError(404, `node ${e.target_node_id} not found in cluster ${c.id}`);
            throw new HttpError(
              409,
              `an atomic batch is applied by the leader (${leader}); entry for key ${JSON.stringify(e.key)} targets ` +
                `${e.target_node_id}`,
            );
          }
        }
        const op: ClientOp = { op: 'batch', entries: b.entries.map((e) => ({ key: e.key, value: e.value ?? '' })) };
        if (b.client_id !== undefined) op.client_id = b.client_id;
        const r = await c.clientOp(leader as string, op);
        if (!r.ok) return replyError(r, 'batch');
        if (r.result.kind !== 'batch') throw new HttpError(500, 'unexpected batch result');
        countWrite(c, leader as string);
        return { status: 200, body: { atomic: true, entries: r.result.entries.map((v: Version) => toKVEntry(v)) } };
      }
      const results = await Promise.all(
        b.entries.map(async (e) => {
          const op: ClientOp = { op: 'write', key: e.key, value: e.value ?? '' };
          const cid = e.client_id ?? b.client_id;
          if (cid !== undefined) op.client_id = cid;
          const r = await doWrite(c, op, e.target_node_id);
          return r.ok ? { entry: r.entry, node_id: r.node_id } : { key: e.key, error: r.error };
        }),
      );
      return { status: 200, body: { results } };
    },
    { summary: 'Write several keys in one request (each answered on its own)', body: BatchWriteRequest },
  );
}
