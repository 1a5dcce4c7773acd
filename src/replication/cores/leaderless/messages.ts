/**
 * The leaderless core's wire: every message one node sends another, tagged `kind` like raft's, and
 * the decoder that turns an untrusted peer payload into one of them (null when malformed; the core
 * counts it, never throws). No behaviour here: what a message does is the core's business.
 */
import type { NodeId, Version } from '../../core.js';
import {
  isNumberArray,
  isObject,
  isPairArray,
  isStringArray,
  isVersion,
  isVersionArray,
} from '../../dynamo/version.js';

/** Why versions are handed to their owner: held hints, or keys a membership change moved. */
export type HandoffPurpose = 'hint' | 'transfer';

export type LeaderlessMessage =
  /** Feeds the receiver's phi-accrual detector for the sender, and its hybrid logical clock. */
  | { kind: 'heartbeat'; hlc: number }
  /**
   * Store `version` (held for `hintFor` when set: a sloppy-quorum stand-in); acknowledge with
   * put_ack when `ack`; `repair` marks read repair (applied past the budget, never refused).
   * `roundTripId` is the coordinator's id for the request (not the client's request id).
   */
  | { kind: 'put'; roundTripId: number; version: Version; hintFor: NodeId | null; ack: boolean; repair: boolean }
  | { kind: 'put_ack'; roundTripId: number; key: string }
  /** The replica refused the put: it would pass its stored-bytes budget. */
  | { kind: 'put_nack'; roundTripId: number; key: string }
  /** Read a key: the full version, or only its digest when `digestOnly` (Cassandra's digest read). */
  | { kind: 'get'; roundTripId: number; key: string; digestOnly: boolean }
  | { kind: 'get_reply'; roundTripId: number; key: string; full: boolean; version: Version | null; digest: string }
  | { kind: 'handoff'; purpose: HandoffPurpose; versions: Version[] }
  /** [key, HLC timestamp] of each version received: only that exact version is settled. */
  | { kind: 'handoff_ack'; purpose: HandoffPurpose; items: Array<[string, number]> }
  | { kind: 'anti_entropy_root'; root: string; leaves: string[] }
  | { kind: 'anti_entropy_keys'; buckets: number[]; entries: Array<[string, string]>; truncated: boolean }
  | { kind: 'anti_entropy_push'; versions: Version[] }
  | { kind: 'anti_entropy_pull'; keys: string[] };

export type LeaderlessMessageKind = LeaderlessMessage['kind'];

function isHandoffPurpose(x: unknown): x is HandoffPurpose {
  return x === 'hint' || x === 'transfer';
}

function isKeyTimestampArray(x: unknown): x is Array<[string, number]> {
  return Array.isArray(x) && x.every((i) => Array.isArray(i) && typeof i[0] === 'string' && typeof i[1] === 'number');
}

/**
 * Decodes a peer message; null for anything malformed (counted by the caller, never thrown). A
 * well-formed message is handed back as it came, not copied: the core only reads the fields checked
 * here and never changes a message (one a sender shares between replicas, too), so a copy of them
 * would be the same message to it, and cost an object (with its boxed numbers) per delivery.
 */
export function decodeLeaderlessMessage(x: unknown): LeaderlessMessage | null {
  return isObject(x) && wellFormed(x) ? (x as LeaderlessMessage) : null;
}

/** Every field the message's kind needs, of its type (extra fields are ignored: nothing reads them). */
function wellFormed(x: Record<string, unknown>): boolean {
  switch (x.kind) {
    case 'heartbeat':
      return typeof x.hlc === 'number';
    case 'put':
      return (
        typeof x.roundTripId === 'number' &&
        isVersion(x.version) &&
        (x.hintFor === null || typeof x.hintFor === 'string') &&
        typeof x.ack === 'boolean' &&
        typeof x.repair === 'boolean'
      );
    case 'put_ack':
    case 'put_nack':
      return typeof x.roundTripId === 'number' && typeof x.key === 'string';
    case 'get':
      return typeof x.roundTripId === 'number' && typeof x.key === 'string' && typeof x.digestOnly === 'boolean';
    case 'get_reply':
      return (
        typeof x.roundTripId === 'number' &&
        typeof x.key === 'string' &&
        typeof x.full === 'boolean' &&
        (x.version === null || isVersion(x.version)) &&
        typeof x.digest === 'string'
      );
    case 'handoff':
      return isHandoffPurpose(x.purpose) && isVersionArray(x.versions);
    case 'handoff_ack':
      return isHandoffPurpose(x.purpose) && isKeyTimestampArray(x.items);
    case 'anti_entropy_root':
      return typeof x.root === 'string' && isStringArray(x.leaves);
    case 'anti_entropy_keys':
      return isNumberArray(x.buckets) && isPairArray(x.entries) && typeof x.truncated === 'boolean';
    case 'anti_entropy_push':
      return isVersionArray(x.versions);
    case 'anti_entropy_pull':
      return isStringArray(x.keys);
    default:
      return false;
  }
}
