/**
 * Vector clocks (Fidge/Mattern) as plain JSON objects: compare, merge (the element-wise maximum) and
 * increment. Used by the multi-leader core to tell causally ordered writes from concurrent ones and
 * carried, informatively, on leaderless versions. Not a dotted version vector: sibling bookkeeping
 * lives in the cores.
 */
import type { NodeId } from '../core.js';
import { invariant } from '../../util/assert.js';
import { hasOwnProperty } from '../../util/own.js';
import { emptyKeepingStorage } from '../../util/out-list.js';

export type VClock = Readonly<Record<NodeId, number>>;

/** How `a` relates to `b` in the happened-before order. */
export type ClockOrder = 'before' | 'after' | 'equal' | 'concurrent';

function entry(c: VClock, id: NodeId): number {
  return c[id] ?? 0;
}

/** The happened-before relation: a missing entry counts as 0. */
export function compareClocks(a: VClock, b: VClock): ClockOrder {
  let aLess = false;
  let bLess = false;
  // Every id of either clock once (a's own keys, then b's that a lacks), with no key arrays or set:
  // this runs on every multi-leader write and sample. The answer does not depend on the order.
  for (const id in a) {
    if (!hasOwnProperty.call(a, id)) continue;
    const x = entry(a, id);
    const y = entry(b, id);
    if (x < y) aLess = true;
    else if (y < x) bLess = true;
    if (aLess && bLess) return 'concurrent';
  }
  for (const id in b) {
    if (!hasOwnProperty.call(b, id) || hasOwnProperty.call(a, id)) continue;
    const x = entry(a, id);
    const y = entry(b, id);
    if (x < y) aLess = true;
    else if (y < x) bLess = true;
    if (aLess && bLess) return 'concurrent';
  }
  if (aLess) return 'before';
  if (bLess) return 'after';
  return 'equal';
}

/** a >= b element-wise (a has seen everything b has). */
export function descends(a: VClock, b: VClock): boolean {
  const o = compareClocks(a, b);
  return o === 'after' || o === 'equal';
}

/**
 * The vector-clock merge rule: element-wise maximum, the least upper bound of a and b. The result
 * has its ids in sorted order and no zero entries, so equal clocks serialise to equal JSON.
 */
export function mergeClocks(a: VClock, b: VClock): Record<NodeId, number> {
  if (canonicalIds(a, idsA) && canonicalIds(b, idsB)) return mergeCanonical(a, b);
  const max = new Map<NodeId, number>();
  for (const [id, n] of Object.entries(a)) if (n > 0) max.set(id, n);
  for (const [id, n] of Object.entries(b)) if (n > (max.get(id) ?? 0)) max.set(id, n);
  const out: Record<NodeId, number> = {};
  for (const id of [...max.keys()].sort()) out[id] = max.get(id) as number;
  return out;
}

/** Scratch lists of ids for mergeClocks' canonical path (it never re-enters). */
const idsA: string[] = [];
const idsB: string[] = [];

/**
 * `c`'s ids into `ids` when `c` is canonical (own ids in strictly increasing order, each entry a
 * positive number), as every clock made here is; false otherwise (mergeClocks' general path).
 */
function canonicalIds(c: VClock, ids: string[]): boolean {
  emptyKeepingStorage(ids);
  let prev: string | undefined;
  for (const k in c) {
    const n = c[k];
    if (!hasOwnProperty.call(c, k) || typeof n !== 'number' || !(n > 0) || (prev !== undefined && k <= prev))
      return false;
    ids.push(k);
    prev = k;
  }
  return true;
}

/** mergeClocks of two canonical clocks (ids in idsA, idsB): a merge of two sorted lists, same result. */
function mergeCanonical(a: VClock, b: VClock): Record<NodeId, number> {
  const out: Record<NodeId, number> = {};
  let i = 0;
  let j = 0;
  while (i < idsA.length || j < idsB.length) {
    const x = idsA[i];
    const y = idsB[j];
    if (y === undefined || (x !== undefined && x < y)) {
      out[x as string] = a[x as string] as number;
      i++;
    } else if (x === undefined || y < x) {
      out[y] = b[y] as number;
      j++;
    } else {
      const n = a[x] as number;
      const m = b[y] as number;
      out[x] = m > n ? m : n;
      i++;
      j++;
    }
  }
  return out;
}

/**
 * A local event at `id`: its own entry goes up by one, the others are kept. The result is canonical
 * like mergeClocks'. A clock that is already canonical (every clock made here is) is copied in one
 * pass with no intermediate Map or arrays: this runs on every leaderless and multi-leader write.
 */
export function incrementClock(c: VClock, id: NodeId): Record<NodeId, number> {
  const out: Record<NodeId, number> = {};
  let prev: string | undefined;
  let placed = false;
  for (const k in c) {
    const n = c[k] as number;
    // Not canonical (unsorted ids, a zero or odd entry): the general path sorts it out.
    if (!(n > 0) || (prev !== undefined && k <= prev)) return incrementByMerge(c, id);
    prev = k;
    if (!placed && id <= k) {
      placed = true;
      if (id === k) {
        out[k] = n + 1;
        continue;
      }
      out[id] = 1;
    }
    out[k] = n;
  }
  if (!placed) out[id] = 1;
  return out;
}

function incrementByMerge(c: VClock, id: NodeId): Record<NodeId, number> {
  const out = mergeClocks(c, { [id]: entry(c, id) + 1 });
  invariant((out[id] ?? 0) > entry(c, id), 'vector clock entries never go down');
  return out;
}

/** Total number of events a clock has seen: used as a Version's `version` number. */
export function clockSum(c: VClock): number {
  let s = 0;
  for (const k in c) s += c[k] as number;
  return s;
}

/** Canonical text of a clock (sorted ids, zero entries dropped): equal clocks give equal text. */
export function clockKey(c: VClock): string {
  return Object.keys(c)
    .filter((id) => entry(c, id) > 0)
    .sort()
    .map((id) => `${id}:${entry(c, id)}`)
    .join(',');
}
