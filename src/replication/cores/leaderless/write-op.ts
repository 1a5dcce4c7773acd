/**
 * A write (or delete) a leaderless node coordinates, and a batch's fan-in of its entries' writes:
 * the replies and events a write ends with, built as values from the op's placement. It sends
 * nothing and changes no store: the core decides when a write ends and emits what these return.
 */
import type { ClientReply, NodeId, Version } from '../../core.js';
import type { OpBase } from './op.js';
import { doneCount, requiredTotal, shortfall, standIns } from './placement.js';

export interface WriteOp extends OpBase {
  kind: 'write';
  version: Version;
  /** The client has its answer (success or failure); the op may still be recruiting copies. */
  replied: boolean;
  /** Part of a batch: the batch's request id and this entry's index. */
  batch: { id: number; index: number } | null;
}

/** A batch request: one result per entry, answered once every entry's write ended. */
export interface BatchOp {
  requestId: number;
  results: Array<ClientReply | null>;
  remaining: number;
}

export function writeOpName(op: WriteOp): 'write' | 'delete' {
  return op.version.tombstone ? 'delete' : 'write';
}

/** Every slot holds an ack: nothing left to recruit, the op can go. */
export function writeSettled(op: WriteOp): boolean {
  for (const s of op.slots) if (!s.done) return false;
  return true;
}

/** The quorum_achieved event's data and the client's success reply. */
export function writeSucceeded(
  op: WriteOp,
  coordinator: NodeId,
  now: number,
): { event: Record<string, unknown>; reply: ClientReply } {
  const used = standIns(op);
  return {
    event: {
      key: op.key,
      op: writeOpName(op),
      acks: doneCount(op),
      required: requiredTotal(op),
      latency_ms: now - op.startedAt,
      sloppy: used.length > 0,
      stand_ins: used,
    },
    reply: { id: op.requestId, ok: true, result: { kind: 'entry', entry: op.version, node_id: coordinator } },
  };
}

/** The quorum_failed event's data and the client's quorum_not_met reply (the deadline passed). */
export function writeTimedOut(
  op: WriteOp,
  sloppyQuorum: boolean,
): { event: Record<string, unknown>; reply: ClientReply } {
  const { done, required } = shortfall(op);
  return {
    event: { key: op.key, op: writeOpName(op), acks: done, required, sloppy_quorum: sloppyQuorum },
    reply: {
      id: op.requestId,
      ok: false,
      code: 'quorum_not_met',
      error: `write quorum not met: ${done}/${required} acks`,
      // Replicas that acked keep the version: the write may still become visible.
      indeterminate: op.slots.some((s) => s.done),
    },
  };
}

/** The storage_full reply once budget refusals leave too few replicas for W. */
export function writeRefused(op: WriteOp, refusedBy: NodeId, storedBytesMax: number): ClientReply {
  const budget = storedBytesMax === Infinity ? 'its configured' : String(storedBytesMax);
  return {
    id: op.requestId,
    ok: false,
    code: 'storage_full',
    error:
      `write refused: replica ${refusedBy} would pass its stored-bytes budget of ${budget} bytes ` +
      '(REPLSIM_NODE_MEMORY_MB); delete keys or raise the budget',
    indeterminate: op.slots.some((s) => s.done),
  };
}

/**
 * Records one entry's result in its batch. Returns the batch's reply once every entry ended (the
 * first failure, else every entry written), and null while entries are still running.
 */
export function foldBatchResult(batch: BatchOp, index: number, r: ClientReply): ClientReply | null {
  batch.results[index] = r;
  if (--batch.remaining > 0) return null;
  const failed = batch.results.find((x) => x && !x.ok);
  if (failed) return { ...failed, id: batch.requestId };
  const entries: Version[] = [];
  for (const x of batch.results) if (x && x.ok && x.result.kind === 'entry') entries.push(x.result.entry);
  return { id: batch.requestId, ok: true, result: { kind: 'batch', entries } };
}
