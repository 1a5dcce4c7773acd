/**
 * The Raft log of one node: a raftSnapshot standing for every entry up to its lastIncludedIndex,
 * followed by the retained entries. It answers index/term questions across that boundary and does
 * the truncations Raft allows; it does not decide anything (commit, conflict policy: the core does).
 * Every change it makes to what must survive a crash is told to its DurableJournal, when it has one.
 *
 * A compaction does not copy the store: the raftSnapshot's store is built when it is read (sent,
 * persisted, inspected), from the last one built and the entries compacted since, replayed through
 * the state machine the way the durable fold rebuilds it (state-machine.ts). So a node whose
 * snapshot is seldom read copies its store once per raftSnapshotFoldEntriesMin entries or per store
 * size, whichever is more, instead of at every compaction. The store built is the one the core held
 * at the cut, key for key and in the same key order (a copy, then the same puts in the same order).
 */
import type { NodeId } from '../../core.js';
import { raftSnapshotFoldEntriesMin } from '../../limits.js';
import { invariant } from '../../../util/assert.js';
import type { DurableJournal } from './durable.js';
import { applyToStore } from './state-machine.js';
import type { LogEntry, RaftSnapshot } from './types.js';
import { invariantBroken } from '../invariant-broken.js';

export class RaftLog {
  /** entries[k] has index snapshotIndex + 1 + k. */
  private entries: LogEntry[];
  /** The raftSnapshot last built or given; `folded` holds the entries compacted after it. */
  private built: RaftSnapshot;
  private folded: LogEntry[] = [];
  /** Keys of built.store: past max(this, raftSnapshotFoldEntriesMin) folded entries it is rebuilt. */
  private builtKeys: number;
  // The raftSnapshot's boundary and configuration, known without building it.
  private snapIndex: number;
  private snapTerm: number;
  private snapVoters: NodeId[];

  constructor(
    raftSnapshot: RaftSnapshot,
    entries: LogEntry[] = [],
    private readonly journal?: DurableJournal,
  ) {
    this.entries = entries;
    this.built = raftSnapshot;
    this.builtKeys = Object.keys(raftSnapshot.store).length;
    this.snapIndex = raftSnapshot.lastIncludedIndex;
    this.snapTerm = raftSnapshot.lastIncludedTerm;
    this.snapVoters = raftSnapshot.voters;
    for (const [k, e] of entries.entries()) {
      invariant(
        e.index === raftSnapshot.lastIncludedIndex + 1 + k,
        'log entries must be contiguous after the snapshot',
      );
    }
  }

  /** The raftSnapshot standing for every entry up to snapshotIndex (built now if compactions are pending). */
  get raftSnapshot(): RaftSnapshot {
    if (this.folded.length > 0) this.build();
    return this.built;
  }

  get snapshotIndex(): number {
    return this.snapIndex;
  }

  get snapshotTerm(): number {
    return this.snapTerm;
  }

  get firstIndex(): number {
    return this.snapIndex + 1;
  }

  get lastIndex(): number {
    return this.snapIndex + this.entries.length;
  }

  get lastTerm(): number {
    const last = this.entries[this.entries.length - 1];
    return last ? last.term : this.snapTerm;
  }

  get length(): number {
    return this.entries.length;
  }

  /** Term of the entry at `index`; undefined when compacted away (below the snapshot) or absent. */
  termAt(index: number): number | undefined {
    if (index === this.snapIndex) return this.snapTerm;
    return this.entryAt(index)?.term;
  }

  entryAt(index: number): LogEntry | undefined {
    return this.entries[index - this.snapIndex - 1];
  }

  /** Entries with index in [from, to] (clamped to what is retained). */
  slice(from: number, to: number): LogEntry[] {
    const base = this.snapIndex + 1;
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
    invariant(index > this.snapIndex, 'cannot truncate into the snapshot');
    const dropped = this.entries.splice(index - this.snapIndex - 1);
    if (dropped.length > 0) this.journal?.truncate(index);
    return dropped;
  }

  /**
   * Fast back-off hint (§5.3): the first retained index holding `term`, scanning back from `from`.
   * Bounded below by the first retained index.
   */
  firstIndexOfTerm(term: number, from: number): number {
    let i = from;
    while (i - 1 > this.snapIndex && this.termAt(i - 1) === term) i--;
    return i;
  }

