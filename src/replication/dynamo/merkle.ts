/**
 * Merkle summaries for anti-entropy (Dynamo §4.7): keys fall into a fixed number of buckets by hash,
 * each bucket is hashed over its sorted (key, digest) pairs, and a binary tree over the buckets
 * gives a root. Two replicas compare roots, then leaves, then exchange only the keys of differing
 * buckets. Pure functions over (key, digest) pairs; what a digest covers is the caller's choice.
 */
import { hash } from 'node:crypto';
import { ringPosition } from './ring.js';
import { shortTextMemo } from '../../util/memo.js';

export const merkleBuckets = 64;

/**
 * The MD5 of a text, hex. The cores digest the same few versions and merkle parents over and over
 * (every read, every anti-entropy round): the last 512 texts of at most 160 characters are
 * remembered, skipping the call into OpenSSL (a bucket of many keys is hashed every time).
 * crypto.hash: the one-shot form, about 2.5x cheaper than a Hash object for a short string.
 */
export const hashText: (s: string) => string = shortTextMemo((s) => hash('md5', s, 'hex'), 512, 160);

export function bucketOf(key: string, buckets: number = merkleBuckets): number {
  return ringPosition(key) % buckets;
}

/** Each bucket's lines during one merkleLeaves call (reused: it never re-enters). */
const bucketLines: Array<string[] | undefined> = [];

/** Leaf hashes: one per bucket, '' for an empty bucket. */
export function merkleLeaves(entries: Iterable<readonly [string, string]>, buckets: number = merkleBuckets): string[] {
  // Only the buckets that hold a key get a list (a store of a few keys touches a few of the 64).
  const lines = bucketLines;
  for (let i = 0; i < buckets; i++) lines[i] = undefined;
  for (const [key, digest] of entries) {
    const b = bucketOf(key, buckets);
    const line = `${key}\u0000${digest}`;
    const ls = lines[b];
    if (ls === undefined) lines[b] = [line];
    else ls.push(line);
  }
  // Sized once and filled in bucket order (pushing grew it several times per call).
  const leaves = new Array<string>(buckets);
  for (let i = 0; i < buckets; i++) {
    const ls = lines[i];
    leaves[i] = ls === undefined ? '' : hashText(ls.length === 1 ? (ls[0] as string) : ls.sort().join('\n'));
    lines[i] = undefined;
  }
  return leaves;
}

/** A parent over two children: empty over two empty ones, else the hash of both (merkleParents, merkleRoot). */
function merkleParent(l: string, r: string): string {
  return l === '' && r === '' ? '' : hashText(`${l}|${r}`);
}

/** One level up the tree: neighbours hashed pairwise (two empty children make an empty parent). */
export function merkleParents(level: readonly string[]): string[] {
  const next: string[] = [];
  for (let i = 0; i < level.length; i += 2) {
    const l = level[i] as string;
    const r = level[i + 1] ?? '';
    next.push(merkleParent(l, r));
  }
  return next;
}

/** merkleRoot's levels, each written over the one below (reused: it never re-enters). */
const rootLevel: Array<string | undefined> = [];

/**
 * The root over the leaves (pairwise hashing up a binary tree): merkleParents level by level, each
 * level written in place over the previous one in a scratch list (a parent at i/2 is written once
 * both its children at i and i + 1 have been read), instead of a new array per level.
 */
export function merkleRoot(leaves: readonly string[]): string {
  let n = leaves.length;
  if (n === 0) return '';
  const level = rootLevel;
  for (let i = 0; i < n; i++) level[i] = leaves[i];
  while (n > 1) {
    let j = 0;
    for (let i = 0; i < n; i += 2) {
      const l = level[i] as string;
      const r = i + 1 < n ? (level[i + 1] ?? '') : '';
      level[j++] = merkleParent(l, r);
    }
    n = j;
  }
  const root = level[0] as string;
  for (let i = 0; i < leaves.length; i++) level[i] = undefined;
  return root;
}

/** Indices of buckets whose hashes differ. */
export function differingBuckets(a: readonly string[], b: readonly string[]): number[] {
  const out: number[] = [];
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if ((a[i] ?? '') !== (b[i] ?? '')) out.push(i);
  return out;
}
