/**
 * Raft's durable hand-off (etcd raft's Ready: persist HardState and entries, then send): the
 * records of what a step changed in a node's durable state, gathered by a journal while the core
 * runs and drained before the step's messages, and the fold that rebuilds RaftPersistentState from
 * them (what a restarted core is built from). It does not store anything or decide when to persist:
 * the shell hands the records to storage outside the node, the core only says what changed.
 *
 * Records are small on the hot path: an append carries the new entries, a term or vote change two
 * fields, a compaction two numbers (the fold replays the compacted entries onto the previous
 * raftSnapshot with the same state machine the core uses). The first record of a node, an
 * installed raftSnapshot, and now and then a compaction carry the whole state: those are
 * checkpoints, after which storage forgets every older record. A compaction is a checkpoint once
 * the entries appended since the last one outnumber what a checkpoint would carry, so storage
 * stays within about twice the state and checkpoints cost O(1) per entry, amortized.
 */
import type { DurableFold, NodeId } from '../../core.js';
import { invariant } from '../../../util/assert.js';
import { raftCheckpointEntriesMin } from '../../limits.js';
import { applyToStore, votersAfter } from './state-machine.js';
import { isPersistentState, type LogEntry, type RaftPersistentState } from './types.js';
import { invariantBroken } from '../invariant-broken.js';

export type RaftDurableRecord =
  /** The whole state: a node's first record, or a raftSnapshot installed from the leader. */
  | { kind: 'checkpoint'; state: RaftPersistentState }
  /** Figure 2's currentTerm and votedFor, after a change to either. */
  | { kind: 'hard'; term: number; votedFor: NodeId | null }
  /** Entries appended after the last index, contiguous. */
  | { kind: 'append'; entries: LogEntry[] }
  /** Every entry at `fromIndex` and after is gone (a conflicting suffix, §5.3). */
  | { kind: 'truncate'; fromIndex: number }
  /** Log compaction (§7): entries up to lastIncludedIndex now live in the raftSnapshot. */
  | { kind: 'compact'; lastIncludedIndex: number; lastIncludedTerm: number };

/** Collects one step's records in order; the core drains them before the step's messages. */
export class DurableJournal {
  private pending: RaftDurableRecord[] = [];
  /** Entries appended since the last checkpoint: what storage holds beyond it. */
  private entriesSinceCheckpoint = 0;
  private term = 0;
  private votedFor: NodeId | null = null;

  /** A restarted node starts from what storage already holds: no checkpoint, known hard state. */
  constructor(hard: { term: number; votedFor: NodeId | null } = { term: 0, votedFor: null }) {
    this.term = hard.term;
    this.votedFor = hard.votedFor;
  }

  /** The whole state now: it supersedes this step's earlier records, so they are dropped. */
  checkpoint(state: RaftPersistentState): void {
    this.pending = [{ kind: 'checkpoint', state }];
    this.entriesSinceCheckpoint = 0;
    this.term = state.term;
    this.votedFor = state.votedFor;
  }

  append(entry: LogEntry): void {
    this.entriesSinceCheckpoint++;
    const last = this.pending[this.pending.length - 1];
    // One record per run of appends in a step (a leader's batch, a follower's AppendEntries).
    if (last?.kind === 'append') {
      const tail = last.entries[last.entries.length - 1];
      if (tail && tail.index + 1 === entry.index) {
        last.entries.push(entry);
        return;
      }
    }
    this.pending.push({ kind: 'append', entries: [entry] });
  }

  truncate(fromIndex: number): void {
    this.pending.push({ kind: 'truncate', fromIndex });
  }

  /** True when a compaction should be recorded as a checkpoint of a state of stateSize() items. */
  checkpointDue(stateSize: () => number): boolean {
    return this.entriesSinceCheckpoint >= raftCheckpointEntriesMin && this.entriesSinceCheckpoint >= stateSize();
  }

  compact(lastIncludedIndex: number, lastIncludedTerm: number): void {
    this.pending.push({ kind: 'compact', lastIncludedIndex, lastIncludedTerm });
  }

  /**
   * Moves the step's records into `out`, the hard state last when it changed (the fold keeps the
   * two apart, so their order does not matter; it is only ever one record per step).
   */
  drain(term: number, votedFor: NodeId | null, out: unknown[]): void {
    if (term !== this.term || votedFor !== this.votedFor) {
      this.pending.push({ kind: 'hard', term, votedFor });
      this.term = term;
      this.votedFor = votedFor;
    }
    if (this.pending.length === 0) return;
    for (const r of this.pending) out.push(r);
    this.pending = [];
  }
}

function isRecord(x: unknown): x is RaftDurableRecord {
  return typeof x === 'object' && x !== null && typeof (x as { kind?: unknown }).kind === 'string';
}

/**
 * Folds one record into the state (which it owns and may change in place: storage keeps only the
 * fold, never hands it to anyone else while folding). Entries and raftSnapshots are never changed,
 * only replaced, so they may be shared with the records.
 */
export function foldRaftRecord(state: RaftPersistentState | undefined, r: RaftDurableRecord): RaftPersistentState {
  if (r.kind === 'checkpoint') return { ...r.state, log: [...r.state.log] };
  if (!state) invariantBroken(`a raft durable fold starts with a checkpoint, not ${r.kind}`);
  const base = state.raftSnapshot.lastIncludedIndex;
  switch (r.kind) {
    case 'hard':
      state.term = r.term;
      state.votedFor = r.votedFor;
      return state;
    case 'append':
      for (const e of r.entries) {
        const last = base + state.log.length;
        if (e.index !== last + 1) invariantBroken(`durable append at ${e.index} after ${last}`);
        state.log.push(e);
      }
      return state;
    case 'truncate':
      invariant(r.fromIndex > base, 'a durable truncation never reaches into the raftSnapshot');
      state.log.length = Math.min(state.log.length, r.fromIndex - base - 1);
      return state;
    case 'compact': {
      const n = r.lastIncludedIndex - base;
      const last = base + state.log.length;
      if (n < 0 || n > state.log.length)
        invariantBroken(`durable compaction to ${r.lastIncludedIndex} outside ${base}..${last}`);
      const folded = state.log.slice(0, n);
      invariant(n === 0 || folded[n - 1]?.term === r.lastIncludedTerm, 'durable compaction term matches the log');
      const store = { ...state.raftSnapshot.store };
      for (const e of folded) applyToStore(store, e);
      state.raftSnapshot = {
        lastIncludedIndex: r.lastIncludedIndex,
        lastIncludedTerm: r.lastIncludedTerm,
        voters: votersAfter(state.raftSnapshot.voters, folded),
        store,
      };
      state.log = state.log.slice(n);
      return state;
    }
  }
}

/** What storage folds raft's records with (core.ts DurableFold). */
export const raftDurableFold: DurableFold = {
  fold(state: unknown, record: unknown): unknown {
    invariant(isRecord(record), 'a raft durable record');
    return foldRaftRecord(isPersistentState(state) ? state : undefined, record);
  },
  isCheckpoint(record: unknown): boolean {
    return isRecord(record) && record.kind === 'checkpoint';
  },
};
