/**
 * State-based CRDTs (Shapiro et al. 2011) carried inside ordinary string values, for the
 * multi-leader `crdt` conflict resolver: G-Counter, PN-Counter, OR-Set (add-wins, unique tags) and
 * LWW-Map. Merges are pure joins of a semilattice (commutative, associative, idempotent).
 * Not a general JSON merge: a value that is not one of the tagged forms below is untagged and the
 * resolver falls back to last-writer-wins.
 *
 * Tagged value format (the value of a write is a JSON string):
 *   state forms (what replicas store and exchange; a written state is merged into the local one):
 *     {"crdt":"g_counter","state":{"n1":3,"n2":1}}                       per-replica increments
 *     {"crdt":"pn_counter","state":{"p":{"n1":3},"n":{"n2":1}}}          increments and decrements
 *     {"crdt":"or_set","state":{"adds":{"x":["n1:17"]},"removes":["n1:17"]}}  element -> add tags;
 *                                                                         removed tags
 *     {"crdt":"lww_map","state":{"f":{"v":"1","ts":17,"node":"n1"}}}     field -> register; v null
 *                                                                         marks a deleted field
 *   op forms (what a client writes; applied at the receiving replica, then stored as a state):
 *     {"crdt":"g_counter","op":"inc","by":1}
 *     {"crdt":"pn_counter","op":"inc"|"dec","by":1}
 *     {"crdt":"or_set","op":"add"|"remove","elem":"x"}
 *     {"crdt":"lww_map","op":"set","field":"f","value":"v"}  /  {"crdt":"lww_map","op":"delete","field":"f"}
 * A stored state is encoded canonically (sorted keys) with its read-only "value" added:
 *   {"crdt":"g_counter","state":{...},"value":4}; the "value" of an incoming state is ignored.
 */
import type { NodeId } from '../core.js';

export type CrdtKind = 'g_counter' | 'pn_counter' | 'or_set' | 'lww_map';
export const crdtKinds: readonly CrdtKind[] = ['g_counter', 'pn_counter', 'or_set', 'lww_map'];

export type GCounter = Record<NodeId, number>;
export interface PNCounter {
  p: GCounter;
  n: GCounter;
}
/** Add-wins observed-remove set: every add gets a unique tag; a remove tombstones the tags it saw. */
export interface ORSet {
  adds: Record<string, string[]>;
  removes: string[];
}
export interface LwwRegister {
  v: string | null;
  ts: number;
  node: NodeId;
}
export type LwwMap = Record<string, LwwRegister>;

export type CrdtState =
  | { crdt: 'g_counter'; state: GCounter }
  | { crdt: 'pn_counter'; state: PNCounter }
  | { crdt: 'or_set'; state: ORSet }
  | { crdt: 'lww_map'; state: LwwMap };

export type CrdtOp =
  | { crdt: 'g_counter'; op: 'inc'; by: number }
  | { crdt: 'pn_counter'; op: 'inc' | 'dec'; by: number }
  | { crdt: 'or_set'; op: 'add' | 'remove'; elem: string }
  | { crdt: 'lww_map'; op: 'set'; field: string; value: string }
  | { crdt: 'lww_map'; op: 'delete'; field: string };

export type CrdtValue = { kind: 'state'; state: CrdtState } | { kind: 'op'; op: CrdtOp };

// ---------------------------------------------------------------- decoding (untrusted strings)

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function isCount(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}

function decodeGCounter(x: unknown): GCounter | null {
  if (!isObject(x)) return null;
  const out: GCounter = {};
  for (const [k, v] of Object.entries(x)) {
    if (!isCount(v)) return null;
    if (v > 0) out[k] = v;
  }
  return out;
}

function decodeORSet(x: unknown): ORSet | null {
  if (!isObject(x) || !isObject(x.adds) || !Array.isArray(x.removes)) return null;
  const adds: Record<string, string[]> = {};
  for (const [elem, tags] of Object.entries(x.adds)) {
    if (!Array.isArray(tags) || !tags.every((t) => typeof t === 'string')) return null;
    if (tags.length > 0) adds[elem] = sortedUnique(tags as string[]);
  }
  if (!x.removes.every((t) => typeof t === 'string')) return null;
  return { adds, removes: sortedUnique(x.removes as string[]) };
}

function decodeLwwMap(x: unknown): LwwMap | null {
  if (!isObject(x)) return null;
  const out: LwwMap = {};
  for (const [field, r] of Object.entries(x)) {
    if (!isObject(r)) return null;
    const { v, ts, node } = r;
    if (!(v === null || typeof v === 'string') || typeof ts !== 'number' || typeof node !== 'string') return null;
    out[field] = { v, ts, node };
  }
  return out;
}

