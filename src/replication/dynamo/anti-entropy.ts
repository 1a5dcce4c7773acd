/**
 * One bounded anti-entropy exchange between two replicas, as pure functions (Dynamo §4.7):
 * the initiator sends a Merkle root and leaves over the keys both hold; the responder answers with
 * its (key, digest) pairs of the differing buckets; the initiator pushes what it has that differs
 * and pulls what the responder has that it lacks or holds differently. Merging is the caller's job
 * (a newer-wins rule or a vector-clock merge), so pushing both ways is safe.
 * Not a scheduler: which peer and when is the core's choice.
 */
import { bucketOf, differingBuckets, merkleBuckets, merkleLeaves, merkleRoot } from './merkle.js';

export type Digests = ReadonlyMap<string, string>;

export interface AeRoot {
  root: string;
  leaves: string[];
}

export interface AeKeys {
  buckets: number[];
  /** The responder's (key, digest) pairs in those buckets, at most `max` of them. */
  entries: Array<[string, string]>;
  /** True when `max` cut the list short: the next round continues. */
  truncated: boolean;
}

export interface AePlan {
  /** Keys the initiator sends its versions of. */
  push: string[];
  /** Keys the initiator asks the responder for. */
  pull: string[];
}

export function aeRoot(mine: Digests): AeRoot {
  const leaves = merkleLeaves(mine.entries());
  return { root: merkleRoot(leaves), leaves };
}

/**
 * The responder's answer: null when the roots match (nothing to do). Whole buckets are listed, in
 * bucket order, while they fit in `max` pairs, and `buckets` names only those: an exchange then
 * settles every bucket it lists, so the next round lists others. (Listing the first `max` keys in
 * key order instead took a little of every bucket, left them all differing, and listed the same
 * keys again each round: replicas more than `max` keys apart never converged.) A first bucket
 * larger than `max` is cut at `max` keys (`truncated`), and the next round continues it.
 */
export function aeAnswer(mine: Digests, theirs: AeRoot, max: number): AeKeys | null {
  const leaves = merkleLeaves(mine.entries());
  if (merkleRoot(leaves) === theirs.root) return null;
  const differing = differingBuckets(leaves, theirs.leaves);
  if (differing.length === 0) return null;
  const byBucket = new Map<number, Array<[string, string]>>();
  for (const b of differing) byBucket.set(b, []);
  for (const [key, digest] of mine.entries()) byBucket.get(bucketOf(key, merkleBuckets))?.push([key, digest]);
  const buckets: number[] = [];
  const entries: Array<[string, string]> = [];
  let truncated = false;
  for (const b of [...differing].sort((x, y) => x - y)) {
    const inBucket = (byBucket.get(b) as Array<[string, string]>).sort((x, y) => (x[0] < y[0] ? -1 : 1));
    if (entries.length + inBucket.length <= max) {
      buckets.push(b);
      entries.push(...inBucket);
      continue;
    }
    if (buckets.length === 0) {
      buckets.push(b);
      entries.push(...inBucket.slice(0, max));
      truncated = true;
    }
    break;
  }
  return { buckets, entries, truncated };
}

/** What the initiator sends and asks for, given the responder's pairs (each list at most `max`). */
export function aePlan(mine: Digests, answer: AeKeys, max: number): AePlan {
  const theirs = new Map(answer.entries);
  const wanted = new Set(answer.buckets);
  const push: string[] = [];
  const pull: string[] = [];
  const lastListed =
    answer.entries.length > 0 ? (answer.entries[answer.entries.length - 1] as [string, string])[0] : '';
  for (const [key, digest] of [...mine.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    if (!wanted.has(bucketOf(key, merkleBuckets))) continue;
    // A truncated answer says nothing about keys past its last one: leave them to the next round.
    if (answer.truncated && key > lastListed) continue;
    const other = theirs.get(key);
    if (other === digest) continue;
    if (push.length < max) push.push(key);
    if (other !== undefined && pull.length < max) pull.push(key);
  }
  for (const key of theirs.keys()) {
    if (!mine.has(key) && pull.length < max) pull.push(key);
  }
  return { push, pull };
}
