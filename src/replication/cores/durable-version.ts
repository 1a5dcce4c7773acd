/**
 * A stored Version as a flat tuple, for the durable records of the leaderless and multi-leader
 * cores: they are encoded on every write, and msgpack packs a tuple of scalars much faster than
 * an object with named fields (the vector clock stays an object). Encoding helpers only.
 */
import type { NodeId, Version } from '../core.js';

export type VersionTuple = [
  key: string,
  value: string,
  tombstone: boolean,
  timestamp: number,
  node_id: NodeId,
  version: number,
  vclock: Record<NodeId, number>,
];

export function versionTuple(v: Version): VersionTuple {
  return [v.key, v.value, v.tombstone, v.timestamp, v.node_id, v.version, v.vclock];
}

export function versionOfTuple(t: VersionTuple): Version {
  return { key: t[0], value: t[1], tombstone: t[2], timestamp: t[3], node_id: t[4], version: t[5], vclock: t[6] };
}
