/**
 * Replica comparison, as pure functions over store snapshots: which keys the online replicas
 * disagree on (value, tombstone or absence), and Merkle trees over a replica's key space compared
 * top-down, the way an anti-entropy round finds the few leaf ranges worth exchanging. It reads no
 * node and repairs nothing: routes.ts fetches the stores and drives the repair.
 */
import type { NodeId, Version } from '../core.js';
import { merkleLeaves, merkleParents } from '../dynamo/merkle.js';
import { preferenceList } from '../dynamo/ring.js';
import { divergedKeysListedMax } from '../limits.js';

/** What one replica holds for a key, as a client would see it. */
export type CellState = 'value' | 'tombstone' | 'absent';

export interface ReplicaStore {
  node: NodeId;
  store: Readonly<Record<string, Version>>;
}

/**
 * Who must hold a key: `full` — every replica (single_leader, multi_leader, raft); `ring` — the
 * key's N preferred replicas on the consistent-hash ring of `members` (leaderless).
 */
export type Placement = { kind: 'full' } | { kind: 'ring'; n: number; members: readonly NodeId[] };

export interface DivergedKey {
  key: string;
  /** The value each compared replica holds; null when it holds a tombstone or nothing. */
  values: Record<NodeId, string | null>;
  /** Tells a tombstone from a missing key, which `values` cannot. */
  states: Record<NodeId, CellState>;
}

export interface Comparison {
  converged: boolean;
  /** Distinct keys found on any compared replica. */
  keys: number;
  diverged: DivergedKey[];
  /** All diverged keys, of which `diverged` lists at most `listMax`. */
  divergedTotal: number;
}

export function cellOf(v: Version | undefined): { state: CellState; value: string | null } {
  if (v === undefined) return { state: 'absent', value: null };
  return v.tombstone ? { state: 'tombstone', value: null } : { state: 'value', value: v.value };
}

/** What two replicas must share to agree on a key (its metadata — timestamp, vector clock — aside). */
export function cellDigest(v: Version | undefined): string {
  const c = cellOf(v);
  return c.state === 'value' ? `v:${c.value as string}` : c.state;
}

/** The replicas among `online` that must hold `key` under `placement`. */
export function holdersOf(key: string, placement: Placement, online: readonly NodeId[]): NodeId[] {
  if (placement.kind === 'full') return [...online];
  const preferred = preferenceList(key, placement.n, placement.members);
  return preferred.filter((n) => online.includes(n));
}

/** Every key on any replica, sorted. */
export function allKeys(replicas: readonly ReplicaStore[]): string[] {
  const keys = new Set<string>();
  for (const r of replicas) for (const k of Object.keys(r.store)) keys.add(k);
  return [...keys].sort();
}

/** Compares every key across the replicas that must hold it; a key two holders disagree on diverged. */
export function compareReplicas(
  replicas: readonly ReplicaStore[],
  placement: Placement,
  listMax = divergedKeysListedMax,
): Comparison {
  const byNode = new Map(replicas.map((r) => [r.node, r.store]));
  const online = replicas.map((r) => r.node);
  const keys = allKeys(replicas);
  const diverged: DivergedKey[] = [];
  let divergedTotal = 0;
  for (const key of keys) {
    const holders = holdersOf(key, placement, online);
    if (holders.length < 2) continue;
    const digests = new Set(holders.map((n) => cellDigest(byNode.get(n)?.[key])));
    if (digests.size <= 1) continue;
    divergedTotal++;
    if (diverged.length >= listMax) continue;
    const values: Record<NodeId, string | null> = {};
    const states: Record<NodeId, CellState> = {};
    for (const n of holders) {
      const c = cellOf(byNode.get(n)?.[key]);
      values[n] = c.value;
      states[n] = c.state;
    }
    diverged.push({ key, values, states });
  }
  return { converged: divergedTotal === 0, keys: keys.length, diverged, divergedTotal };
}

// ---------------------------------------------------------------- Merkle trees, compared top-down

