/**
 * Consistent hashing with virtual nodes (Karger et al.; Dynamo §4.2): every member owns 128 tokens
 * on a 32-bit ring, a key belongs to the first distinct members met walking clockwise from its hash.
 * The ring is a pure function of the member set (creation order does not matter), so every node
 * computes the same preference list. Not a membership protocol: who is a member is an input.
 */
import { hash } from 'node:crypto';
import type { NodeId } from '../core.js';
import { shortTextMemo } from '../../util/memo.js';

export const vnodesPerNode = 128;

/**
 * Position of a string on the ring: the first 32 bits of its MD5 (Dynamo hashes keys with MD5).
 * Asked for on every request and every anti-entropy round: remembered for the last 512 keys of at
 * most 160 characters (the same number; a call into OpenSSL saved). crypto.hash: the one-shot form,
 * about 2.5x cheaper than a Hash object for a short string.
 */
export const ringPosition: (s: string) => number = shortTextMemo(
  (s) => hash('md5', s, 'buffer').readUInt32BE(0),
  512,
  160,
);

interface Token {
  pos: number;
  node: NodeId;
}

export class HashRing {
  readonly members: readonly NodeId[];
  private readonly tokens: Token[];

  constructor(members: readonly NodeId[], vnodes: number = vnodesPerNode) {
    this.members = [...new Set(members)].sort();
    this.tokens = [];
    for (const node of this.members) {
      for (let i = 0; i < vnodes; i++) this.tokens.push({ pos: ringPosition(`${node}#vnode${i}`), node });
    }
    // Ties between tokens are broken by node id so the order never depends on insertion order.
    this.tokens.sort((a, b) => a.pos - b.pos || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  }

  /** Index of the first token at or after `pos` (wrapping to 0). */
  private firstTokenAt(pos: number): number {
    let lo = 0;
    let hi = this.tokens.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.tokens[mid] as Token).pos < pos) lo = mid + 1;
      else hi = mid;
    }
    return lo === this.tokens.length ? 0 : lo;
  }

  /**
   * Every member, distinct, in the order met walking clockwise from the key: the first N are the
   * preference list, the rest are the stand-ins a sloppy quorum recruits (Dynamo §4.6).
   */
  walk(key: string, limit: number = this.members.length): NodeId[] {
    const out: NodeId[] = [];
    if (this.tokens.length === 0) return out;
    const want = Math.min(limit, this.members.length);
    const seen = new Set<NodeId>();
    const start = this.firstTokenAt(ringPosition(key));
    for (let k = 0; k < this.tokens.length && out.length < want; k++) {
      const t = this.tokens[(start + k) % this.tokens.length] as Token;
      if (!seen.has(t.node)) {
        seen.add(t.node);
        out.push(t.node);
      }
    }
    return out;
  }

  /** The key's N preferred replicas: N distinct members (fewer when the ring has fewer). */
  preferenceList(key: string, n: number): NodeId[] {
    return this.walk(key, n);
  }

  /** Fraction of the hash space each member owns (the arcs ending at its tokens). */
  ownershipShares(): Map<NodeId, number> {
    const shares = new Map<NodeId, number>(this.members.map((m) => [m, 0]));
    const space = 2 ** 32;
    const count = this.tokens.length;
    for (let i = 0; i < count; i++) {
      const t = this.tokens[i] as Token;
      const prev = this.tokens[(i - 1 + count) % count] as Token;
      const arc = count === 1 ? space : (t.pos - prev.pos + space) % space;
      shares.set(t.node, (shares.get(t.node) ?? 0) + arc / space);
    }
    return shares;
  }
}

const ringCacheMax = 16;
const ringCache = new Map<string, HashRing>();

/** The ring for a member set, memoised (building one hashes 128 tokens per member). */
export function ringFor(members: readonly NodeId[]): HashRing {
  const id = [...new Set(members)].sort().join('\u0000');
  let ring = ringCache.get(id);
  if (!ring) {
    ring = new HashRing(members);
    if (ringCache.size >= ringCacheMax) {
      const oldest = ringCache.keys().next().value;
      if (oldest !== undefined) ringCache.delete(oldest);
    }
    ringCache.set(id, ring);
  }
  return ring;
}

/** Pure: n distinct members for `key`, deterministic for a key and a member set. */
export function preferenceList(key: string, n: number, members: readonly NodeId[]): NodeId[] {
  return ringFor(members).preferenceList(key, n);
}
