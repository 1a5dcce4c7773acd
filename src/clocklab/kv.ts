/**
 * The multi-version key-value store: each key holds the versions no other version dominates, each
 * identified by a dot (writer, counter) and carrying a version vector, so two concurrent writes are
 * never confused (dotted version vectors). It decides replace / stale / sibling by comparing vectors
 * and applies the configured conflict strategy; it does not own any clock (the lab passes the
 * writer's vector in) and publishes nothing (it returns what happened as a value).
 */
import { compareVersionVectors, compactVersionVector, mergeVersionVectors, type VersionVector } from './clocks.js';
import { unreachable } from '../util/assert.js';
import { kvKeysMax, kvSiblingsMax, kvStoreCharsMax, kvValueCharsMax } from './limits.js';

export type ConflictStrategy = 'keep_all' | 'lww' | 'first_writer' | 'merge';
export const conflictStrategies: readonly ConflictStrategy[] = ['keep_all', 'lww', 'first_writer', 'merge'];

/** Identifies one write: the writer's own vector entry right after the write event. */
export interface Dot {
  replica: string;
  counter: number;
}

/** The internal version record of the spec: value, version vector, scalar timestamp, writer, dot. */
export interface StoredVersion {
  value: string;
  vector: VersionVector;
  /** The writer's Lamport clock at the write (the scalar timestamp lww and first_writer compare). */
  lamport: number;
  writer: string;
  dot: Dot;
}

export interface Resolution {
  strategy: Exclude<ConflictStrategy, 'keep_all'>;
  result: StoredVersion;
  /** The siblings the resolution replaced. */
  siblings: StoredVersion[];
}

export type KvWriteResult =
  | { outcome: 'created'; version: StoredVersion; versions: StoredVersion[] }
  | { outcome: 'replaced'; version: StoredVersion; replaced: StoredVersion[]; versions: StoredVersion[] }
  | {
      outcome: 'conflict';
      version: StoredVersion;
      replaced: StoredVersion[];
      versions: StoredVersion[];
      resolution: Resolution | undefined;
    }
  | { outcome: 'stale'; version: StoredVersion; dominatedBy: StoredVersion; versions: StoredVersion[] }
  | { outcome: 'refused'; reason: string };

const numeric = /^-?\d+(\.\d+)?$/;

/**
 * Resolution rules (spec table "Conflict resolution strategies"): lww keeps the higher scalar
 * timestamp, first_writer the lower, ties to the lexicographically greater writer id; merge joins
 * strings with `|` in the order the siblings were stored and sums values that are all numbers.
 * The result's vector is the join of the siblings' vectors, so it dominates every one it replaces.
 */
export function resolve(
  strategy: Exclude<ConflictStrategy, 'keep_all'>,
  siblings: readonly StoredVersion[],
  trigger: StoredVersion,
): StoredVersion {
  let vector: VersionVector = {};
  let lamport = 0;
  for (const s of siblings) {
    vector = mergeVersionVectors(vector, s.vector);
    if (s.lamport > lamport) lamport = s.lamport;
  }
  vector = compactVersionVector(vector);
  switch (strategy) {
    case 'lww':
    case 'first_writer': {
      let winner = siblings[0] as StoredVersion;
      for (const s of siblings.slice(1)) {
        const byTime = strategy === 'lww' ? s.lamport - winner.lamport : winner.lamport - s.lamport;
        if (byTime > 0 || (byTime === 0 && s.writer > winner.writer)) winner = s;
      }
      return { value: winner.value, vector, lamport, writer: winner.writer, dot: winner.dot };
    }
    case 'merge': {
      const values = siblings.map((s) => s.value);
      const value = values.every((v) => numeric.test(v))
        ? String(values.reduce((sum, v) => sum + Number(v), 0))
        : values.join('|');
      return { value, vector, lamport, writer: trigger.writer, dot: trigger.dot };
    }
    default:
      return unreachable(strategy);
  }
}

function valueChars(versions: readonly StoredVersion[]): number {
  let n = 0;
  for (const v of versions) n += v.value.length;
  return n;
}

/** Code points, as the write schema counts a value's characters. */
function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