function decodeState(kind: CrdtKind, x: unknown): CrdtState | null {
  switch (kind) {
    case 'g_counter': {
      const s = decodeGCounter(x);
      return s ? { crdt: kind, state: s } : null;
    }
    case 'pn_counter': {
      if (!isObject(x)) return null;
      const p = decodeGCounter(x.p ?? {});
      const n = decodeGCounter(x.n ?? {});
      return p && n ? { crdt: kind, state: { p, n } } : null;
    }
    case 'or_set': {
      const s = decodeORSet(x);
      return s ? { crdt: kind, state: s } : null;
    }
    case 'lww_map': {
      const s = decodeLwwMap(x);
      return s ? { crdt: kind, state: s } : null;
    }
  }
}

function decodeOp(kind: CrdtKind, o: Record<string, unknown>): CrdtOp | null {
  const by = o.by ?? 1;
  switch (kind) {
    case 'g_counter':
      return o.op === 'inc' && isCount(by) ? { crdt: kind, op: 'inc', by } : null;
    case 'pn_counter':
      return (o.op === 'inc' || o.op === 'dec') && isCount(by) ? { crdt: kind, op: o.op, by } : null;
    case 'or_set':
      return (o.op === 'add' || o.op === 'remove') && typeof o.elem === 'string'
        ? { crdt: kind, op: o.op, elem: o.elem }
        : null;
    case 'lww_map':
      if (o.op === 'set' && typeof o.field === 'string' && typeof o.value === 'string') {
        return { crdt: kind, op: 'set', field: o.field, value: o.value };
      }
      if (o.op === 'delete' && typeof o.field === 'string') return { crdt: kind, op: 'delete', field: o.field };
      return null;
  }
}

/** Decodes a stored or written value; null when it is not a well-formed tagged CRDT (LWW fallback). */
export function parseCrdt(value: string): CrdtValue | null {
  if (value.length === 0 || value[0] !== '{') return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return null;
  }
  if (!isObject(parsed) || typeof parsed.crdt !== 'string') return null;
  const kind = crdtKinds.find((k) => k === parsed.crdt);
  if (kind === undefined) return null;
  if ('op' in parsed) {
    const op = decodeOp(kind, parsed);
    return op ? { kind: 'op', op } : null;
  }
  const state = decodeState(kind, parsed.state);
  return state ? { kind: 'state', state } : null;
}

// ---------------------------------------------------------------- joins

function sortedUnique(xs: Iterable<string>): string[] {
  return [...new Set(xs)].sort();
}

/** Element-wise maximum; zero entries are dropped so equal counters have equal encodings. */
function mergeG(a: GCounter, b: GCounter): GCounter {
  const out: GCounter = {};
  for (const [k, v] of Object.entries(a)) if (v > 0) out[k] = v;
  for (const [k, v] of Object.entries(b)) if (v > (out[k] ?? 0)) out[k] = v;
  return out;
}

function bump(g: GCounter, replica: NodeId, by: number): GCounter {
  return mergeG(g, { [replica]: (g[replica] ?? 0) + by });
}

function mergeORSet(a: ORSet, b: ORSet): ORSet {
  const adds: Record<string, string[]> = {};
  for (const elem of new Set([...Object.keys(a.adds), ...Object.keys(b.adds)])) {
    adds[elem] = sortedUnique([...(a.adds[elem] ?? []), ...(b.adds[elem] ?? [])]);
  }
  return { adds, removes: sortedUnique([...a.removes, ...b.removes]) };
}

/** Register order: later timestamp, then larger node id, then a deleted field, then larger value. */
function registerWins(a: LwwRegister, b: LwwRegister): boolean {
  if (a.ts !== b.ts) return a.ts > b.ts;
  if (a.node !== b.node) return a.node > b.node;
  if (a.v === null || b.v === null) return a.v === null && b.v !== null;
  return a.v > b.v;
}

function mergeLwwMap(a: LwwMap, b: LwwMap): LwwMap {
  const out: LwwMap = { ...a };
  for (const [field, r] of Object.entries(b)) {
    const mine = out[field];
    if (!mine || registerWins(r, mine)) out[field] = r;
  }
  return out;
}

