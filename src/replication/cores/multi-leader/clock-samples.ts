/**
 * What a multi-leader node's views show of each key's vector clocks, read straight from its keys:
 * the swarm's clock check (swarm/kv-swarm.ts) samples every node every 50 virtual ms and after
 * every conflict, and building storeView() and status() for that was a sixth of what a
 * multi_leader seed allocated. Read-only; the views themselves are the core's (multi-leader.ts).
 */
import type { NodeId } from '../../core.js';
import { multiLeaderSiblingKeysShownMax } from '../../limits.js';
import { winnerOf, type KeyState } from './key-state.js';

/** One key's clocks: its winner's (storeView()) and its siblings' (status().extra.siblings), if shown. */
export interface KeyClocks {
  key: string;
  winner: Record<NodeId, number>;
  /** The clocks of the key's versions, in order, when status() shows them (undefined otherwise). */
  siblings: ReadonlyArray<Record<NodeId, number>> | undefined;
}

/** An own property of a plain object that is ordered or set apart from the rest (an index, __proto__). */
function specialKey(key: string): boolean {
  if (key === '__proto__') return true;
  // Only a key that starts with a digit can be an index: the pattern is tried on those alone.
  const first = key.charCodeAt(0);
  return first >= 48 && first <= 57 && /^(?:0|[1-9]\d*)$/.test(key);
}

/**
 * Every key's clocks in storeView()'s order (the keys sorted), siblings as status() shows them (the
 * versions of the first multiLeaderSiblingKeysShownMax keys that have more than one, in key order).
 * The clocks are the stored ones (not copies): read them, do not change them. Undefined when a key
 * would sit elsewhere in those views' objects (an array index or __proto__): read the views then.
 */
export function clockSamples(keys: ReadonlyMap<string, KeyState>): KeyClocks[] | undefined {
  const out: KeyClocks[] = [];
  let siblingKeys = 0;
  for (const [key, keyState] of keys) {
    if (specialKey(key)) return undefined;
    let siblings: Array<Record<NodeId, number>> | undefined;
    if (keyState.versions.length > 1) {
      siblingKeys++;
      if (siblingKeys <= multiLeaderSiblingKeysShownMax) siblings = keyState.versions.map((v) => v.vclock);
    }
    // A handful of keys (the swarm's nodes) are placed in key order as they come: the order a sort by
    // key gives (keys are distinct), without the sort's scratch copy on every sample. Past
    // insertionKeysMax keys the list is sorted once at the end instead (insertion is quadratic).
    const sample: KeyClocks = { key, winner: winnerOf(keyState).vclock, siblings };
    let i = out.length;
    out.push(sample);
    if (i >= insertionKeysMax) continue;
    for (; i > 0 && (out[i - 1] as KeyClocks).key > key; i--) out[i] = out[i - 1] as KeyClocks;
    out[i] = sample;
  }
  return out.length > insertionKeysMax ? out.sort(byKey) : out;
}

/** Keys placed in order one by one; a longer list is sorted once (clockSamples). */
const insertionKeysMax = 32;

function byKey(a: KeyClocks, b: KeyClocks): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
