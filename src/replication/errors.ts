/**
 * The one place a replication outcome code becomes an HTTP status: `statusOf(code, opKind)`, used by
 * the HTTP edge (routes/*.ts, checkers/routes.ts). The cores and the cluster only name what happened
 * (ErrorCode); they never pick a status. This module is not the HTTP layer (HttpError stays there).
 */
import type { ClientOp, ErrorCode } from './core.js';

/** What the client asked for: a client operation, or a node/cluster control (membership, pause, ...). */
export type OpKind = ClientOp['op'] | 'control';

export type ReplicationStatus = 400 | 404 | 409 | 507;

/**
 * Status per code for every operation but a read (../shared/specs/DECISIONS.md, "Replication
 * simulator": unknown cluster or node 404, invalid input 400, unmet quorum, a write aimed at a
 * follower, a paused node, no leader yet and sync/semi-sync timeouts 409).
 */
const statusByCode: Record<ErrorCode, ReplicationStatus> = {
  not_leader: 409,
  no_leader: 409,
  // A sync/semi-sync or commit timeout: 409, and the reply is marked indeterminate (the write may
  // still take effect), which the linearizability history records as unknown.
  timeout: 409,
  quorum_not_met: 409,
  not_found: 404,
  paused: 409,
  bad_request: 400,
  unsupported: 400,
  refused: 409,
  // The write would take a node past its stored-bytes budget (REPLSIM_NODE_MEMORY_MB): 507
  // Insufficient Storage, the one 5xx a client can act on (delete keys or raise the budget).
  storage_full: 507,
  node_crashed: 409,
};

/** Every ErrorCode, for exhaustive tables (tests, documentation). */
export const errorCodes = Object.keys(statusByCode) as ErrorCode[];

/** Every operation kind statusOf distinguishes. */
export const opKinds: readonly OpKind[] = ['read', 'write', 'delete', 'batch', 'control'];

/**
 * The HTTP status for a failed operation. Odd cases the spec forces:
 * - Every read failure is 404, whatever the cause: a missing key, an unknown node, a paused node, an
 *   unmet read quorum, a timeout or a crashed node (../shared/specs/DECISIONS.md: "The read endpoint's
 *   only error status is 404 (the spec's table)"). The message says which.
 * - So a missing `key` query parameter is a 404 on GET .../read (`bad_request` on a read) but a 400
 *   on DELETE .../kv (`bad_request` on a delete): the spec's table lists only 404 for the read and
 *   400, 409 for the delete (replication-simulator.md, endpoint table).
 */
export function statusOf(code: ErrorCode, op: OpKind): ReplicationStatus {
  if (op === 'read') return 404;
  return statusByCode[code];
}

/**
 * A refused cluster or node control (crash, restart, pause, membership change), thrown by
 * cluster.ts and answered by the edge with statusOf(code, 'control'). It carries a code, never a
 * status; anything else thrown there is a bug (500).
 */
export class ReplicationError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ReplicationError';
  }
}
