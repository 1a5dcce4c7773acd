/**
 * What the role modules (leader.ts, follower.ts, candidate.ts, requests.ts, invariants.ts) see of
 * one raft node: its state (Figure 2 plus this implementation's bookkeeping) and the few actions
 * that stay in raft.ts (role changes, the apply loop, output). The shape of etcd raft's `*raft`
 * handed to stepLeader/stepFollower/stepCandidate. Types only: RaftCore is the one implementation.
 */
import type { ClientReply, CoreEvent, CoreTimings, NodeId, Version } from '../../core.js';
import type { HybridClock } from '../../hlc.js';
import type { DurableJournal } from './durable.js';
import type { RaftLog } from './log.js';
import type { AppendTimes, Progress } from './progress.js';
import type { PendingProposals } from './proposals.js';
import type { ReadIndexQueue } from './read-index.js';
import type { RaftMessage, RaftPersistentState, RaftRole } from './types.js';

/** One node's state. Role modules read and change it; only raft.ts changes `role`. */
export interface RaftState {
  readonly id: NodeId;
  readonly timings: CoreTimings;
  readonly clock: HybridClock;

  // Persistent state (Figure 2).
  readonly term: number;
  votedFor: NodeId | null;
  readonly log: RaftLog;
  /** What each step changed in the state above, drained before the step's messages (core.ts). */
  readonly journal: DurableJournal;

  // Volatile state.
  store: Record<string, Version>;
  /** Object.keys(store).length: whoever replaces the store sets it. */
  storeKeys: number;
  commitIndex: number;
  lastApplied: number;
  readonly role: RaftRole;
  /** A candidate still in its PreVote round: its term has not been incremented yet. */
  readonly preCandidate: boolean;
  leaderId: NodeId | '';
  readonly voters: readonly NodeId[];
  /** Index of the config entry (or snapshot) the current membership comes from. */
  readonly configIndex: number;
  readonly electionDeadline: number;
  lastLeaderContactAt: number;
  /** Votes (or pre-votes) this candidate has been granted, its own included. */
  readonly votes: Set<NodeId>;
  /** The leader's last index as last heard (follower lag). */
  leaderLastIndex: number;
  /** Proposals awaiting commit+apply. */
  readonly pending: PendingProposals;

  // Leader state.
  readonly progress: Map<NodeId, Progress>;
  readonly heartbeatDeadline: number;
  /** Index of the no-op this leader appended: nothing is served before it commits (§8). */
  readonly termStartIndex: number;
  readonly leaderSince: number;
  /** Number of the latest ReadIndex round; every message to a follower carries it. */
  readSeq: number;
  readonly pendingReads: ReadIndexQueue;
  readonly appendedAt: AppendTimes;
  /** New entries not yet sent to followers: sent together at drain() (etcd's Ready batching). */
  flushNeeded: boolean;
  /** A ReadIndex round waits for a heartbeat to every follower. */
  readBroadcast: boolean;
}

/** What the role modules ask raft.ts to do: role changes, the apply loop and output. */
export interface RaftActions {
  becomeFollower(term: number, leader: NodeId | '', now: number): void;
  becomeCandidate(now: number): void;
  becomeLeader(now: number): void;
  /** Applies committed entries (commitIndex was raised) and answers their proposals. */
  apply(now: number): void;
  /** Takes the latest configuration of the log into effect (after it changed). */
  refreshConfig(now: number): void;
  /** Draws a new randomized election timeout from now (one RNG draw). */
  resetElectionTimer(now: number): void;
  persistentState(): RaftPersistentState;
  /** Tells the simulation observers (RaftHooks) a raftSnapshot from the leader was installed. */
  snapshotInstalled(lastIncludedIndex: number): void;
  send(to: NodeId, msg: RaftMessage): void;
  reply(r: ClientReply): void;
  emit(e: CoreEvent): void;
}

/** etcd's `r *raft`: what a role function is handed. */
export type Raft = RaftState & RaftActions;