/** A binary hash tree over the leaves: levels[0] are the leaves, the last level is the root. */
export type MerkleTree = readonly (readonly string[])[];

/** Every level of the tree, built with dynamo/merkle.ts's pairing rule (so its root is merkleRoot's). */
export function merkleTree(leaves: readonly string[]): MerkleTree {
  const levels: string[][] = [[...leaves]];
  let level = levels[0] as string[];
  while (level.length > 1) {
    level = merkleParents(level);
    levels.push(level);
  }
  return levels;
}

/** The tree over a replica's (key, cell digest) pairs for the given keys. */
export function replicaTree(store: Readonly<Record<string, Version>>, keys: Iterable<string>): MerkleTree {
  const entries: Array<[string, string]> = [];
  for (const k of keys) {
    const v = store[k];
    if (v !== undefined) entries.push([k, cellDigest(v)]);
  }
  return merkleTree(merkleLeaves(entries));
}

export interface TreeDiff {
  /** Tree nodes whose hashes were compared (a matching subtree is never descended). */
  nodesCompared: number;
  /** Leaf (bucket) indices whose hashes differ: the only key ranges worth exchanging. */
  divergentLeaves: number[];
}

/** Top-down comparison: equal roots end it; otherwise descend into the children that differ. */
export function compareTrees(a: MerkleTree, b: MerkleTree): TreeDiff {
  const top = Math.max(a.length, b.length) - 1;
  const divergentLeaves: number[] = [];
  let nodesCompared = 0;
  const visit = (level: number, i: number): void => {
    const ha = a[level]?.[i] ?? '';
    const hb = b[level]?.[i] ?? '';
    nodesCompared++;
    if (ha === hb) return;
    if (level === 0) {
      divergentLeaves.push(i);
      return;
    }
    const width = Math.max(a[level - 1]?.length ?? 0, b[level - 1]?.length ?? 0);
    for (const child of [2 * i, 2 * i + 1]) if (child < width) visit(level - 1, child);
  };
  if (top >= 0) visit(top, 0);
  return { nodesCompared, divergentLeaves };
}

export interface MerkleRound {
  /** Pairs of replicas whose trees were compared. */
  pairs: number;
  nodesCompared: number;
  divergentLeaves: number;
  /** Pairs whose roots differed. */
  pairsDiverged: number;
}

/**
 * The tree comparisons of one round: with full replication every replica against the reference
 * (the leader, else the first online node); on a ring every pair of replicas over the keys both
 * must hold (what the leaderless core's own exchange compares).
 */
export function merkleRound(
  replicas: readonly ReplicaStore[],
  placement: Placement,
  reference: NodeId | undefined,
): MerkleRound {
  const out: MerkleRound = { pairs: 0, nodesCompared: 0, divergentLeaves: 0, pairsDiverged: 0 };
  const add = (d: TreeDiff): void => {
    out.pairs++;
    out.nodesCompared += d.nodesCompared;
    out.divergentLeaves += d.divergentLeaves.length;
    if (d.divergentLeaves.length > 0) out.pairsDiverged++;
  };
  const keys = allKeys(replicas);
  if (placement.kind === 'full') {
    const ref = replicas.find((r) => r.node === reference) ?? replicas[0];
    if (ref === undefined) return out;
    const refTree = replicaTree(ref.store, keys);
    for (const r of replicas) if (r !== ref) add(compareTrees(refTree, replicaTree(r.store, keys)));
    return out;
  }
  const online = replicas.map((r) => r.node);
  const holders = new Map(keys.map((k) => [k, holdersOf(k, placement, online)]));
  for (let i = 0; i < replicas.length; i++) {
    for (let j = i + 1; j < replicas.length; j++) {
      const a = replicas[i] as ReplicaStore;
      const b = replicas[j] as ReplicaStore;
      const shared = keys.filter((k) => {
        const h = holders.get(k) as NodeId[];
        return h.includes(a.node) && h.includes(b.node);
      });
      if (shared.length === 0) continue;
      add(compareTrees(replicaTree(a.store, shared), replicaTree(b.store, shared)));
    }
  }
  return out;
}
