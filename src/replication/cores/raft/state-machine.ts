/**
 * Raft's replicated state machine: how one committed log entry changes the key-value store. The
 * core applies entries with it, and the durable fold replays it to rebuild a compacted raftSnapshot,
 * so the two can never disagree. Pure; it does not decide what is committed or what to answer.
 */
import type { ClientResult, NodeId, Version } from '../../core.js';
import { unreachable } from '../../../util/assert.js';
import type { LogEntry } from './types.js';

/** The key of the synthetic Version a membership change answers with. */
export const configKey = '__config__';

/** The Version an entry writes for `key` (its log index is the version). */
export function versionOf(e: LogEntry, key: string, value: string, tombstone: boolean): Version {
  return { key, value, tombstone, timestamp: e.timestamp, node_id: e.node_id, version: e.index, vclock: {} };
}

/**
 * Applies one committed entry to `store` (mutated) and returns the versions it wrote, in entry
 * order: one for a put or a delete (a tombstone keeps the delete ordered and visible), one per key
 * for a batch (all-or-nothing: one entry), none for a config change or a no-op.
 */
export function applyToStore(store: Record<string, Version>, e: LogEntry): Version[] {
  switch (e.type) {
    case 'put': {
      const v = versionOf(e, e.key, e.value, false);
      store[e.key] = v;
      return [v];
    }
    case 'delete': {
      const v = versionOf(e, e.key, '', true);
      store[e.key] = v;
      return [v];
    }
    case 'batch': {
      const versions = e.entries.map((b) => versionOf(e, b.key, b.value, false));
      for (const v of versions) store[v.key] = v;
      return versions;
    }
    case 'config':
    case 'noop':
      return [];
  }
}

/** The membership after `entries` (in index order), starting from `voters`. */
export function votersAfter(voters: readonly NodeId[], entries: readonly LogEntry[]): NodeId[] {
  let out = voters;
  for (const e of entries) if (e.type === 'config') out = e.voters;
  return [...out];
}

/**
 * What the client whose proposal `e` is gets once it is applied, from the versions applyToStore
 * wrote: the written version (put, delete), all of them (batch), the new voters as a synthetic
 * Version (config: in effect since it was appended), nothing for a no-op (nobody proposed it).
 */
export function clientResultOf(e: LogEntry, written: Version[], nodeId: NodeId): ClientResult | undefined {
  switch (e.type) {
    case 'put':
    case 'delete':
      return { kind: 'entry', entry: written[0] as Version, node_id: nodeId };
    case 'batch':
      return { kind: 'batch', entries: written };
    case 'config':
      return { kind: 'entry', entry: versionOf(e, configKey, e.voters.join(','), false), node_id: nodeId };
    case 'noop':
      return undefined;
    default:
      return unreachable(e);
  }
}
