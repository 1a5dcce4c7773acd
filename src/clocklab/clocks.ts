/**
 * Logical clocks as plain values: Lamport scalars, vector clocks and matrix clocks, with the rules
 * exactly as the literature states them, plus the comparison of version vectors keyed by process id.
 * Vectors here are dense arrays indexed by a process's slot (missing entries read as 0); this module
 * knows nothing of processes, messages or time.
 */
import { invariant } from '../util/assert.js';

export type ClockType = 'scalar' | 'vector' | 'matrix';
export const clockTypes: readonly ClockType[] = ['scalar', 'vector', 'matrix'];

/** How two vector timestamps relate (happened-before is `before`). */
export type CausalOrder = 'before' | 'after' | 'equal' | 'concurrent';

// ---- Lamport (Lamport 1978) ----

/** IR1: each process increments its clock between any two successive events (sends included). */
export function lamportTick(c: number): number {
  return c + 1;
}

/** IR2: on receiving a message stamped tm, the clock becomes max(C, tm) + 1. */
export function lamportReceive(c: number, tm: number): number {
  return (c > tm ? c : tm) + 1;
}

// ---- Vector clocks (Fidge 1988, Mattern 1989) ----

export type Vector = number[];

/** Rule 1: before every event (internal, send, receive) a process increments its own entry. */
export function vectorTick(v: Vector, self: number): void {
  v[self] = (v[self] ?? 0) + 1;
}

/** Rule 2 (receive): element-wise max with the message's timestamp; the caller then ticks. */
export function vectorMergeInto(target: Vector, other: Vector): void {
  for (let k = 0; k < other.length; k++) {
    const o = other[k] ?? 0;
    const t = target[k] ?? 0;
    if (o > t) target[k] = o;
    else if (target[k] === undefined) target[k] = t;
  }
}

/** Compares two vector timestamps entry by entry (a missing entry is 0). */
export function compareVectors(a: Vector, b: Vector): CausalOrder {
  let less = false;
  let greater = false;
  const n = a.length > b.length ? a.length : b.length;
  for (let k = 0; k < n; k++) {
    const x = a[k] ?? 0;
    const y = b[k] ?? 0;
    if (x < y) less = true;
    else if (x > y) greater = true;
    if (less && greater) return 'concurrent';
  }
  if (less) return 'before';
  if (greater) return 'after';
  return 'equal';
}

/** a happened-before b exactly when VC(a) < VC(b) (every entry <=, one strictly). */
export function happenedBefore(a: Vector, b: Vector): boolean {
  return compareVectors(a, b) === 'before';
}

export function copyVector(v: Vector): Vector {
  const out = new Array<number>(v.length);
  for (let k = 0; k < v.length; k++) out[k] = v[k] ?? 0;
  return out;
}

/** Named view for JSON: one entry per known process, zeros included. */
export function vectorToMap(v: Vector, ids: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (let k = 0; k < ids.length; k++) out[ids[k] as string] = v[k] ?? 0;
  return out;
}

export function vectorFromMap(
  m: Record<string, number>,
  slotOf: (id: string) => number | undefined,
): Vector | undefined {
  const v: Vector = [];
  for (const [id, n] of Object.entries(m)) {
    const slot = slotOf(id);
    if (slot === undefined) return undefined;
    v[slot] = n;
  }
  for (let k = 0; k < v.length; k++) if (v[k] === undefined) v[k] = 0;
  return v;
}

// ---- Matrix clocks (Wuu & Bernstein 1984; Raynal & Singhal 1996) ----

/**
 * mt[k][l] is what the owner knows of what process k knows of l's events; row `self` is the
 * owner's own vector clock. A process can discard information about l's events up to t once
 * min over k of mt[k][l] >= t: every process is known to have seen them (the garbage-collection rule).
 */
export type Matrix = Vector[];

/** Local event: mt[i][i] += 1. */
export function matrixTick(m: Matrix, self: number): void {
  const row = (m[self] ??= []);
  vectorTick(row, self);
}

/**
 * Receive from `sender` carrying matrix `mm`: the owner's row takes the element-wise max with the
 * sender's row (mt[i][l] = max(mt[i][l], mm[j][l])), every row k takes max(mt[k][l], mm[k][l]);
 * the caller then ticks mt[i][i].
 */
export function matrixMergeInto(m: Matrix, self: number, sender: number, mm: Matrix): void {
  const senderRow = mm[sender];
  if (senderRow) vectorMergeInto((m[self] ??= []), senderRow);
  for (let k = 0; k < mm.length; k++) {
    const row = mm[k];
    if (row) vectorMergeInto((m[k] ??= []), row);
  }
}

/** Merge from a sender that keeps no matrix: its vector clock is its own row of knowledge. */
export function matrixMergeVector(m: Matrix, self: number, sender: number, v: Vector): void {
  vectorMergeInto((m[self] ??= []), v);
  vectorMergeInto((m[sender] ??= []), v);
}

export function copyMatrix(m: Matrix): Matrix {
  const out: Matrix = new Array<Vector>(m.length);
  for (let k = 0; k < m.length; k++) out[k] = copyVector(m[k] ?? []);
  return out;
}

/** min over the given rows k of mt[k][l]: how many of l's events every one of them is known to have seen. */
export function matrixKnownByAll(m: Matrix, l: number, rows: readonly number[]): number {
  invariant(rows.length > 0, 'matrixKnownByAll needs at least one row');
  let min = Infinity;
  for (const k of rows) {
    const x = m[k]?.[l] ?? 0;
    if (x < min) min = x;
  }
  return min;
}

export function matrixToMap(m: Matrix, ids: readonly string[]): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (let k = 0; k < ids.length; k++) out[ids[k] as string] = vectorToMap(m[k] ?? [], ids);
  return out;
}

// ---- Version vectors keyed by process id (the KV store) ----

export type VersionVector = Record<string, number>;

/** The spec's rules: V dominates W (every entry >=, one >), equal, or concurrent (neither dominates). */
export function compareVersionVectors(a: VersionVector, b: VersionVector): CausalOrder {
  let less = false;
  let greater = false;
  for (const k in a) {
    const x = a[k] ?? 0;
    const y = b[k] ?? 0;
    if (x < y) less = true;
    else if (x > y) greater = true;
  }
  for (const k in b) {
    if (k in a) continue;
    if ((b[k] ?? 0) > 0) less = true;
  }
  if (less && greater) return 'concurrent';
  if (less) return 'before';
  if (greater) return 'after';
  return 'equal';
}

export function dominates(a: VersionVector, b: VersionVector): boolean {
  return compareVersionVectors(a, b) === 'after';
}

export function mergeVersionVectors(a: VersionVector, b: VersionVector): VersionVector {
  const out: VersionVector = { ...a };
  for (const k in b) {
    const y = b[k] ?? 0;
    if (y > (out[k] ?? 0)) out[k] = y;
  }
  return out;
}

/** Drops zero entries so equal vectors print the same. */
export function compactVersionVector(v: VersionVector): VersionVector {
  const out: VersionVector = {};
  for (const k of Object.keys(v).sort()) if ((v[k] ?? 0) > 0) out[k] = v[k] as number;
  return out;
}