export class KvStore {
  private readonly keys = new Map<string, StoredVersion[]>();
  /** UTF-16 units of every stored value (the memory the store's budget bounds). */
  private chars = 0;

  /** Stores `versions` under `key` unless that would pass the store's budget (then the reason). */
  private put(key: string, versions: StoredVersion[], before: readonly StoredVersion[]): string | undefined {
    const next = this.chars - valueChars(before) + valueChars(versions);
    if (next > kvStoreCharsMax && next > this.chars)
      return `the store would hold ${next} characters of values, past its ${kvStoreCharsMax} maximum`;
    this.chars = next;
    this.keys.set(key, versions);
    return undefined;
  }

  /** UTF-16 units of every stored value. */
  get storedChars(): number {
    return this.chars;
  }

  constructor(public strategy: ConflictStrategy = 'keep_all') {}

  get size(): number {
    return this.keys.size;
  }

  read(key: string): StoredVersion[] | undefined {
    const v = this.keys.get(key);
    return v ? v.slice() : undefined;
  }

  entries(): IterableIterator<[string, StoredVersion[]]> {
    return this.keys.entries();
  }

  clear(): void {
    this.keys.clear();
    this.chars = 0;
  }

  /**
   * Applies one write whose vector the caller computed (the writer's clock after the write event).
   * Per the spec's state table: no versions → stored; the write dominates an existing version →
   * that version is replaced; an existing version dominates (or equals) it → stale, dropped;
   * concurrent with what remains → appended as a sibling, then the strategy runs unless keep_all.
   */
  write(key: string, candidate: StoredVersion): KvWriteResult {
    const existing = this.keys.get(key);
    if (!existing || existing.length === 0) {
      if (this.keys.size >= kvKeysMax)
        return { outcome: 'refused', reason: `the store holds ${kvKeysMax} keys, its maximum` };
      const versions = [candidate];
      const refused = this.put(key, versions, []);
      if (refused) return { outcome: 'refused', reason: refused };
      return { outcome: 'created', version: candidate, versions: versions.slice() };
    }
    const kept: StoredVersion[] = [];
    const replaced: StoredVersion[] = [];
    for (const v of existing) {
      const order = compareVersionVectors(candidate.vector, v.vector);
      switch (order) {
        case 'after':
          replaced.push(v);
          break;
        case 'before':
        case 'equal':
          return { outcome: 'stale', version: candidate, dominatedBy: v, versions: existing.slice() };
        case 'concurrent':
          kept.push(v);
          break;
        default:
          return unreachable(order);
      }
    }
    if (kept.length === 0) {
      const versions = [candidate];
      const refused = this.put(key, versions, existing);
      if (refused) return { outcome: 'refused', reason: refused };
      return { outcome: 'replaced', version: candidate, replaced, versions: versions.slice() };
    }
    if (this.strategy === 'keep_all' && kept.length + 1 > kvSiblingsMax) {
      return {
        outcome: 'refused',
        reason: `key ${key} already holds ${kvSiblingsMax} concurrent versions, its maximum`,
      };
    }
    const siblings = [...kept, candidate];
    if (this.strategy === 'keep_all') {
      const refused = this.put(key, siblings, existing);
      if (refused) return { outcome: 'refused', reason: refused };
      return { outcome: 'conflict', version: candidate, replaced, versions: siblings.slice(), resolution: undefined };
    }
    const result = resolve(this.strategy, siblings, candidate);
    // merge joins the siblings' strings: the result is held to the same limit as a written value,
    // or repeated concurrent writes would grow one value without bound.
    if (result.value.length > kvValueCharsMax && codePoints(result.value) > kvValueCharsMax) {
      return {
        outcome: 'refused',
        reason:
          `merging ${siblings.length} concurrent values of ${key} would make a value past the ` +
          `${kvValueCharsMax}-character maximum`,
      };
    }
    const refused = this.put(key, [result], existing);
    if (refused) return { outcome: 'refused', reason: refused };
    return {
      outcome: 'conflict',
      version: candidate,
      replaced,
      versions: [result],
      resolution: { strategy: this.strategy, result, siblings },
    };
  }
}
