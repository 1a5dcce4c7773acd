/**
 * Small request helpers the replication route modules share: decoding and bounding query
 * parameters, refusing malformed strings, naming a missing node, asking one node within the call
 * deadline, and turning a failed client operation or control into its status (errors.ts statusOf,
 * the one table). They hold no state; the clusters and the event stream are in context.ts.
 */
import { HttpError, type HttpRequest, type HttpResult } from '../../http/index.js';
import type { Cluster } from '../cluster.js';
import { withinMs } from '../cluster.js';
import type { ClientReply, NodeId } from '../core.js';
import { ReplicationError, statusOf, type OpKind } from '../errors.js';
import { nodeCallDeadlineMs, nodeIdCharsMax } from '../limits.js';
import { NodeDownError, type NodeHandle } from '../node-handle.js';

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The node `nodeId` of cluster `c`, or a 404 naming it (echoed at most at its length bound). */
export function getNode(c: Cluster, nodeId: string | undefined | null): NodeId {
  if (!nodeId || !c.nodes.has(nodeId)) {
    throw new HttpError(404, `node ${String(nodeId).slice(0, nodeIdCharsMax)} not found in cluster ${c.id}`);
  }
  return nodeId;
}

/**
 * Strings a node will store must be well-formed UTF-16: a lone surrogate (valid in JSON) cannot be
 * sent back in a query (encodeURIComponent throws) nor survive the base64 of a value, so it is a 400.
 */
export function wellFormed(field: string, s: string | undefined): void {
  if (s === undefined || !loneSurrogate.test(s)) return;
  throw new HttpError(400, `${field}: must be well-formed Unicode (it contains a lone surrogate)`);
}

/** A query parameter bounded like a body field (limits.ts): null when absent, 400 past `charsMax`. */
export function boundedQuery(req: HttpRequest<unknown>, name: string, charsMax: number): string | null {
  const v = req.query.get(name);
  if (v !== null && v.length > charsMax) {
    throw new HttpError(400, `${name}: must not have more than ${charsMax} characters`);
  }
  return v;
}

/** A failed client operation: the status comes from the one table (errors.ts statusOf). */
export function replyError(r: Extract<ClientReply, { ok: false }>, op: OpKind): HttpResult {
  return { status: statusOf(r.code, op), body: { error: r.error } };
}

/** A refused node control (cluster.ts ReplicationError) becomes its table status; anything else is a bug. */
export function controlFailed(err: unknown): never {
  throw new HttpError(err instanceof ReplicationError ? statusOf(err.code, 'control') : 500, (err as Error).message);
}

/**
 * One node's answer within nodeCallDeadlineMs: a crashed node is a 409 at once, a silent one a
 * 409 after the deadline (both name what to do).
 */
export async function callNode<T>(n: NodeHandle, call: (h: NodeHandle) => Promise<T>): Promise<T> {
  if (n.isDown)
    throw new HttpError(
      409,
      `node ${n.id} has crashed (${n.exit?.reason ?? 'exited'}); restart it with POST .../nodes/${n.id}/restart`,
    );
  let err: unknown;
  const r = await withinMs(
    call(n).catch((e: unknown) => {
      err = e;
      throw e;
    }),
    nodeCallDeadlineMs,
  );
  if (r !== undefined) return r;
  if (err instanceof NodeDownError || n.isDown)
    throw new HttpError(409, `node ${n.id} crashed before answering; restart it with POST .../nodes/${n.id}/restart`);
  if (err !== undefined) throw err;
  throw new HttpError(409, `node ${n.id} did not answer within ${nodeCallDeadlineMs} ms (stalled or overloaded)`);
}

/** An optional boolean query flag: absent -> `dflt`, 0/false, 1/true, anything else an error. */
export function flagQuery(
  query: URLSearchParams,
  name: string,
  dflt: boolean,
): { ok: true; value: boolean } | { ok: false; error: string } {
  const v = query.get(name);
  if (v === null) return { ok: true, value: dflt };
  if (v === '0' || v === 'false') return { ok: true, value: false };
  if (v === '1' || v === 'true') return { ok: true, value: true };
  return { ok: false, error: `${name}: must be 1, true, 0 or false (got ${JSON.stringify(v.slice(0, 32))})` };
}

/** An optional integer query parameter in [min, max]; a 400 naming it otherwise. */
export function intQuery(query: URLSearchParams, name: string, dflt: number, min: number, max: number): number {
  const raw = query.get(name);
  if (raw === null || raw === '') return dflt;
  const n = /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const got = JSON.stringify(raw.slice(0, 32));
    throw new HttpError(400, `${name}: must be an integer from ${min} to ${max} (got ${got})`);
  }
  return n;
}
