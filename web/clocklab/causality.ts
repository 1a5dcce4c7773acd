/**
 * Happened-before from vector clocks, for the space-time diagram: comparing two clocks, an event's
 * relation to another (its causal past, its future, concurrent), the label text of a clock, and
 * whether a snapshot's cut is consistent (no receive inside whose send is outside). Pure functions
 * over plain values; no drawing, no DOM.
 */

export type VClock = Readonly<Record<string, number>>;

export type Order = 'before' | 'after' | 'equal' | 'concurrent';

/** How clock a relates to clock b (missing entries are 0). */
export function compareClocks(a: VClock, b: VClock): Order {
  let less = false;
  let greater = false;
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
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

/** What the diagram needs of an event to place it causally: its process and its vector clock. */
export interface CausalEvent {
  host: string;
  vector: VClock;
}

export type Relation = 'self' | 'past' | 'future' | 'concurrent';

/**
 * Where `other` stands for `focus`: in its causal past (happened before it), its future, or
 * concurrent. With the process's own entry counting its events (the vector clock rule) this is
 * O(1): f → e iff e's entry for f's process has reached f's own entry.
 */
export function relationTo(focus: CausalEvent, other: CausalEvent): Relation {
  if (focus === other) return 'self';
  const ownOther = other.vector[other.host] ?? 0;
  const ownFocus = focus.vector[focus.host] ?? 0;
  if (ownOther > 0 && ownFocus > 0) {
    if (other.host === focus.host) {
      if (ownOther < ownFocus) return 'past';
      if (ownOther > ownFocus) return 'future';
    } else {
      if ((focus.vector[other.host] ?? 0) >= ownOther) return 'past';
      if ((other.vector[focus.host] ?? 0) >= ownFocus) return 'future';
      return 'concurrent';
    }
  }
  const o = compareClocks(other.vector, focus.vector);
  if (o === 'before') return 'past';
  if (o === 'after') return 'future';
  return o === 'equal' ? 'self' : 'concurrent';
}

/** A vector clock as labels write it: the nonzero entries, `p1:3 p2:1` (`0` when all are zero). */
export function vectorText(v: VClock): string {
  const parts: string[] = [];
  for (const [k, n] of Object.entries(v)) if (n !== 0) parts.push(`${k}:${n}`);
  return parts.length === 0 ? '0' : parts.join(' ');
}

/** A clock as the API reports it, in the process's clock type: a number, a vector, or a matrix of rows. */
export function clockText(clock: unknown): string {
  if (typeof clock === 'number') return String(clock);
  if (clock === null || typeof clock !== 'object') return '';
  const entries = Object.entries(clock as Record<string, unknown>);
  if (entries.every(([, v]) => typeof v === 'number')) return vectorText(clock as VClock);
  // A matrix: one row per process, each written as a vector.
  return entries.map(([k, row]) => `${k}[${clockText(row)}]`).join(' ');
}

/** One message for the cut check: where its send and its receive are, as rows on their lanes. */
export interface CutMessage {
  id: string;
  from: string;
  to: string;
  sendRow: number;
  /** Row of the receive (or delivery) at `to`; undefined while it has not been received. */
  receiveRow: number | undefined;
}

/**
 * The messages that make a cut inconsistent: received inside the cut (before the receiver's cut
 * row) but sent outside it (after the sender's). `cut` maps a process to the row its state was
 * recorded after; a process missing from the cut is not checked.
 */
export function cutViolations(cut: ReadonlyMap<string, number>, messages: Iterable<CutMessage>): string[] {
  const out: string[] = [];
  for (const m of messages) {
    if (m.receiveRow === undefined) continue;
    const atFrom = cut.get(m.from);
    const atTo = cut.get(m.to);
    if (atFrom === undefined || atTo === undefined) continue;
    if (m.receiveRow < atTo && m.sendRow > atFrom) out.push(m.id);
  }
  return out;
}

/** Message ids named in a verifier's reasons (`m12 on p1→p2 was sent ...`). */
export function messageIdsIn(reasons: readonly string[]): string[] {
  const ids = new Set<string>();
  for (const r of reasons) for (const m of r.matchAll(/\bm\d+\b/g)) ids.add(m[0]);
  return [...ids];
}
