/**
 * Where a leaderless request goes and when it has enough answers, as pure functions of the ring,
 * the members' regions and a `suspected` predicate: the replica groups and slots of a request
 * (plan), stand-in recruitment for a sloppy quorum (recruit), and the quorum arithmetic (quorumMet,
 * shortfall). It sends nothing and knows no clock: the core asks and acts on the answers.
 *
 * Replica groups (one per region for local_quorum/each_quorum, else one): in region r the key's
 * replicas are the first min(N, |r|) members of r met walking the ring from the key, and a quorum
 * there is ceil(W·|replicas|/N) acks (ceil(R·|replicas|/N) replies). W + R > N gives
 * ceil(W·m/N) + ceil(R·m/N) > m, so a region's read and write quorums still overlap.
 */
import type { ConsistencyLevel, NodeId } from '../../core.js';
import type { HashRing } from '../../dynamo/ring.js';

/** A key's ring walk, and (for N = n) its first n nodes and the rest: read-only, cached per key. */
export interface Walk {
  all: NodeId[];
  n: number;
  intended: NodeId[];
  rest: NodeId[];
}

/** One replica position of a request: its intended replica and whoever stands in for it. */
export interface Slot {
  intended: NodeId;
  group: number;
  /** Nodes asked for this slot: the intended replica (unless skipped as suspected), then stand-ins. */
  holders: NodeId[];
  /** Acked (write) or replied (read) by any holder. */
  done: boolean;
  /** A holder refused the write for its storage budget (put_nack). */
  refused?: boolean;
}

export interface Group {
  /** The region of this group; -1 for the one region-blind group of `quorum`. */
  region: number;
  /** Acks or replies this group needs (0: informed, not waited on). */
  required: number;
  /** Stand-in candidates in ring order (sloppy quorum). */
  walk: NodeId[];
}

/** The placement part of a request: its groups and slots, and every node it has involved. */
export interface Placement {
  groups: Group[];
  slots: Slot[];
  /**
   * Every node this request has involved (a stand-in is never recruited twice); null until the
   * first recruit, as until then it is exactly the slots' intended replicas (made then, see recruit).
   */
  used: Set<NodeId> | null;
}

export interface Counts {
  done: number;
  required: number;
}

/**
 * Ring walks per key for one ring, and the sorted region ids of its members. Both change only with
 * membership (the core builds a new cache then). Past `keysMax` keys the walks start over.
 */
export class PlacementCache {
  private readonly walks = new Map<string, Walk>();
  private regionIdsSorted: number[] | undefined;

  constructor(
    readonly ring: HashRing,
    private readonly keysMax: number,
  ) {}

  /** The key's whole walk, split at n (recomputed when n changed since it was cached). */
  walk(key: string, n: number): Walk {
    let cached = this.walks.get(key);
    if (cached === undefined || cached.n !== n) {
      // An md5 of the key and a walk of the ring per request otherwise.
      const all = this.ring.walk(key);
      cached = { all, n, intended: all.slice(0, n), rest: all.slice(n) };
      if (this.walks.size >= this.keysMax) this.walks.clear();
      this.walks.set(key, cached);
    }
    return cached;
  }

  /** The key's N preferred replicas (Dynamo's preference list): the walk's first n nodes. */
  preferenceList(key: string, n: number): NodeId[] {
    return this.walk(key, n).intended;
  }

  regionIds(members: readonly NodeId[], regionOf: (node: NodeId) => number): number[] {
    this.regionIdsSorted ??= [...new Set(members.map(regionOf))].sort((a, b) => a - b);
    return this.regionIdsSorted;
  }

  /** Keys currently cached (the cap's test reads it). */
  get size(): number {
    return this.walks.size;
  }
}

export interface PlanInput {
  walk: Walk;
  level: ConsistencyLevel;
  /** Every region id of the members, sorted. */
  regionIds: readonly number[];
  regionOf: (node: NodeId) => number;
  coordinatorRegion: number;
  /** W or R. */
  quorum: number;
}

