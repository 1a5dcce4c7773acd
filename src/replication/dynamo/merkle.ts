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

/** Leaf hashes: one per bucket, '' for an empty bucket. */
export function merkleLeaves(entries: Iterable<readonly [string, string]>, buckets: number = merkleBuckets): string[] {
  // Only the buckets that hold a key get a list (a store of a few keys touches a few of the 64).
  const lines: Array<string[] | undefined> = [];
  for (let i = 0; i < buckets; i++) lines.push(undefined);
  for (const [key, digest] of entries) {
    const b = bucketOf(key, buckets);
    const line = `${key}\u0000${digest}`;
    const ls = lines[b];
    if (ls === undefined) lines[b] = [line];
    else ls.push(line);
  }
  const leaves: string[] = [];
  for (const ls of lines)
    leaves.push(ls === undefined ? '' : hashText(ls.length === 1 ? (ls[0] as string) : ls.sort().join('\n')));
  return leaves;
}

/** One level up the tree: neighbours hashed pairwise (two empty children make an empty parent). */
export function merkleParents(level: readonly string[]): string[] {
  const next: string[] = [];
  for (let i = 0; i < level.length; i += 2) {
    const l = level[i] as string;
    const r = level[i + 1] ?? '';
    next.push(l === '' && r === '' ? '' : hashText(`${l}|${r}`));
  }
  return next;
}

/** The root over the leaves (pairwise hashing up a binary tree). */
export function merkleRoot(leaves: readonly string[]): string {
  let level: readonly string[] = leaves;
  if (level.length === 0) return '';
  while (level.length > 1) level = merkleParents(level);
  return level[0] as string;
}

/** Indices of buckets whose hashes differ. */
export function differingBuckets(a: readonly string[], b: readonly string[]): number[] {
  const out: number[] = [];
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if ((a[i] ?? '') !== (b[i] ?? '')) out.push(i);
  return out;
}
