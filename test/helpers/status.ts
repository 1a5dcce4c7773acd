/**
 * Test helper: a core's failed reply or control result seen with the HTTP status the edge answers
 * it with (statusOf in src/replication/errors.ts), so tests written against the statuses the cores
 * used to set keep asserting them. Successful results pass through unchanged.
 */
import type { ClientReply, ControlResult } from '../../src/replication/core.js';
import { statusOf, type OpKind, type ReplicationStatus } from '../../src/replication/errors.js';

type WithStatus<T> = T extends { ok: false } ? T & { status: ReplicationStatus } : T;

export function withStatus<T extends ClientReply | ControlResult | undefined>(r: T, op: OpKind): WithStatus<T> {
  if (r === undefined || r.ok) return r as WithStatus<T>;
  return { ...r, status: statusOf(r.code, op) } as WithStatus<T>;
}
