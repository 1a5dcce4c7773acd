/**
 * What a leaderless node holds for others and still has to hand over: the capped store of hinted
 * versions it keeps for unreachable owners (sloppy quorum, Dynamo §4.6), which owns the hint count,
 * and the keys to stream to nodes a membership change added to a preference list. Bookkeeping
 * only: the core decides when to send, records the durable changes and counts the bytes.
 */
import type { NodeId, Version } from '../../core.js';
import { lwwNewer } from '../../dynamo/version.js';
import { invariant } from '../../../util/assert.js';
import { invariantBroken } from '../invariant-broken.js';

export type HintPut =
  /** Held now; `replaced` is the older hint for the key it replaced, if any. */
  | { outcome: 'stored'; replaced: Version | undefined }
  /** A hint as new or newer is already held: nothing changes, and the sender may count it held. */
  | { outcome: 'already_newer' }
  /** A new key past the cap: refused (no ack), the caller counts it. */
  | { outcome: 'full' };

/** Hinted versions by owner then key, at most `hintsMax` of them. */
export class HintStore {
  private readonly held = new Map<NodeId, Map<string, Version>>();
  private heldCount = 0;

  constructor(readonly hintsMax: number) {
    invariant(Number.isInteger(hintsMax) && hintsMax >= 0, 'hintsMax is a non-negative integer');
  }

  /** Hinted versions held, over every owner. */
  get count(): number {
    return this.heldCount;
  }

  get(owner: NodeId, key: string): Version | undefined {
    return this.held.get(owner)?.get(key);
  }

  /** Owners with hints held. */
  get ownerCount(): number {
    return this.held.size;
  }

  /** Owners with hints, each with its versions by key (read-only: change them through this store). */
  owners(): IterableIterator<[NodeId, ReadonlyMap<string, Version>]> {
    return this.held.entries();
  }

  /** The newest hinted version of a key held for any owner. */
  newest(key: string): Version | undefined {
    let best: Version | undefined;
    for (const versions of this.held.values()) {
      const v = versions.get(key);
      if (v && (!best || lwwNewer(v, best))) best = v;
    }
    return best;
  }

  /** Holds `v` for `owner` unless an as-new hint is held or the cap refuses a new key. */
  put(owner: NodeId, v: Version): HintPut {
    let versions = this.held.get(owner);
    const current = versions?.get(v.key);
    if (current && !lwwNewer(v, current)) return { outcome: 'already_newer' };
    if (!current && this.heldCount >= this.hintsMax) return { outcome: 'full' };
    if (!versions) {
      versions = new Map();
      this.held.set(owner, versions);
    }
    if (!current) this.heldCount++;
    versions.set(v.key, v);
    return { outcome: 'stored', replaced: current };
  }

  /** A restarted node's hints for one owner, as they were (the cap applied when they were stored). */
  restore(owner: NodeId, versions: Map<string, Version>): void {
    if (this.held.has(owner)) invariantBroken(`hints for ${owner} restored twice`);
    if (versions.size === 0) return;
    this.held.set(owner, versions);
    this.heldCount += versions.size;
  }

  /**
   * The owner acknowledged the version of `key` with HLC `timestamp`: that exact version is settled
   * and returned; a newer hint for the key stays for the next round (null).
   */
  settle(owner: NodeId, key: string, timestamp: number): Version | null {
    const versions = this.held.get(owner);
    const v = versions?.get(key);
    if (!versions || v?.timestamp !== timestamp) return null;
    versions.delete(key);
    this.heldCount--;
    if (versions.size === 0) this.held.delete(owner);
    return v;
  }

  /** The owner left the cluster: its hints have nowhere to go. Returns them, now dropped. */
  dropOwner(owner: NodeId): Version[] {
    const versions = this.held.get(owner);
    if (!versions) return [];
    this.held.delete(owner);
    this.heldCount -= versions.size;
    return [...versions.values()];
  }

