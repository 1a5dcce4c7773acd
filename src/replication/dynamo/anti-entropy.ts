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
  const summary = summaryOf(mine);
  return { root: summary.root, leaves: summary.leaves };
}

/** The (key, digest) pairs of a digest set, in its order, with the leaves and root they give. */
interface Summary {
  keys: string[];
  digests: string[];
  /** Read-only: handed out in the messages of every exchange over the same pairs. */
  leaves: string[];
  root: string;
}

/** The last few summaries made (the oldest replaced first). */
const summaries: Summary[] = [];
const summariesMax = 8;
let summaryNext = 0;

/**
 * The Merkle leaves and root of a digest set, remembered for the last few sets: both sides of an
 * exchange between replicas that agree, and a node's rounds while its store stays the same, ask
 * for the same pairs again, and a tree costs a hash per non-empty node on every path up. The leaves
 * and root are a pure function of the pairs, so a remembered set with the same pairs in the same
 * order gives the same answer as building them again.
 */
function summaryOf(mine: Digests): Summary {
  for (const s of summaries) if (samePairs(s, mine)) return s;
  const leaves = merkleLeaves(mine.entries());
  const keys: string[] = [];
  const digests: string[] = [];
  for (const [key, digest] of mine) {
    keys.push(key);
    digests.push(digest);
  }
  // Not frozen (a frozen array made every decoder's isStringArray take a slow path): read-only by rule.
  const summary: Summary = { keys, digests, leaves, root: merkleRoot(leaves) };
  summaries[summaryNext] = summary;
  summaryNext = (summaryNext + 1) % summariesMax;
  return summary;
}

function samePairs(s: Summary, mine: Digests): boolean {
  if (s.keys.length !== mine.size) return false;
  let i = 0;
  for (const [key, digest] of mine) {
    if (s.keys[i] !== key || s.digests[i] !== digest) return false;
    i++;
  }
  return true;
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
  const { leaves, root } = summaryOf(mine);
  if (root === theirs.root) return null;
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
