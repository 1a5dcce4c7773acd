/**
 * What a multi-leader node holds for one key, and the pure rules for settling concurrent versions
 * of it: the LWW winner, the LWW and CRDT merges, the join of its clocks, its byte count, and the
 * assertions every change of a key's state must pass. It decides nothing about when to apply a
 * version: the receive rule that picks among these is the core's (multi-leader.ts).
 */
import type { ConflictResolver, NodeId, Version } from '../../core.js';
import { storedEntryOverheadBytes } from '../../limits.js';
import { encodeCrdt, mergeCrdt, parseCrdt } from '../../dynamo/crdt.js';
import { clockSum, descends, mergeClocks, type VClock } from '../../dynamo/vclock.js';
import { lwwCompare } from '../../dynamo/version.js';
import { invariantBroken } from '../invariant-broken.js';

export interface KeyState {
  /** Mutually concurrent versions (one, except vector_clock siblings). */
  versions: Version[];
  /** manual: the remote side of a pending conflict. */
  parked: Version | null;
}

/** A version as the views show it (status().extra siblings, audit records). */
export interface VersionBrief {
  node_id: NodeId;
  value: string;
  vclock: Record<NodeId, number>;
}

/** Bytes a key's state is counted as against the node's budget (limits.ts storedEntryOverheadBytes). */
export function keyStateBytes(key: string, keyState: KeyState): number {
  let b = 0;
  for (const v of keyState.versions) b += key.length + v.value.length + storedEntryOverheadBytes;
  if (keyState.parked) b += key.length + keyState.parked.value.length + storedEntryOverheadBytes;
  return b;
}

/** The version a read returns: the LWW winner among the siblings (HLC timestamp, then node id). */
export function winnerOf(keyState: KeyState): Version {
  let best = keyState.versions[0] as Version;
  for (const v of keyState.versions) if (lwwCompare(v, best) > 0) best = v;
  return best;
}

/** Every version the node knows of the key: its siblings and a parked remote. */
export function knownVersions(keyState: KeyState): Version[] {
  return keyState.parked ? [...keyState.versions, keyState.parked] : keyState.versions;
}

/** The join (element-wise maximum) of the versions' clocks, canonical. */
export function joinClocks(vs: readonly Version[]): Record<NodeId, number> {
  let c: VClock = {};
  for (const v of vs) c = mergeClocks(c, v.vclock);
  return mergeClocks(c, {});
}

/** The LWW merge of two concurrent versions: the winner's content under the join of both clocks. */
export function lwwMerge(a: Version, b: Version): Version {
  const w = lwwCompare(a, b) >= 0 ? a : b;
  const vclock = mergeClocks(a.vclock, b.vclock);
  return { ...w, vclock, version: clockSum(vclock) };
}

/** The crdt merge: tagged states of one kind are joined; otherwise LWW. Deterministic in (a, b). */
export function crdtMerge(a: Version, b: Version): { merged: Version; joined: boolean } {
  const base = lwwMerge(a, b);
  if (a.tombstone || b.tombstone) return { merged: base, joined: false };
  const pa = parseCrdt(a.value);
  const pb = parseCrdt(b.value);
  if (pa?.kind !== 'state' || pb?.kind !== 'state') return { merged: base, joined: false };
  const joined = mergeCrdt(pa.state, pb.state);
  if (!joined) return { merged: base, joined: false };
  return { merged: { ...base, value: encodeCrdt(joined) }, joined: true };
}

export function brief(v: Version): VersionBrief {
  return { node_id: v.node_id, value: v.tombstone ? '' : v.value, vclock: { ...v.vclock } };
}

/** Some version in `known` has seen `old` (descends from it, or is it). */
function supersededIn(known: readonly Version[], old: Version): boolean {
  for (const v of known) if (descends(v.vclock, old.vclock)) return true;
  return false;
}

/**
 * The assertions every change of a key's state passes (the core's setKey): the shape the resolver
 * allows, and a key never goes backwards: every version known before is dominated by (or equal to)
 * one known after, so a vector clock the node held is never lost to an older one. Cheap: a key
 * holds one version, or a few siblings.
 */
export function checkKeyStateChange(
  resolver: ConflictResolver,
  key: string,
  before: KeyState | undefined,
  after: KeyState,
): void {
  if (after.versions.length < 1) invariantBroken(`key ${key}: a state holds at least one version`);
  if (resolver !== 'vector_clock') {
    if (after.versions.length !== 1) invariantBroken(`key ${key}: ${after.versions.length} siblings under ${resolver}`);
  }
  if (resolver !== 'manual' && after.parked !== null) invariantBroken(`key ${key}: a parked version under ${resolver}`);
  const known = knownVersions(after);
  for (const v of known) if (v.key !== key) invariantBroken(`key ${key} holds a version of ${v.key}`);
  // Siblings are mutually concurrent: one that has seen another would have replaced it.
  for (let i = 0; i < after.versions.length; i++) {
    for (let j = i + 1; j < after.versions.length; j++) {
      const a = (after.versions[i] as Version).vclock;
      const b = (after.versions[j] as Version).vclock;
      if (descends(a, b) || descends(b, a)) invariantBroken(`key ${key}: siblings ${i} and ${j} are not concurrent`);
    }
  }
  if (before === undefined) return;
  for (const old of knownVersions(before)) {
    if (!supersededIn(known, old)) {
      invariantBroken(
        `key ${key}: version ${JSON.stringify(old.vclock)} from ${old.node_id} was lost without being superseded`,
      );
    }
  }
}
