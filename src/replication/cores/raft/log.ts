/**
 * The Raft log of one node: a raftSnapshot standing for every entry up to its lastIncludedIndex,
 * followed by the retained entries. It answers index/term questions across that boundary and does
 * the truncations Raft allows; it does not decide anything (commit, conflict policy: the core does).
 * Every change it makes to what must survive a crash is told to its DurableJournal, when it has one.
 */
import type { NodeId } from '../../core.js';
import { invariant } from '../../../util/assert.js';
import type { DurableJournal } from './durable.js';
import type { LogEntry, RaftSnapshot } from './types.js';
import { invariantBroken } from '../invariant-broken.js';

export class RaftLog {
  /** entries[k] has index raftSnapshot.lastIncludedIndex + 1 + k. */
  private entries: LogEntry[];

  constructor(
    public raftSnapshot: RaftSnapshot,
    entries: LogEntry[] = [],
    private readonly journal?: DurableJournal,
  ) {
    this.entries = entries;
    for (const [k, e] of entries.entries()) {
      invariant(
        e.index === raftSnapshot.lastIncludedIndex + 1 + k,
        'log entries must be contiguous after the snapshot',
      );
    }
  }

  get snapshotIndex(): number {
    return this.raftSnapshot.lastIncludedIndex;
  }

  get snapshotTerm(): number {
    return this.raftSnapshot.lastIncludedTerm;
  }

  get firstIndex(): number {
    return this.raftSnapshot.lastIncludedIndex + 1;
  }

  get lastIndex(): number {
    return this.raftSnapshot.lastIncludedIndex + this.entries.length;
  }

  get lastTerm(): number {
    const last = this.entries[this.entries.length - 1];
    return last ? last.term : this.raftSnapshot.lastIncludedTerm;
  }

  get length(): number {
    return this.entries.length;
  }

  /** Term of the entry at `index`; undefined when compacted away (below the snapshot) or absent. */
  termAt(index: number): number | undefined {
    if (index === this.raftSnapshot.lastIncludedIndex) return this.raftSnapshot.lastIncludedTerm;
    return this.entryAt(index)?.term;
  }

  entryAt(index: number): LogEntry | undefined {
    return this.entries[index - this.raftSnapshot.lastIncludedIndex - 1];
  }

  /** Entries with index in [from, to] (clamped to what is retained). */
  slice(from: number, to: number): LogEntry[] {
    const base = this.raftSnapshot.lastIncludedIndex + 1;
    return this.entries.slice(Math.max(0, from - base), Math.max(0, to - base + 1));
  }

  /** The retained entries (read-only view for persistence and the log endpoint). */
  all(): readonly LogEntry[] {
    return this.entries;
  }

  append(entry: LogEntry): void {
    if (entry.index !== this.lastIndex + 1)
      invariantBroken(`append at ${entry.index} but last index is ${this.lastIndex}`);
    if (entry.term < this.lastTerm) invariantBroken(`entry term ${entry.term} below last term ${this.lastTerm}`);
    this.entries.push(entry);
    this.journal?.append(entry);
  }

  /** Removes every entry at `index` and after (a conflicting suffix, §5.3). */
  truncateFrom(index: number): LogEntry[] {
    invariant(index > this.raftSnapshot.lastIncludedIndex, 'cannot truncate into the snapshot');
    const dropped = this.entries.splice(index - this.raftSnapshot.lastIncludedIndex - 1);
    if (dropped.length > 0) this.journal?.truncate(index);
    return dropped;
  }

  /**
   * Fast back-off hint (§5.3): the first retained index holding `term`, scanning back from `from`.
   * Bounded below by the first retained index.
   */
  firstIndexOfTerm(term: number, from: number): number {
    let i = from;
    while (i - 1 > this.raftSnapshot.lastIncludedIndex && this.termAt(i - 1) === term) i--;
    return i;
  }

  /** The last retained index holding `term`, or 0 when none does (the leader's side of the hint). */
  lastIndexOfTerm(term: number): number {
    for (let k = this.entries.length - 1; k >= 0; k--) {
      const t = (this.entries[k] as LogEntry).term;
      if (t === term) return this.raftSnapshot.lastIncludedIndex + 1 + k;
      if (t < term) break;
    }
    if (this.raftSnapshot.lastIncludedTerm === term && this.raftSnapshot.lastIncludedIndex > 0) {
      return this.raftSnapshot.lastIncludedIndex;
    }
    return 0;
  }

  /** The membership in effect after the last entry (config entries take effect when appended). */
  latestConfig(): { voters: NodeId[]; index: number } {
    return this.configAt(this.lastIndex);
  }

  /** The membership in effect at `index` (the last config entry at or before it, else the snapshot's). */
  configAt(index: number): { voters: NodeId[]; index: number } {
    for (let k = Math.min(this.entries.length, index - this.raftSnapshot.lastIncludedIndex) - 1; k >= 0; k--) {
      const e = this.entries[k] as LogEntry;
      if (e.type === 'config') return { voters: e.voters, index: e.index };
    }
    return { voters: this.raftSnapshot.voters, index: this.raftSnapshot.lastIncludedIndex };
  }

  /** Log compaction (§7): `snap` replaces every entry up to its lastIncludedIndex, which we hold. */
  compact(snap: RaftSnapshot): void {
    this.compactQuietly(snap);
    this.journal?.compact(snap.lastIncludedIndex, snap.lastIncludedTerm);
  }

  /** compact() without a journal record: an install is journalled whole by the core. */
  private compactQuietly(snap: RaftSnapshot): void {
    invariant(snap.lastIncludedIndex <= this.lastIndex, 'cannot compact past the last index');
    invariant(snap.lastIncludedIndex >= this.raftSnapshot.lastIncludedIndex, 'snapshots only move forward');
    invariant(this.termAt(snap.lastIncludedIndex) === snap.lastIncludedTerm, 'snapshot term must match the log');
    this.entries = this.entries.slice(snap.lastIncludedIndex - this.raftSnapshot.lastIncludedIndex);
    this.raftSnapshot = snap;
  }

  /**
   * InstallSnapshot receiver rule (§7): when the log holds the snapshot's last entry, keep what
   * follows it; otherwise discard the whole log. Returns the discarded entries past the snapshot.
   * Not journalled: the caller records the whole installed state as a checkpoint.
   */
  install(snap: RaftSnapshot): LogEntry[] {
    const i = snap.lastIncludedIndex;
    if (i <= this.lastIndex && this.termAt(i) === snap.lastIncludedTerm && i >= this.raftSnapshot.lastIncludedIndex) {
      this.compactQuietly(snap);
      return [];
    }
    const dropped = this.entries.filter((e) => e.index > i);
    this.entries = [];
    this.raftSnapshot = snap;
    return dropped;
  }
}