  /** At most `max` of an owner's hints, for one handoff message. */
  batchFor(owner: NodeId, max: number): Version[] {
    const out: Version[] = [];
    for (const v of this.held.get(owner)?.values() ?? []) {
      if (out.length >= max) break;
      out.push(v);
    }
    return out;
  }

  /** Keys held per owner, sorted (the `hints` control). */
  keysByOwner(): Record<NodeId, string[]> {
    const out: Record<NodeId, string[]> = {};
    for (const [owner, versions] of this.held) out[owner] = [...versions.keys()].sort();
    return out;
  }

  /** Fails naming the first owner kept with no hints (the entries are walked only then). */
  private emptyOwnerKept(): never {
    let empty = '';
    for (const [owner, versions] of this.held) {
      if (versions.size === 0) {
        empty = owner;
        break;
      }
    }
    return invariantBroken(`an empty hint map is kept for ${empty}`);
  }

  /** The count is the sum of held hints, within the cap, and no owner is kept with none. */
  checkInvariants(): void {
    // No owner held (the usual step): the sum is 0, and the loop below would only make an iterator.
    if (this.held.size === 0) {
      if (this.heldCount !== 0) invariantBroken(`hint count ${this.heldCount} !== 0 hints held`);
      return;
    }
    let sum = 0;
    for (const versions of this.held.values()) {
      if (versions.size === 0) this.emptyOwnerKept();
      sum += versions.size;
    }
    if (sum !== this.heldCount) invariantBroken(`hint count ${this.heldCount} !== ${sum} hints held`);
    if (this.heldCount > this.hintsMax) invariantBroken(`hints held ${this.heldCount} > hintsMax ${this.hintsMax}`);
  }
}

/** Keys to stream to nodes that joined their preference list (membership change), until acked. */
export class TransferSet {
  private readonly keysByNode = new Map<NodeId, Set<string>>();

  add(node: NodeId, key: string): void {
    let keys = this.keysByNode.get(node);
    if (!keys) {
      keys = new Set();
      this.keysByNode.set(node, keys);
    }
    keys.add(key);
  }

  nodes(): NodeId[] {
    return [...this.keysByNode.keys()];
  }

  forget(node: NodeId): void {
    this.keysByNode.delete(node);
  }

  /** Some node still waits for this key. */
  pending(key: string): boolean {
    for (const keys of this.keysByNode.values()) if (keys.has(key)) return true;
    return false;
  }

  /** Keys waiting over every node. */
  get count(): number {
    let sum = 0;
    for (const keys of this.keysByNode.values()) sum += keys.size;
    return sum;
  }

  /**
   * One transfer batch for `node`: at most `max` versions `lookup` still finds; keys it no longer
   * finds (deleted or moved out meanwhile) are forgotten, and so is a node left with none.
   */
  batchFor(node: NodeId, max: number, lookup: (key: string) => Version | undefined): Version[] {
    const keys = this.keysByNode.get(node);
    if (!keys) return [];
    const out: Version[] = [];
    for (const key of keys) {
      const v = lookup(key);
      if (!v) keys.delete(key);
      else if (out.length < max) out.push(v);
    }
    if (keys.size === 0) this.keysByNode.delete(node);
    return out;
  }

  /** `node` acknowledged these keys: returns those that were waiting (now settled). */
  settle(node: NodeId, keys: Iterable<string>): string[] {
    const waiting = this.keysByNode.get(node);
    if (!waiting) return [];
    const settled: string[] = [];
    for (const key of keys) if (waiting.delete(key)) settled.push(key);
    if (waiting.size === 0) this.keysByNode.delete(node);
    return settled;
  }

  checkInvariants(): void {
    if (this.keysByNode.size === 0) return;
    for (const [node, keys] of this.keysByNode)
      if (keys.size === 0) invariantBroken(`an empty transfer set is kept for ${node}`);
  }
}
