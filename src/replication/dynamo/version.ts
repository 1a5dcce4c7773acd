/**
 * Helpers on stored versions shared by the leaderless and multi-leader cores: the last-writer-wins
 * order (HLC timestamp, then node id), a digest of a version, and a strict HLC observe.
 * Not a storage engine: the cores keep their own maps.
 */
import type { Version } from '../core.js';
import type { HybridClock } from '../hlc.js';
import { hashText } from './merkle.js';
import { hasOwnProperty } from '../../util/own.js';

/**
 * LWW order: the later HLC timestamp wins, ties go to the larger node id; two copies that still tie
 * (a corrupted replica) are ordered by tombstone then value so every replica picks the same one.
 */
export function lwwCompare(a: Version, b: Version): number {
  if (a.timestamp !== b.timestamp) return a.timestamp < b.timestamp ? -1 : 1;
  if (a.node_id !== b.node_id) return a.node_id < b.node_id ? -1 : 1;
  if (a.tombstone !== b.tombstone) return a.tombstone ? 1 : -1;
  if (a.value !== b.value) return a.value < b.value ? -1 : 1;
  return 0;
}

/** a strictly beats b under LWW. */
export function lwwNewer(a: Version, b: Version): boolean {
  return lwwCompare(a, b) > 0;
}

/** Own enumerable keys of `x`, in order, are exactly `keys` (what an object literal with them makes). */
export function hasExactKeys(x: object, keys: readonly string[]): boolean {
  let i = 0;
  for (const k in x) {
    if (k !== keys[i] || !hasOwnProperty.call(x, k)) return false;
    i++;
  }
  return i === keys.length;
}

const versionKeys = ['key', 'value', 'tombstone', 'timestamp', 'node_id', 'version', 'vclock'] as const;

/**
 * A deep copy of a stored version (its clock copied too): what structuredClone gives for one,
 * field for field and in the same order. A version with exactly Version's fields, in order (as
 * every core builds them), is copied with the literal the cores use, so the copy shares their
 * hidden class (code that handles versions stays monomorphic after a restart); anything else by
 * object spread. Restarted swarm nodes start from such copies of their durable fold.
 */
export function cloneVersion(v: Version): Version {
  const vclock = { ...v.vclock };
  if (!hasExactKeys(v, versionKeys)) return { ...v, vclock };
  return {
    key: v.key,
    value: v.value,
    tombstone: v.tombstone,
    timestamp: v.timestamp,
    node_id: v.node_id,
    version: v.version,
    vclock,
  };
}

/** cloneVersion of every version in a key -> version map, keys in the same order. */
export function cloneVersionMap(m: ReadonlyMap<string, Version>): Map<string, Version> {
  const out = new Map<string, Version>();
  for (const [k, v] of m) out.set(k, cloneVersion(v));
  return out;
}

/** What identifies a version's content (not its vector clock). */
export function versionDigest(v: Version | null | undefined): string {
  if (!v) return 'none';
  // A stored version is digested again on every read and anti-entropy round: its digest is kept
  // with the fields it covers, and used only while they are unchanged (the same digest, always).
  const seen = digestOf.get(v);
  if (
    seen !== undefined &&
    seen.timestamp === v.timestamp &&
    seen.node_id === v.node_id &&
    seen.tombstone === v.tombstone &&
    seen.value === v.value
  ) {
    return seen.digest;
  }
  const digest = hashText(`${v.timestamp}|${v.node_id}|${v.tombstone ? 1 : 0}|${v.value}`);
  digestOf.set(v, { timestamp: v.timestamp, node_id: v.node_id, tombstone: v.tombstone, value: v.value, digest });
  return digest;
}

/** versionDigest's memory: per version object, the fields it digested and the digest. */
const digestOf = new WeakMap<
  Version,
  { timestamp: number; node_id: string; tombstone: boolean; value: string; digest: string }
>();

/**
 * Merges a remote HLC timestamp so the next local tick is strictly later. HybridClock.observe
 * floors ns/1000, and near 1.7e18 ns a double can round a microsecond down; observing one
 * microsecond further keeps "receive after send" strict (the HLC receive rule). `nowMs` is the
 * node's time: a value beyond the clock's max offset is refused and counted there (hlc.ts).
 */
export function observeStrict(clock: HybridClock, remoteNs: number, nowMs: number): void {
  clock.observe(Number.isFinite(remoteNs) && remoteNs > 0 ? remoteNs + 1000 : remoteNs, nowMs);
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** Shape check for a Version arriving from a peer (the fabric may carry msgpack-decoded objects). */
export function isVersion(x: unknown): x is Version {
  return (
    isObject(x) &&
    typeof x.key === 'string' &&
    typeof x.value === 'string' &&
    typeof x.tombstone === 'boolean' &&
    typeof x.timestamp === 'number' &&
    typeof x.node_id === 'string' &&
    typeof x.version === 'number' &&
    isObject(x.vclock) &&
    allNumbers(x.vclock)
  );
}

/** Every own enumerable value of `o` is a number (Object.values(o).every(...) without its array). */
function allNumbers(o: Record<string, unknown>): boolean {
  for (const k in o) if (hasOwnProperty.call(o, k) && typeof o[k] !== 'number') return false;
  return true;
}

export function isStringArray(x: unknown): x is string[] {
  return Array.isArray(x) && x.every((s) => typeof s === 'string');
}

export function isVersionArray(x: unknown): x is Version[] {
  return Array.isArray(x) && x.every(isVersion);
}

export function isPairArray(x: unknown): x is Array<[string, string]> {
  return (
    Array.isArray(x) &&
    x.every((p) => Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && typeof p[1] === 'string')
  );
}

export function isNumberArray(x: unknown): x is number[] {
  return Array.isArray(x) && x.every((n) => typeof n === 'number');
}

export { isObject };
