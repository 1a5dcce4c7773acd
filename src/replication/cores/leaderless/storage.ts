/**
 * What a leaderless replica stores: its own versions and the hints it holds for others, the bytes
 * they weigh against the node's budget, and the durable records each change writes (with a
 * checkpoint of both once the records since the last one outweigh them). It decides nothing about
 * newer-wins or who gets what: the core asks, this keeps the bytes and the records right.
 */
import type { NodeId, Version } from '../../core.js';
import { lwwNewer } from '../../dynamo/version.js';
import { durableCheckpointMinBytes, storedEntryOverheadBytes } from '../../limits.js';
import { invariant } from '../../../util/assert.js';
import { versionTuple } from '../durable-version.js';
import type { LeaderlessPersisted, LeaderlessRecord } from './durable.js';
import { HintStore, type HintPut } from './hints.js';
import { invariantBroken } from '../invariant-broken.js';

/** Bytes a version is counted as: its key and value characters plus a fixed overhead (limits.ts). */
export function versionBytes(v: Version): number {
  return v.key.length + v.value.length + storedEntryOverheadBytes;
}

export class ReplicaStorage {
  /** This node's own versions, by key. */
  readonly versions = new Map<string, Version>();
  /** Versions held for unreachable owners (sloppy quorum stand-in duty). */
  readonly hints: HintStore;
  private bytes = 0;
  private recordBytesSinceCheckpoint = 0;

  /**
   * @param storedBytesMax budget on stored bytes (versions + hints), Infinity when none
   * @param records the core's durable output, appended to (the core drains it)
   */
  constructor(
    readonly storedBytesMax: number,
    hintsMax: number,
    private readonly records: { push(record: unknown): unknown },
  ) {
    this.hints = new HintStore(hintsMax);
  }

  /** Bytes stored now (versions and hints). */
  get storedBytes(): number {
    return this.bytes;
  }

  /** A restarted node's versions and hints as they were; `observe` sees every timestamp. */
  restore(p: LeaderlessPersisted, observe: (timestamp: number) => void): void {
    for (const v of p.store.values()) {
      this.versions.set(v.key, v);
      this.bytes += versionBytes(v);
      observe(v.timestamp);
    }
    for (const [owner, held] of p.hints) {
      this.hints.restore(owner, held);
      for (const v of held.values()) {
        this.bytes += versionBytes(v);
        observe(v.timestamp);
      }
    }
  }

  /** The newest version held for a key, as a replica or as a stand-in. */
  newest(key: string): Version | null {
    const own = this.versions.get(key) ?? null;
    const hinted = this.hints.newest(key);
    if (hinted && (!own || lwwNewer(hinted, own))) return hinted;
    return own;
  }

  /** Storing `v` over `current` would take the stored bytes past `max` (and make them grow). */
  wouldOverflow(v: Version, current: Version | undefined, max = this.storedBytesMax): boolean {
    const after = this.bytes + versionBytes(v) - (current ? versionBytes(current) : 0);
    return after > this.bytes && after > max;
  }

  set(v: Version): void {
    const current = this.versions.get(v.key);
    this.bytes += versionBytes(v) - (current ? versionBytes(current) : 0);
    this.versions.set(v.key, v);
    this.record(['s', versionTuple(v)], versionBytes(v));
  }

  /** Removes a key's version; returns it (undefined when none). */
  delete(key: string): Version | undefined {
    const current = this.versions.get(key);
    if (!current) return undefined;
    this.bytes -= versionBytes(current);
    this.versions.delete(key);
    this.record(['d', key], storedEntryOverheadBytes);
    return current;
  }

  /** Holds `v` for `owner` (HintStore.put), counting its bytes and recording it when stored. */
  putHint(owner: NodeId, v: Version): HintPut {
    const put = this.hints.put(owner, v);
    if (put.outcome !== 'stored') return put;
    this.bytes += versionBytes(v) - (put.replaced ? versionBytes(put.replaced) : 0);
    this.record(['h', owner, versionTuple(v)], versionBytes(v));
    return put;
  }

  /** The owner acknowledged this exact version (HintStore.settle): it leaves, bytes and record follow. */
  settleHint(owner: NodeId, key: string, timestamp: number): Version | null {
    const settled = this.hints.settle(owner, key, timestamp);
    if (settled) this.forgetHint(owner, settled);
    return settled;
  }

  /** The owner left the cluster: its hints are dropped. Returns how many. */
  dropHintsOf(owner: NodeId): number {
    const dropped = this.hints.dropOwner(owner);
    for (const v of dropped) this.forgetHint(owner, v);
    return dropped.length;
  }

  /** Versions and hints as one record, once the records since the last one outweigh them (limits.ts). */
  maybeCheckpoint(): void {
    if (this.recordBytesSinceCheckpoint <= Math.max(durableCheckpointMinBytes, this.bytes)) return;
    const hints: Array<[NodeId, Version[]]> = [];
    for (const [owner, held] of this.hints.owners()) hints.push([owner, [...held.values()]]);
    this.records.push(['c', [...this.versions.values()], hints] satisfies LeaderlessRecord);
    this.recordBytesSinceCheckpoint = 0;
  }

  checkInvariants(): void {
    this.hints.checkInvariants();
    if (this.bytes < 0) invariantBroken(`stored bytes ${this.bytes} < 0`);
    invariant(
      this.bytes > 0 || (this.versions.size === 0 && this.hints.count === 0),
      'zero bytes means nothing stored',
    );
  }

  private forgetHint(owner: NodeId, v: Version): void {
    this.bytes -= versionBytes(v);
    this.record(['x', owner, v.key], storedEntryOverheadBytes);
  }

  private record(r: LeaderlessRecord, bytes: number): void {
    this.records.push(r);
    this.recordBytesSinceCheckpoint += bytes;
  }
}