/** The replica groups of a request (file header): intended replicas, stand-in walk, quorum. */
export function plan(input: PlanInput): { groups: Group[]; slots: Slot[] } {
  const { walk, level, regionIds, regionOf, quorum } = input;
  const n = walk.n;
  if (level === 'quorum' || regionIds.length <= 1) {
    // The common case, on every request: the walk's slices are shared (read-only), only the slots
    // (which record holders and acks) are the request's own.
    const intended = walk.intended;
    const slots: Slot[] = new Array(intended.length);
    for (let i = 0; i < intended.length; i++) {
      slots[i] = { intended: intended[i] as NodeId, group: 0, holders: [], done: false };
    }
    return { groups: [{ region: -1, required: quorum, walk: walk.rest }], slots };
  }
  const groups: Group[] = [];
  const slots: Slot[] = [];
  for (const region of regionIds) {
    const inRegion = walk.all.filter((m) => regionOf(m) === region);
    const intended = inRegion.slice(0, n);
    const waited = level === 'each_quorum' || region === input.coordinatorRegion;
    const required = waited ? Math.ceil((quorum * intended.length) / n) : 0;
    for (const node of intended) slots.push({ intended: node, group: groups.length, holders: [], done: false });
    groups.push({ region, required, walk: inRegion.slice(n) });
  }
  return { groups, slots };
}

/** The next stand-in for a slot: further along its group's walk, unused and not suspected. */
export function recruit(p: Placement, slot: Slot, suspected: (node: NodeId) => boolean): NodeId | null {
  const group = p.groups[slot.group] as Group;
  for (const candidate of group.walk) {
    const used = (p.used ??= intendedReplicas(p));
    if (used.has(candidate) || suspected(candidate)) continue;
    used.add(candidate);
    addHolder(slot, candidate);
    return candidate;
  }
  return null;
}

/** The slots' intended replicas: every node a request involves before its first stand-in. */
function intendedReplicas(p: Placement): Set<NodeId> {
  const used = new Set<NodeId>();
  for (const s of p.slots) used.add(s.intended);
  return used;
}

/**
 * Appends a holder. The first one makes a list of one: a push onto the empty list reserves room for
 * 17, and every request has a slot per replica; a later stand-in (rare) grows it as a push does.
 */
function addHolder(slot: Slot, node: NodeId): void {
  if (slot.holders.length === 0) slot.holders = [node];
  else slot.holders.push(node);
}

/** Chooses each slot's first holder: the intended replica, or a stand-in when it is suspected. */
export function assignHolders(p: Placement, sloppyQuorum: boolean, suspected: (node: NodeId) => boolean): void {
  for (const slot of p.slots) {
    const waited = (p.groups[slot.group] as Group).required > 0;
    if (sloppyQuorum && waited && suspected(slot.intended) && recruit(p, slot, suspected)) continue;
    addHolder(slot, slot.intended);
  }
}

export function groupCounts(p: Placement): Counts[] {
  const counts = p.groups.map((g) => ({ done: 0, required: g.required }));
  for (const s of p.slots) if (s.done) (counts[s.group] as Counts).done++;
  return counts;
}

/** Every group has its acks (or replies). */
export function quorumMet(p: Placement): boolean {
  // groupCounts without its arrays: this runs on every ack.
  for (let g = 0; g < p.groups.length; g++) {
    let done = 0;
    for (const s of p.slots) if (s.done && s.group === g) done++;
    if (done < (p.groups[g] as Group).required) return false;
  }
  return true;
}

/** "a/Q": the first group short of its quorum (or the first group). */
export function shortfall(p: Placement): Counts {
  const counts = groupCounts(p);
  return counts.find((c) => c.done < c.required) ?? counts[0] ?? { done: 0, required: 0 };
}

/**
 * False once refusals (put_nack) leave some group fewer slots that can still ack than its quorum
 * needs: the write can no longer succeed.
 */
export function quorumStillPossible(p: Placement): boolean {
  for (let g = 0; g < p.groups.length; g++) {
    let possible = 0;
    for (const s of p.slots) if (s.group === g && (s.done || !s.refused)) possible++;
    if (possible < (p.groups[g] as Group).required) return false;
  }
  return true;
}

/** The slot a node answers for (as its intended replica or a stand-in). */
export function slotOf(p: Placement, node: NodeId): Slot | undefined {
  for (const s of p.slots) if (s.holders.includes(node)) return s;
  return undefined;
}

/** Stand-ins used so far, each with the replica it stands in for. */
export function standIns(p: Placement): Array<{ node: NodeId; for: NodeId }> {
  const out: Array<{ node: NodeId; for: NodeId }> = [];
  for (const s of p.slots) for (const h of s.holders) if (h !== s.intended) out.push({ node: h, for: s.intended });
  return out;
}

export function doneCount(p: Placement): number {
  let done = 0;
  for (const s of p.slots) if (s.done) done++;
  return done;
}

export function requiredTotal(p: Placement): number {
  let required = 0;
  for (const g of p.groups) required += g.required;
  return required;
}
