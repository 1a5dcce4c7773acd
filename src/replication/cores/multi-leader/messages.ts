/**
 * The multi-leader core's wire: every message one node sends another, tagged `kind` like raft's, and
 * the decoder that turns an untrusted peer payload into one of them (null when malformed; the core
 * counts it, never throws). No behaviour here: what a message does is the core's business.
 */
import type { Version } from '../../core.js';
import { isNumberArray, isObject, isPairArray, isStringArray, isVersionArray } from '../../dynamo/version.js';

export type MultiLeaderMessage =
  /** Every version of the keys written here since the last flush (a write's push to every peer). */
  | { kind: 'replicate'; versions: Version[] }
  /** Anti-entropy, initiator -> peer: the Merkle root and leaves over the initiator's key digests. */
  | { kind: 'anti_entropy_root'; root: string; leaves: string[] }
  /** Peer -> initiator: its (key, digest) pairs in the buckets that differ (dynamo/anti-entropy.ts). */
  | { kind: 'anti_entropy_keys'; buckets: number[]; entries: Array<[string, string]>; truncated: boolean }
  /** Initiator -> peer: its versions of keys that differ (merged by the receive rule, like `replicate`). */
  | { kind: 'anti_entropy_push'; versions: Version[] }
  /** Initiator -> peer: keys it lacks or holds differently; the peer answers with an anti_entropy_push. */
  | { kind: 'anti_entropy_pull'; keys: string[] };

/** Decodes a peer message; null for anything malformed (counted, never thrown). */
export function decodeMessage(x: unknown): MultiLeaderMessage | null {
  if (!isObject(x)) return null;
  switch (x.kind) {
    case 'replicate':
    case 'anti_entropy_push':
      return isVersionArray(x.versions) ? { kind: x.kind, versions: x.versions } : null;
    case 'anti_entropy_root':
      return typeof x.root === 'string' && isStringArray(x.leaves)
        ? { kind: 'anti_entropy_root', root: x.root, leaves: x.leaves }
        : null;
    case 'anti_entropy_keys':
      return isNumberArray(x.buckets) && isPairArray(x.entries) && typeof x.truncated === 'boolean'
        ? { kind: 'anti_entropy_keys', buckets: x.buckets, entries: x.entries, truncated: x.truncated }
        : null;
    case 'anti_entropy_pull':
      return isStringArray(x.keys) ? { kind: 'anti_entropy_pull', keys: x.keys } : null;
    default:
      return null;
  }
}
