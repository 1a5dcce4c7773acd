/**
 * The leaderless core's durable records (what survives a crash: the store and the hints held for
 * others) and the fold that rebuilds a restarted node's state from them. Versions travel as flat
 * tuples (durable-version.ts). Encoding and folding only: the core decides when to write a record.
 */
import type { DurableFold, NodeId, Version } from '../../core.js';
import { unreachable } from '../../../util/assert.js';
import { versionOfTuple, type VersionTuple } from '../durable-version.js';
import { cloneVersionMap } from '../../dynamo/version.js';

/** Store set / delete, hint set / delete, or a checkpoint of both (versions as flat tuples). */
export type LeaderlessRecord =
  | ['s', VersionTuple]
  | ['d', string]
  | ['h', NodeId, VersionTuple]
  | ['x', NodeId, string]
  | ['c', Version[], Array<[NodeId, Version[]]>];

/** What a restarted node starts from (CoreOptions.persisted). */
export interface LeaderlessPersisted {
  store: Map<string, Version>;
  hints: Map<NodeId, Map<string, Version>>;
}

function isLeaderlessRecord(r: unknown): r is LeaderlessRecord {
  return Array.isArray(r) && typeof r[0] === 'string';
}

export function isLeaderlessPersisted(p: unknown): p is LeaderlessPersisted {
  if (typeof p !== 'object' || p === null) return false;
  const state = p as LeaderlessPersisted;
  return state.store instanceof Map && state.hints instanceof Map;
}

function checkpointState(record: Extract<LeaderlessRecord, ['c', ...unknown[]]>): LeaderlessPersisted {
  const store = new Map(record[1].map((v) => [v.key, v]));
  const hints = new Map(record[2].map(([owner, versions]) => [owner, new Map(versions.map((v) => [v.key, v]))]));
  return { store, hints };
}

/**
 * A deep copy of a restarted node's store and hints, as structuredClone would give it (each level
 * copied by an object spread, so fields keep their order): what the swarm's storage hands a
 * restarted core.
 */
export function cloneLeaderlessPersisted(p: LeaderlessPersisted): LeaderlessPersisted {
  const hints = new Map<NodeId, Map<string, Version>>();
  for (const [owner, held] of p.hints) hints.set(owner, cloneVersionMap(held));
  return { ...p, store: cloneVersionMap(p.store), hints };
}

export const leaderlessDurableFold: DurableFold = {
  fold(state, record) {
    if (!isLeaderlessRecord(record)) return state;
    if (record[0] === 'c') return checkpointState(record);
    const st: LeaderlessPersisted = isLeaderlessPersisted(state) ? state : { store: new Map(), hints: new Map() };
    switch (record[0]) {
      case 's': {
        const v = versionOfTuple(record[1]);
        st.store.set(v.key, v);
        break;
      }
      case 'd':
        st.store.delete(record[1]);
        break;
      case 'h': {
        let held = st.hints.get(record[1]);
        if (!held) {
          held = new Map();
          st.hints.set(record[1], held);
        }
        const v = versionOfTuple(record[2]);
        held.set(v.key, v);
        break;
      }
      case 'x': {
        const held = st.hints.get(record[1]);
        held?.delete(record[2]);
        if (held?.size === 0) st.hints.delete(record[1]);
        break;
      }
      default:
        unreachable(record);
    }
    return st;
  },
  isCheckpoint: (record) => isLeaderlessRecord(record) && record[0] === 'c',
};
