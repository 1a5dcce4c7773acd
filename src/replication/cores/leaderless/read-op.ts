/**
 * A read a leaderless node coordinates: the replies it has gathered (full versions and digests),
 * newest-wins by HLC timestamp then node id, which digest readers to fetch in full, and whom read
 * repair must update. Pure decisions over the op's own data: it returns whom to ask or repair and
 * the reply to give, and the core sends and answers.
 */
import type { ClientReply, NodeId, ReadRepairMode, Version } from '../../core.js';
import { lwwNewer, versionDigest } from '../../dynamo/version.js';
import type { OpBase } from './op.js';
import { shortfall, slotOf } from './placement.js';

export interface ReadOp extends OpBase {
  kind: 'read';
  mode: ReadRepairMode;
  /** The client has its answer; the op may still be repairing or waiting for late replies. */
  answered: boolean;
  /** Digest mode: the replica asked for the full value first. */
  dataReplica: NodeId | null;
  fullReplies: Map<NodeId, Version | null>;
  digestReplies: Map<NodeId, string>;
  /** Nodes asked for their full value after a digest mismatch (or a silent data replica). */
  fullAsked: Set<NodeId>;
  newest: Version | null;
  /** Sync mode: stale replicas whose repair ack the answer waits for. */
  repairAcksAwaited: Set<NodeId>;
  syncRepairSent: boolean;
  /** Digest of the version each node was last repaired with. */
  repairedWith: Map<NodeId, string>;
}

/** A new read, before any reply: the coordinator's ids, timers and placement (`base`), then the read's own fields. */
export function newReadOp(base: OpBase, mode: ReadRepairMode): ReadOp {
  return {
    roundTripId: base.roundTripId,
    requestId: base.requestId,
    key: base.key,
    startedAt: base.startedAt,
    deadline: base.deadline,
    probeAt: base.probeAt,
    groups: base.groups,
    slots: base.slots,
    used: base.used,
    kind: 'read',
    mode,
    answered: false,
    dataReplica: null,
    fullReplies: new Map(),
    digestReplies: new Map(),
    fullAsked: new Set(),
    newest: null,
    repairAcksAwaited: new Set(),
    syncRepairSent: false,
    repairedWith: new Map(),
  };
}

/** Newest wins (HLC timestamp, then node id); null when every entry is null. */
export function newestOf(versions: Iterable<Version | null>): Version | null {
  let best: Version | null = null;
  for (const v of versions) {
    if (v && (!best || lwwNewer(v, best))) best = v;
  }
  return best;
}

/**
 * Digest responders whose digest differs from `newest`'s and who have not sent their full value:
 * `waiting` counts them, `toAsk` lists those not asked yet (now marked asked; the core sends).
 */
export function digestMismatches(op: ReadOp, newest: Version | null): { waiting: number; toAsk: NodeId[] } {
  const newestDigest = versionDigest(newest);
  const toAsk: NodeId[] = [];
  let waiting = 0;
  for (const [node, digest] of op.digestReplies) {
    if (digest === newestDigest || op.fullReplies.has(node)) continue;
    waiting++;
    if (!op.fullAsked.has(node)) {
      op.fullAsked.add(node);
      toAsk.push(node);
    }
  }
  return { waiting, toAsk };
}

/**
 * Digest responders whose digest differs from `newest`'s and whose full value never came: each may
 * hold a newer version, so an answer from `newest` could be stale. Read-only (unlike digestMismatches).
 */
export function unresolvedDigests(op: ReadOp, newest: Version | null): NodeId[] {
  const newestDigest = versionDigest(newest);
  const out: NodeId[] = [];
  for (const [node, digest] of op.digestReplies) {
    if (digest !== newestDigest && !op.fullReplies.has(node)) out.push(node);
  }
  return out;
}

/**
 * Digest mode with no full value yet (the data replica is silent): every digest responder not yet
 * asked is asked for its full value (now marked asked; the core sends).
 */
