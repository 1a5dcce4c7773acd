/**
 * A cluster's record of client operations: the bounded history ring (what the linearizability
 * checker and GET .../history read) and the success and failure counters. It records outcomes
 * the nodes gave; it does not judge them (the checkers do) nor talk to any node.
 */
import type { ClientOp, ClientReply, NodeId } from '../core.js';
import { HistoryRing, type HistoryOp } from '../history.js';

export class OperationHistory {
  /** Bounded history: a ring of `opsMax` operations; what falls off is counted. */
  private readonly ring: HistoryRing;
  writes = 0;
  reads = 0;
  writeFailures = 0;

  constructor(opsMax: number) {
    this.ring = new HistoryRing(opsMax);
  }

  /** One operation's outcome on `nodeId`, by client `client`, between `invokeMs` and `completeMs`. */
  record(client: string, nodeId: NodeId, op: ClientOp, reply: ClientReply, invokeMs: number, completeMs: number): void {
    if (reply.ok) {
      if (op.op === 'read') this.reads++;
      else this.writes++;
    } else if (op.op !== 'read') this.writeFailures++;
    const outcome: HistoryOp['outcome'] = reply.ok ? 'ok' : reply.indeterminate ? 'info' : 'fail';
    const h = this.ring;
    switch (op.op) {
      case 'write':
        h.push(client, nodeId, 'write', op.key, op.value, invokeMs, completeMs, outcome);
        break;
      case 'delete':
        h.push(client, nodeId, 'delete', op.key, null, invokeMs, completeMs, outcome);
        break;
      case 'read':
        if (reply.ok || reply.code === 'not_found') {
          const seen = reply.ok && reply.result.kind === 'entry' ? reply.result.entry.value : null;
          h.push(client, nodeId, 'read', op.key, seen, invokeMs, completeMs, 'ok');
        }
        break;
      case 'batch':
        for (const e of op.entries) h.push(client, nodeId, 'write', e.key, e.value, invokeMs, completeMs, outcome);
        break;
    }
  }

  /** The recorded operations, oldest first. */
  toArray(): HistoryOp[] {
    return this.ring.toArray();
  }

  /** Operations held now. */
  get length(): number {
    return this.ring.length;
  }

  /** Operations that fell off the cap. */
  get dropped(): number {
    return this.ring.dropped;
  }

  /** Up to `limit` recorded operations from index `since` on (HistoryRing.slice), and the ring's bounds. */
  page(since: number, limit: number): { first: number; ops: HistoryOp[]; firstIndex: number; nextIndex: number } {
    const page = this.ring.slice(since, limit);
    return { ...page, firstIndex: this.ring.firstIndex, nextIndex: this.ring.nextIndex };
  }
}