  /** The last retained index holding `term`, or 0 when none does (the leader's side of the hint). */
  lastIndexOfTerm(term: number): number {
    for (let k = this.entries.length - 1; k >= 0; k--) {
      const t = (this.entries[k] as LogEntry).term;
      if (t === term) return this.snapIndex + 1 + k;
      if (t < term) break;
    }
    if (this.snapTerm === term && this.snapIndex > 0) {
      return this.snapIndex;
    }
    return 0;
  }

  /** The membership in effect after the last entry (config entries take effect when appended). */
  latestConfig(): { voters: NodeId[]; index: number } {
    return this.configAt(this.lastIndex);
  }

  /** The membership in effect at `index` (the last config entry at or before it, else the snapshot's). */
  configAt(index: number): { voters: NodeId[]; index: number } {
    for (let k = Math.min(this.entries.length, index - this.snapIndex) - 1; k >= 0; k--) {
      const e = this.entries[k] as LogEntry;
      if (e.type === 'config') return { voters: e.voters, index: e.index };
    }
    return { voters: this.snapVoters, index: this.snapIndex };
  }

  /**
   * Log compaction (§7): the entries up to `index`, which we hold, become part of the raftSnapshot
   * (of `term` there, with configuration `voters`); its store is built when it is next read.
   */
  compact(index: number, term: number, voters: NodeId[]): void {
    this.checkCut(index, term);
    const k = index - this.snapIndex;
    for (let i = 0; i < k; i++) this.folded.push(this.entries[i] as LogEntry);
    this.entries = this.entries.slice(k);
    this.snapIndex = index;
    this.snapTerm = term;
    this.snapVoters = voters;
    if (this.folded.length >= Math.max(this.builtKeys, raftSnapshotFoldEntriesMin)) this.build();
    this.journal?.compact(index, term);
  }

  /** The raftSnapshot at snapshotIndex: the last one built with the entries compacted since applied to a copy. */
  private build(): void {
    const store = { ...this.built.store };
    for (const e of this.folded) applyToStore(store, e);
    this.built = {
      lastIncludedIndex: this.snapIndex,
      lastIncludedTerm: this.snapTerm,
      voters: this.snapVoters,
      store,
    };
    this.folded = [];
    this.builtKeys = Object.keys(store).length;
  }

  /** Replaces the raftSnapshot and the entries up to it by `snap` (an install, journalled by the core). */
  private compactQuietly(snap: RaftSnapshot): void {
    this.checkCut(snap.lastIncludedIndex, snap.lastIncludedTerm);
    this.entries = this.entries.slice(snap.lastIncludedIndex - this.snapIndex);
    this.replaceSnapshot(snap);
  }

  /** A compaction up to `index` (of `term` there) keeps to the log we hold and moves forward. */
  private checkCut(index: number, term: number): void {
    invariant(index <= this.lastIndex, 'cannot compact past the last index');
    invariant(index >= this.snapIndex, 'snapshots only move forward');
    invariant(this.termAt(index) === term, 'snapshot term must match the log');
  }

  private replaceSnapshot(snap: RaftSnapshot): void {
    this.built = snap;
    this.folded = [];
    this.builtKeys = Object.keys(snap.store).length;
    this.snapIndex = snap.lastIncludedIndex;
    this.snapTerm = snap.lastIncludedTerm;
    this.snapVoters = snap.voters;
  }

  /**
   * InstallSnapshot receiver rule (§7): when the log holds the snapshot's last entry, keep what
   * follows it; otherwise discard the whole log. Returns the discarded entries past the snapshot.
   * Not journalled: the caller records the whole installed state as a checkpoint.
   */
  install(snap: RaftSnapshot): LogEntry[] {
    const i = snap.lastIncludedIndex;
    if (i <= this.lastIndex && this.termAt(i) === snap.lastIncludedTerm && i >= this.snapIndex) {
      this.compactQuietly(snap);
      return [];
    }
    const dropped = this.entries.filter((e) => e.index > i);
    this.entries = [];
    this.replaceSnapshot(snap);
    return dropped;
  }
}
