/**
 * The single-leader log a node retains: a contiguous suffix of entries ending at lastIndex, the time
 * each was appended (for a follower's lag in ms), its byte count, and compaction by entry count and
 * by a byte budget. Bookkeeping only, like raft/log.ts: it does not apply entries or decide what a
 * follower is sent; the core does (single-leader.ts).
 */
import { invariant } from '../../../util/assert.js';
import {
  singleLeaderCompactChunkEntries,
  singleLeaderCompactTargetShareOfLogBudget,
  singleLeaderLogViewEntriesMax,
  singleLeaderRetainedLogEntriesMax,
} from '../../limits.js';
import { entryBytes } from './durable.js';
import type { LogEntry } from './messages.js';
import { invariantBroken } from '../invariant-broken.js';

export class RetainedLog {
  /** Retained entries; entries[0] has index firstIndex. */
  private entries: LogEntry[] = [];
  /** Append time of each retained entry, same positions as `entries`. */
  private readonly appendedAt: number[] = [];
  /** Index of the first retained entry (lastIndex + 1 when none is retained). */
  firstIndex = 1;
  lastIndex = 0;
  /** Bytes the retained entries are counted as (durable.ts entryBytes). */
  bytes = 0;

  /** `bytesMax`: past it compaction drops the oldest entries (Infinity: by count only). */
  constructor(private readonly bytesMax: number) {}

  get length(): number {
    return this.entries.length;
  }

  /** A restarted node's entries since its last checkpoint, which end at `lastIndex`. */
  restore(entries: LogEntry[], lastIndex: number, now: number): void {
    this.entries = entries;
    this.appendedAt.length = 0;
    this.bytes = 0;
    for (const e of entries) {
      this.appendedAt.push(now);
      this.bytes += entryBytes(e);
    }
    this.firstIndex = entries[0]?.index ?? lastIndex + 1;
    this.lastIndex = lastIndex;
    this.compact();
  }

  /** Appends the next entry; returns the bytes it is counted as. */
  append(e: LogEntry, now: number): number {
    if (e.index !== this.lastIndex + 1)
      invariantBroken(`log entries are contiguous (${e.index} after ${this.lastIndex})`);
    this.entries.push(e);
    this.appendedAt.push(now);
    const bytes = entryBytes(e);
    this.bytes += bytes;
    this.lastIndex = e.index;
    return bytes;
  }

  /** Forgets every entry: the store now stands at `index` (a store copy replaced it). */
  resetTo(index: number): void {
    this.entries = [];
    this.appendedAt.length = 0;
    this.bytes = 0;
    this.firstIndex = index + 1;
    this.lastIndex = index;
  }

  entryAt(index: number): LogEntry | undefined {
    return this.entries[index - this.firstIndex];
  }

  /** At most `count` retained entries from `index` on. */
  slice(index: number, count: number): LogEntry[] {
    const from = index - this.firstIndex;
    return this.entries.slice(from, from + count);
  }

  /** When the entry at `index` was appended; the oldest retained time if it is compacted; undefined if none. */
  appendedAtOrOldest(index: number): number | undefined {
    return this.appendedAt[index - this.firstIndex] ?? this.appendedAt[0];
  }

  /** The newest entries, for GET .../log. */
  newest(): LogEntry[] {
    return this.entries.slice(-singleLeaderLogViewEntriesMax);
  }

  /**
   * Drops the oldest entries in chunks (not one by one: splice is O(n)): past
   * singleLeaderRetainedLogEntriesMax entries, or past the byte budget (down to
   * singleLeaderCompactTargetShareOfLogBudget of it, keeping the newest entry).
   */
  compact(): void {
    const overCount = this.entries.length > singleLeaderRetainedLogEntriesMax + singleLeaderCompactChunkEntries;
    const overBytes = this.bytes > this.bytesMax;
    if (!overCount && !overBytes) return;
    let drop = overCount ? this.entries.length - singleLeaderRetainedLogEntriesMax : 0;
    let bytes = this.bytes;
    for (let i = 0; i < drop; i++) bytes -= entryBytes(this.entries[i] as LogEntry);
    if (bytes > this.bytesMax) {
      const target = this.bytesMax * singleLeaderCompactTargetShareOfLogBudget;
      while (drop < this.entries.length - 1 && bytes > target) bytes -= entryBytes(this.entries[drop++] as LogEntry);
    }
    if (drop === 0) return;
    this.entries.splice(0, drop);
    this.appendedAt.splice(0, drop);
    this.firstIndex += drop;
    this.bytes = bytes;
  }

  /** Cheap structural checks (the core runs them after every input). */
  checkInvariants(): void {
    invariant(this.firstIndex + this.entries.length === this.lastIndex + 1, 'the retained log ends at lastIndex');
    invariant(this.appendedAt.length === this.entries.length, 'one append time per retained entry');
    if (this.bytes < 0) invariantBroken(`retained log bytes ${this.bytes} below zero`);
    const first = this.entries[0];
    if (first !== undefined) invariant(first.index === this.firstIndex, 'the first retained entry is at firstIndex');
  }
}