/** The join of two states of the same kind; null when the kinds differ (the caller falls back to LWW). */
export function mergeCrdt(a: CrdtState, b: CrdtState): CrdtState | null {
  switch (a.crdt) {
    case 'g_counter':
      return b.crdt === 'g_counter' ? { crdt: 'g_counter', state: mergeG(a.state, b.state) } : null;
    case 'pn_counter':
      return b.crdt === 'pn_counter'
        ? { crdt: 'pn_counter', state: { p: mergeG(a.state.p, b.state.p), n: mergeG(a.state.n, b.state.n) } }
        : null;
    case 'or_set':
      return b.crdt === 'or_set' ? { crdt: 'or_set', state: mergeORSet(a.state, b.state) } : null;
    case 'lww_map':
      return b.crdt === 'lww_map' ? { crdt: 'lww_map', state: mergeLwwMap(a.state, b.state) } : null;
  }
}

// ---------------------------------------------------------------- operations

export function emptyCrdt(kind: CrdtKind): CrdtState {
  switch (kind) {
    case 'g_counter':
      return { crdt: kind, state: {} };
    case 'pn_counter':
      return { crdt: kind, state: { p: {}, n: {} } };
    case 'or_set':
      return { crdt: kind, state: { adds: {}, removes: [] } };
    case 'lww_map':
      return { crdt: kind, state: {} };
  }
}

/**
 * Applies a client operation at `replica` (a CmRDT op turned into a state delta and joined).
 * `ts` is the write's HLC timestamp: unique per replica, so `${replica}:${ts}` is a unique OR-Set tag.
 * A state of another kind is replaced by the op's kind (the client changed the key's type).
 */
export function applyCrdtOp(current: CrdtState | null, op: CrdtOp, replica: NodeId, ts: number): CrdtState {
  const base = current && current.crdt === op.crdt ? current : emptyCrdt(op.crdt);
  switch (op.crdt) {
    case 'g_counter': {
      const s = base.crdt === 'g_counter' ? base.state : {};
      return { crdt: 'g_counter', state: bump(s, replica, op.by) };
    }
    case 'pn_counter': {
      const s = base.crdt === 'pn_counter' ? base.state : { p: {}, n: {} };
      const side = op.op === 'inc' ? 'p' : 'n';
      return { crdt: 'pn_counter', state: { ...s, [side]: bump(s[side], replica, op.by) } };
    }
    case 'or_set': {
      const s = base.crdt === 'or_set' ? base.state : { adds: {}, removes: [] };
      if (op.op === 'add') {
        const tag = `${replica}:${ts}`;
        return {
          crdt: 'or_set',
          state: {
            adds: { ...s.adds, [op.elem]: sortedUnique([...(s.adds[op.elem] ?? []), tag]) },
            removes: s.removes,
          },
        };
      }
      // Observed remove: tombstone exactly the tags this replica has seen; concurrent adds survive.
      return {
        crdt: 'or_set',
        state: { adds: s.adds, removes: sortedUnique([...s.removes, ...(s.adds[op.elem] ?? [])]) },
      };
    }
    case 'lww_map': {
      const s = base.crdt === 'lww_map' ? base.state : {};
      const v = op.op === 'set' ? op.value : null;
      return { crdt: 'lww_map', state: mergeLwwMap(s, { [op.field]: { v, ts, node: replica } }) };
    }
  }
}

/** What the CRDT currently says: a number, a sorted element list, or a field map. */
export function crdtValue(s: CrdtState): number | string[] | Record<string, string> {
  switch (s.crdt) {
    case 'g_counter':
      return Object.values(s.state).reduce((a, b) => a + b, 0);
    case 'pn_counter':
      return Object.values(s.state.p).reduce((a, b) => a + b, 0) - Object.values(s.state.n).reduce((a, b) => a + b, 0);
    case 'or_set': {
      const removed = new Set(s.state.removes);
      return Object.keys(s.state.adds)
        .filter((e) => (s.state.adds[e] ?? []).some((t) => !removed.has(t)))
        .sort();
    }
    case 'lww_map': {
      const out: Record<string, string> = {};
      for (const f of Object.keys(s.state).sort()) {
        const r = s.state[f];
        if (r && r.v !== null) out[f] = r.v;
      }
      return out;
    }
  }
}

function canonical(x: Json): Json {
  if (Array.isArray(x)) return x.map(canonical);
  if (x !== null && typeof x === 'object') {
    const out: { [k: string]: Json } = {};
    for (const k of Object.keys(x).sort()) out[k] = canonical(x[k] as Json);
    return out;
  }
  return x;
}

/** Canonical encoding (sorted keys, derived "value" included): equal states give equal strings. */
export function encodeCrdt(s: CrdtState): string {
  const body = { crdt: s.crdt, state: s.state, value: crdtValue(s) } as unknown as Json;
  return JSON.stringify(canonical(body));
}

/** Structural equality of two states (through their canonical encodings). */
export function crdtEqual(a: CrdtState, b: CrdtState): boolean {
  return encodeCrdt(a) === encodeCrdt(b);
}
