/**
 * What a single-leader leader knows of one follower (etcd's tracker/progress.go in miniature): the
 * index it is known to match, the next one to send, the appends in flight, and whether it needs a
 * store copy; plus the pure rules that update it on an ack and on a stalled retransmit timer.
 * It sends nothing and holds no log: what goes out is the core's decision (single-leader.ts replicate).
 */
import type { NodeId } from '../../core.js';
import type { AckMessage } from './messages.js';
import { invariantBroken } from '../invariant-broken.js';

export interface Progress {
  /** The follower's last index known to match the leader's log (0 until it acks). */
  match: number;
  /** The index of the next entry to send it. */
  next: number;
  /** When we last sent something that is still unacknowledged (retransmit timer). */
  sentAt: number;
  /** Appends sent and not yet acknowledged (at most singleLeaderAppendsInFlightMax). */
  inflight: number;
  /** The follower is to get a store copy at the next drain. */
  needStoreCopy: boolean;
}

export function newProgress(next: number, now: number, needStoreCopy: boolean): Progress {
  if (next < 1) invariantBroken(`the next index to send is at least 1 (got ${next})`);
  return { match: 0, next, sentAt: now, inflight: 0, needStoreCopy };
}

/**
 * A follower's ack. Success: it matches up to `matchIndex` (capped at the leader's last index; a
 * stale ack never lowers what is known). Failure: it asks for the entries after `matchIndex`, or for
 * a store copy when matchIndex < 0 (a diverged history) or when those entries are compacted away
 * (before `firstIndex`).
 */
export function applyAck(p: Progress, ack: AckMessage, lastIndex: number, firstIndex: number, now: number): void {
  p.inflight = Math.max(0, p.inflight - 1);
  if (ack.success) {
    if (ack.matchIndex > p.match) {
      p.match = Math.min(ack.matchIndex, lastIndex);
      p.sentAt = now;
    }
    if (p.next <= p.match) p.next = p.match + 1;
  } else if (ack.matchIndex < 0 || ack.matchIndex < firstIndex - 1) {
    p.needStoreCopy = true;
    p.inflight = 0;
  } else {
    p.match = Math.min(p.match, ack.matchIndex);
    p.next = ack.matchIndex + 1;
    p.inflight = 0;
  }
}

/**
 * No progress from a lagging follower for `retransmitMs`: resend from what it has confirmed
 * (handles drops and pauses). True when the timer fired.
 */
export function retransmitIfStalled(p: Progress, lastIndex: number, now: number, retransmitMs: number): boolean {
  if (p.match >= lastIndex || now - p.sentAt < retransmitMs) return false;
  p.next = p.match + 1;
  p.inflight = 0;
  p.sentAt = now;
  return true;
}

/**
 * The leader's progress per follower: a map, its ids and entries also kept as two lists in the
 * map's (insertion) order, so the loops that run on every step (deadline, invariants, commit,
 * replicate) walk arrays instead of allocating iterators. The lists are read-only to callers.
 */
export class ProgressTable {
  private readonly map = new Map<NodeId, Progress>();
  /** Follower ids, in insertion order (the order the map iterates in). */
  ids: NodeId[] = [];
  /** Their progress, at the same positions. */
  list: Progress[] = [];

  get size(): number {
    return this.map.size;
  }

  get(id: NodeId): Progress | undefined {
    return this.map.get(id);
  }

  has(id: NodeId): boolean {
    return this.map.has(id);
  }

  /** As Map.set: a known id keeps its place. */
  set(id: NodeId, p: Progress): void {
    if (this.map.has(id)) this.list[this.ids.indexOf(id)] = p;
    else {
      this.ids.push(id);
      this.list.push(p);
    }
    this.map.set(id, p);
  }

  delete(id: NodeId): boolean {
    if (!this.map.delete(id)) return false;
    const i = this.ids.indexOf(id);
    this.ids.splice(i, 1);
    this.list.splice(i, 1);
    return true;
  }

  clear(): void {
    this.map.clear();
    this.ids = [];
    this.list = [];
  }

  keys(): IterableIterator<NodeId> {
    return this.map.keys();
  }

  [Symbol.iterator](): IterableIterator<[NodeId, Progress]> {
    return this.map[Symbol.iterator]();
  }
}

/**
 * An empty plain object for entries keyed by node id (status().followers), kept off the hidden-class
 * path that `{}` takes as node ids are stored into it. A version's one-entry clock (durable.ts
 * versionOf: `{}`, then its writer's id) takes that path too, so a follower object stored under `n2`
 * there turned the clock's small-integer field into a tagged one and threw away the optimised code
 * of everything that builds or reads versions, on a leader's first status() of a run. Observably the
 * same object: no own properties, Object.prototype; entries keep the order they were stored in.
 */
export function nodeKeyedRecord<T>(): Record<NodeId, T> {
  // Deleting a property that is not the last one leaves the object in dictionary mode, which has no
  // hidden class to share.
  const r: Record<string, unknown> = { _detached: 0, _empty: 0 };
  delete r['_detached'];
  delete r['_empty'];
  return r as Record<NodeId, T>;
}
