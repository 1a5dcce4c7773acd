/**
 * What a single-leader node keeps across a crash: its durable records (an appended entry, a leader
 * change, a checkpoint of the whole store), the fold that rebuilds a restarted node's state from
 * them, and the byte accounting and version stamping the core and the fold share. Pure functions;
 * when to write a record is the core's decision (single-leader.ts).
 */
import type { DurableFold, NodeId, Version } from '../../core.js';
import { storedEntryOverheadBytes } from '../../limits.js';
import type { LogEntry } from './messages.js';
import { invariantBroken } from '../invariant-broken.js';
import { cloneVersionMap, hasExactKeys } from '../../dynamo/version.js';

/**
 * A durable record: an appended entry (index, epoch, timestamp, writer, then its ops flattened as
 * key, value pairs; value null for a delete), a leader change (epoch, leader), or a checkpoint of
 * the whole store (epoch, leader, last index, the store, the epoch of the last entry). Flat arrays:
 * they are encoded on every write, and msgpack packs an array of scalars about twice as fast as
 * nested objects.
 */
export type SingleLeaderRecord =
  | ['e', number, number, number, NodeId, ...Array<string | null>]
  | ['l', number, NodeId]
  | ['c', number, NodeId, number, Version[], number?];

/** Where an entry record's ops start (after tag, index, epoch, timestamp, writer). */
const entryRecordOpsStart = 5;

export function entryRecord(e: LogEntry): SingleLeaderRecord {
  const ops = e.ops;
  const one = ops.length === 1 ? ops[0] : undefined;
  // One op (most entries): the whole record as one literal, without growing it by pushes.
  if (one !== undefined) return ['e', e.index, e.epoch, e.timestamp, e.node_id, one.key, one.value];
  const r: SingleLeaderRecord = ['e', e.index, e.epoch, e.timestamp, e.node_id];
  for (const o of ops) r.push(o.key, o.value);
  return r;
}

export function entryOfRecord(r: Extract<SingleLeaderRecord, ['e', ...unknown[]]>): LogEntry {
  // One op (most records): its ops as one literal.
  if (r.length === entryRecordOpsStart + 2) {
    const ops: LogEntry['ops'] = [
      { key: r[entryRecordOpsStart] as string, value: r[entryRecordOpsStart + 1] as string | null },
    ];
    return { index: r[1], epoch: r[2], timestamp: r[3], node_id: r[4], ops };
  }
  const ops: LogEntry['ops'] = [];
  for (let i = entryRecordOpsStart; i + 1 < r.length; i += 2) {
    ops.push({ key: r[i] as string, value: r[i + 1] as string | null });
  }
  return { index: r[1], epoch: r[2], timestamp: r[3], node_id: r[4], ops };
}

/** What a restarted single-leader node starts from (CoreOptions.persisted). */
export interface SingleLeaderPersisted {
  epoch: number;
  leader: NodeId;
  /** Last index appended (and applied). */
  index: number;
  store: Map<string, Version>;
  /** Entries appended since the last checkpoint, oldest first (the core compacts them on start). */
  log: LogEntry[];
  /** The epoch of the last entry appended (failover ranks candidates by it first). */
  lastEntryEpoch: number;
}

/** Bytes a stored version is counted as (limits.ts storedEntryOverheadBytes). */
export function versionBytes(v: Version): number {
  return v.key.length + v.value.length + storedEntryOverheadBytes;
}

/** Bytes a retained log entry is counted as. */
export function entryBytes(e: LogEntry): number {
  let b = storedEntryOverheadBytes;
  for (const o of e.ops) b += o.key.length + (o.value === null ? 0 : o.value.length);
  return b;
}

/**
 * The version an entry's op leaves in the store: one rule for the core and for the fold. It is
 * stamped with the entry's writer, so every replica holds the same version whichever leader it
 * caught up from.
 */
export function versionOf(o: LogEntry['ops'][number], e: LogEntry): Version {
  // A keyed store into an empty object: the same one-entry clock as `{ [e.node_id]: e.index }`, without
  // the computed-key literal's slow path (this runs for every op on every replica and in the fold).
  const vclock: Record<NodeId, number> = {};
  vclock[e.node_id] = e.index;
  return {
    key: o.key,
    value: o.value ?? '',
    tombstone: o.value === null,
    timestamp: e.timestamp,
    node_id: e.node_id,
    version: e.index,
    vclock,
  };
}

export function isSingleLeaderRecord(r: unknown): r is SingleLeaderRecord {
  return Array.isArray(r) && (r[0] === 'e' || r[0] === 'l' || r[0] === 'c');
}

export function isSingleLeaderPersisted(p: unknown): p is SingleLeaderPersisted {
  if (typeof p !== 'object' || p === null) return false;
  const s = p as Partial<SingleLeaderPersisted>;
  return s.store instanceof Map && Array.isArray(s.log);
}

/**
 * A deep copy of a restarted node's state, as structuredClone would give it (each level copied by
 * an object spread, so fields keep their order): what the swarm's storage hands a restarted core
 * (swarm/kv-swarm.ts), without a generic clone's walk and identity map over every entry.
 */
export function cloneSingleLeaderPersisted(p: SingleLeaderPersisted): SingleLeaderPersisted {
  const log: LogEntry[] = [];
  for (const e of p.log) {
    const ops: LogEntry['ops'] = [];
    for (const o of e.ops) ops.push(hasExactKeys(o, opKeys) ? { key: o.key, value: o.value } : { ...o });
    // The literal append() and entryOfRecord use (the same hidden class) when the entry has just their fields.
    if (!hasExactKeys(e, entryKeys)) log.push({ ...e, ops });
    else log.push({ index: e.index, epoch: e.epoch, timestamp: e.timestamp, node_id: e.node_id, ops });
  }
  return { ...p, store: cloneVersionMap(p.store), log };
}

const entryKeys = ['index', 'epoch', 'timestamp', 'node_id', 'ops'] as const;
const opKeys = ['key', 'value'] as const;

function emptyPersisted(): SingleLeaderPersisted {
  return { epoch: 0, leader: '', index: 0, store: new Map(), log: [], lastEntryEpoch: 0 };
}

export const singleLeaderDurableFold: DurableFold = {
  fold(state, record) {
    if (!isSingleLeaderRecord(record)) return state;
    const st = isSingleLeaderPersisted(state) ? state : emptyPersisted();
    switch (record[0]) {
      case 'c': {
        const store = new Map<string, Version>();
        for (const v of record[4]) store.set(v.key, v);
        return {
          epoch: record[1],
          leader: record[2],
          index: record[3],
          store,
          log: [],
          lastEntryEpoch: record[5] ?? record[1],
        };
      }
      case 'l':
        st.epoch = record[1];
        st.leader = record[2];
        return st;
      case 'e': {
        const e = entryOfRecord(record);
        if (e.index !== st.index + 1) invariantBroken(`durable entries are contiguous (${e.index} after ${st.index})`);
        for (const o of e.ops) st.store.set(o.key, versionOf(o, e));
        st.log.push(e);
        st.index = e.index;
        st.lastEntryEpoch = e.epoch;
        return st;
      }
    }
  },
  isCheckpoint: (record) => isSingleLeaderRecord(record) && record[0] === 'c',
};
