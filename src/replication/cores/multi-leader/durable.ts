/**
 * What a multi-leader node keeps across a crash: a durable record per key change (the key's whole
 * state) or a checkpoint of every key, and the fold that rebuilds a restarted node's keys from
 * them. Encoding only; when to write a record is the core's decision (multi-leader.ts).
 */
import type { DurableFold, Version } from '../../core.js';
import { versionOfTuple, versionTuple, type VersionTuple } from '../durable-version.js';
import type { KeyState } from './key-state.js';
import { cloneVersion, hasExactKeys } from '../../dynamo/version.js';

const keyStateKeys = ['versions', 'parked'] as const;

/**
 * A key's whole state (its parked remote or null, then its versions, as flat tuples), or a
 * checkpoint of every key.
 */
export type MultiLeaderRecord =
  | ['k', string, VersionTuple | null, ...VersionTuple[]]
  | ['c', Array<[string, Version[], Version | null]>];

/** What a restarted node starts from (CoreOptions.persisted): every key's state. */
export type MultiLeaderPersisted = Map<string, KeyState>;

export function isMultiLeaderRecord(r: unknown): r is MultiLeaderRecord {
  return Array.isArray(r) && (r[0] === 'k' || r[0] === 'c');
}

/** The record of one key's state after a change. */
export function keyRecord(key: string, keyState: KeyState): MultiLeaderRecord {
  const r: MultiLeaderRecord = ['k', key, keyState.parked === null ? null : versionTuple(keyState.parked)];
  for (const v of keyState.versions) r.push(versionTuple(v));
  return r;
}

/** A checkpoint: every key's state, after which older records are not needed. */
export function checkpointRecord(keys: ReadonlyMap<string, KeyState>): MultiLeaderRecord {
  const all: Array<[string, Version[], Version | null]> = [];
  for (const [key, keyState] of keys) all.push([key, keyState.versions, keyState.parked]);
  return ['c', all];
}

/**
 * A deep copy of a restarted node's keys, as structuredClone would give it (each level copied by an
 * object spread, so fields keep their order): what the swarm's storage hands a restarted core.
 */
export function cloneMultiLeaderPersisted(p: MultiLeaderPersisted): MultiLeaderPersisted {
  const out: MultiLeaderPersisted = new Map();
  for (const [key, ks] of p) {
    const versions: Version[] = [];
    for (const v of ks.versions) versions.push(cloneVersion(v));
    const parked = ks.parked === null ? null : cloneVersion(ks.parked);
    // The literal the core uses (the same hidden class) when the state has just its fields.
    out.set(key, hasExactKeys(ks, keyStateKeys) ? { versions, parked } : { ...ks, versions, parked });
  }
  return out;
}

export const multiLeaderDurableFold: DurableFold = {
  fold(state, record) {
    if (!isMultiLeaderRecord(record)) return state;
    if (record[0] === 'c') return new Map(record[1].map(([key, versions, parked]) => [key, { versions, parked }]));
    const st: MultiLeaderPersisted = state instanceof Map ? (state as MultiLeaderPersisted) : new Map();
    const [, key, parked, ...versions] = record;
    st.set(key, { versions: versions.map(versionOfTuple), parked: parked === null ? null : versionOfTuple(parked) });
    return st;
  },
  isCheckpoint: (record) => isMultiLeaderRecord(record) && record[0] === 'c',
};