export function silentDataFetches(op: ReadOp): NodeId[] {
  if (op.fullReplies.size > 0) return [];
  const toAsk: NodeId[] = [];
  for (const node of op.digestReplies.keys()) {
    if (op.fullAsked.has(node)) continue;
    op.fullAsked.add(node);
    toAsk.push(node);
  }
  return toAsk;
}

/** Whether a responder is known to hold the newest version (by its full value or its digest). */
export function responderCurrent(op: ReadOp, node: NodeId, newestDigest: string): boolean {
  if (op.fullReplies.has(node)) {
    const v = op.fullReplies.get(node) ?? null;
    if (versionDigest(v) === newestDigest) return true;
    return v !== null && op.newest !== null && !lwwNewer(op.newest, v);
  }
  return op.digestReplies.get(node) === newestDigest;
}

/** Every node that has replied, full or digest, in first-reply order. */
export function responders(op: ReadOp): NodeId[] {
  // The full repliers, then the digest repliers not among them: what deduplicating both lists in
  // that order with a Set gives, without the Set and the two spread lists.
  const out: NodeId[] = [];
  for (const node of op.fullReplies.keys()) out.push(node);
  for (const node of op.digestReplies.keys()) if (!op.fullReplies.has(node)) out.push(node);
  return out;
}

/**
 * Read repair's targets: every responder holding an older version (or none) and not yet repaired
 * with the newest, each with the replica it stands in for (null for an intended replica). Marks
 * them repaired; the core sends the puts. Tombstones are repaired like values (no resurrection).
 */
export function staleResponders(op: ReadOp): Array<{ node: NodeId; hintFor: NodeId | null }> {
  if (!op.newest) return [];
  const newestDigest = versionDigest(op.newest);
  const out: Array<{ node: NodeId; hintFor: NodeId | null }> = [];
  for (const node of responders(op)) {
    if (op.repairedWith.get(node) === newestDigest || responderCurrent(op, node, newestDigest)) continue;
    op.repairedWith.set(node, newestDigest);
    const slot = slotOf(op, node);
    out.push({ node, hintFor: slot && slot.intended !== node ? slot.intended : null });
  }
  return out;
}

/** The client's answer from the newest version known: the entry, or not_found (none, or a tombstone). */
export function readReply(op: ReadOp, coordinator: NodeId): ClientReply {
  const v = op.newest;
  if (!v || v.tombstone) return { id: op.requestId, ok: false, code: 'not_found', error: 'key not found' };
  return { id: op.requestId, ok: true, result: { kind: 'entry', entry: v, node_id: coordinator } };
}

/** Answered, no repair ack or full fetch outstanding, and every slot replied: the op can go. */
export function readSettled(op: ReadOp): boolean {
  if (!op.answered || op.repairAcksAwaited.size > 0) return false;
  for (const node of op.fullAsked) if (!op.fullReplies.has(node)) return false;
  return op.slots.every((s) => s.done);
}

/**
 * The quorum_failed event's data and the client's quorum_not_met reply (the deadline passed).
 * `unresolved`: replicas whose differing digest was never resolved by their full value (digest
 * mode): the replies met R, but not R agreeing on a newest version this node has seen.
 */
export function readTimedOut(
  op: ReadOp,
  unresolved: readonly NodeId[] = [],
): { event: Record<string, unknown>; reply: ClientReply } {
  const { done, required } = shortfall(op);
  if (unresolved.length > 0) {
    const nodes = unresolved.join(', ');
    return {
      event: { key: op.key, op: 'read', replies: done, required, unresolved_digests: [...unresolved] },
      reply: {
        id: op.requestId,
        ok: false,
        code: 'quorum_not_met',
        error: `read quorum not met: the digest of ${nodes} differs and its full value did not come in time`,
      },
    };
  }
  return {
    event: { key: op.key, op: 'read', replies: done, required },
    reply: {
      id: op.requestId,
      ok: false,
      code: 'quorum_not_met',
      error: `read quorum not met: ${done}/${required} replies`,
    },
  };
}
