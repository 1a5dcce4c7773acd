/**
 * Raft as a pure state machine behind the NodeCore contract: client requests, peer messages and
 * ticks go in (with the time injected); messages, client replies and events come out through
 * drain(), and persistentState() says what must survive a restart. It follows the Raft paper and
 * Ongaro's dissertation: randomized elections with PreVote and CheckQuorum, AppendEntries with the
 * log-matching check and fast back-off, majority commit of current-term entries only, ReadIndex
 * reads, log compaction with InstallSnapshot, and single-server membership changes.
 * It never touches a socket, a thread, the wall clock or Math.random; the runtime does that.
 * Every peer message passes one term gate (stepTerm, etcd's `Step`) before its handler, and
 * checkInvariants() runs after every input (TigerBeetle's `invariants()`).
 *
 * Choices the contract leaves open:
 * - Writes, deletes and atomic batches are one log entry each and are answered after commit+apply.
 *   A commit timeout answers 409 'timeout' with indeterminate: true (the entry may still commit).
 *   A proposal whose index ends up holding another entry is a definite 409 'not_leader'.
 * - A new leader appends a `noop` entry (shown in the log view) before serving anything (§8).
 * - Reads use ReadIndex; a read of a missing or deleted key answers 404 'not_found'.
 * - add_server/remove_server: the immediate ControlResult is {ok: true, data: {index, term, voters}}
 *   when the config entry was appended; the final answer is a ClientReply with id = reqId whose
 *   result is {kind: 'entry', entry: Version{key: '__config__', value: 'n1,n2,n4', version: index}}.
 *   A change that is already made is answered the same way at once (removing a node the committed
 *   configuration lacks, adding one it has), and one already pending in the uncommitted config
 *   entry waits for that entry: repeating a request whose answer was lost is safe.
 *   The 'peers' control is refused (400): raft membership only changes through its log.
 * - A leader that applies a config entry emits `membership_changed` {voters, index, term}: the
 *   configuration is committed, so the shell can stop the removed nodes. Several leaders may report
 *   one entry (the index orders them).
 * - A node starts with the configuration `opts.peers`; one that is not in it never campaigns.
 */
import {
  emptyOutput,
  type ClientOp,
  type ClientReply,
  type ClientRequest,
  type ClientResult,
  type ControlCommand,
  type ControlResult,
  type CoreEvent,
  type CoreFactory,
  type CoreOptions,
  type CoreOutput,
  type CoreStatus,
  type CoreTimings,
  type NodeCore,
  type NodeId,
  type Version,
} from '../core.js';
import { HybridClock } from '../hlc.js';
import type { Rng } from '../../util/rng.js';
import { invariant, unreachable } from '../../util/assert.js';
import { DurableJournal } from './raft/durable.js';
import { RaftLog } from './raft/log.js';
import { planMembershipChange } from './raft/membership.js';
import { AppendTimes, backedOffNext, lowestMatch, newProgress, type Progress } from './raft/progress.js';
import { isMajority, majorityValue } from './raft/quorum.js';
import { ReadIndexQueue } from './raft/read-index.js';
import { indeterminateReply, notLeaderCode, notLeaderError, notLeaderReply, replacedReply } from './raft/replies.js';
import { PendingProposals, type PendingProposal } from './raft/proposals.js';
import { applyToStore, versionOf } from './raft/state-machine.js';
import { inspectView, logView, statusView, type RaftInspection, type RaftViewState } from './raft/views.js';
import {
  isPersistentState,
  isRaftMessage,
  type AppendRequest,
  type AppendResponse,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type LogEntry,
  type RaftMessage,
  type RaftRole,
  type RaftPersistentState,
  type RaftSnapshot,
  type SnapshotRequest,
  type SnapshotResponse,
  type VoteRequest,
  type VoteResponse,
} from './raft/types.js';

export type { LogEntry, RaftMessage, RaftPersistentState, RaftSnapshot } from './raft/types.js';
export { raftDurableFold, type RaftDurableRecord } from './raft/durable.js';

export type { RaftRole } from './raft/types.js';
export type { RaftInspection } from './raft/views.js';

/** The key of the synthetic Version a membership change answers with. */
export const configKey = '__config__';
/** Leader-side append times kept for lag_ms; the oldest fall off first. */
export const appendTimesMax = 4096;

/**
 * Observers for simulation checkers (state-machine safety, leader completeness). They see state,
 * never change it, and are not part of the NodeCore contract: the live runtime passes none.
 */
export interface RaftHooks {
  /**
   * Called for every entry applied to the state machine, in index order, with the node's current
   * term (an upper bound on the term in which the entry was committed).
   */
  applied?(nodeId: NodeId, entry: LogEntry, term: number): void;
  /** Called when a follower installs a raftSnapshot sent by its leader. */
  snapshotInstalled?(nodeId: NodeId, lastIncludedIndex: number): void;
  /** Called when a node becomes leader, after it appended its no-op entry. */
  leaderElected?(nodeId: NodeId, term: number, core: RaftCore): void;
}

type EntryBody =
  | { type: 'put'; key: string; value: string }
  | { type: 'delete'; key: string }
  | { type: 'batch'; entries: Array<{ key: string; value: string }> }
  | { type: 'config'; voters: NodeId[] }
  | { type: 'noop' };

export class RaftCore implements NodeCore {
  readonly id: NodeId;
  private readonly timings: CoreTimings;
  private readonly rng: Rng;
  private readonly hooks: RaftHooks;
  private readonly clock = new HybridClock();
  private readonly out: CoreOutput = emptyOutput();

  // Persistent state (Figure 2).
  private term = 0;
  private votedFor: NodeId | null = null;
  private readonly log: RaftLog;
  /** What each step changed in the state above, drained before the step's messages (core.ts). */
  private readonly journal: DurableJournal;

  // Volatile state.
  private store: Record<string, Version>;
  private commitIndex: number;
  private lastApplied: number;
  private role: RaftRole = 'follower';
  /** A candidate still in its PreVote round: its term has not been incremented yet. */
  private preCandidate = false;
  private leaderId: NodeId | '' = '';
  private voters: NodeId[] = [];
  /** Index of the config entry (or snapshot) the current membership comes from. */
  private configIndex = 0;
  private electionDeadline = Infinity;
  private lastLeaderContactAt = -Infinity;
  private readonly votes = new Set<NodeId>();
  /** The leader's last index as last heard (follower lag). */
  private leaderLastIndex = 0;
  /** Proposals awaiting commit+apply. */
  private readonly pending = new PendingProposals();
  private lastNow: number;

  // Leader state.
  private readonly progress = new Map<NodeId, Progress>();
  private heartbeatDeadline = Infinity;
  /** Index of the no-op this leader appended: nothing is served before it commits (§8). */
  private termStartIndex = 0;
  private leaderSince = 0;
  private readSeq = 0;
  private readonly pendingReads = new ReadIndexQueue();
  private readonly appendedAt = new AppendTimes(appendTimesMax);
  /** New entries not yet sent to followers: sent together at drain() (etcd's Ready batching). */
  private flushNeeded = false;
  /** A ReadIndex round waits for a heartbeat to every follower. */
  private readBroadcast = false;

  // Checker state: what checkInvariants() saw last, to check that terms and votes only move forward.
  private checkedTerm = 0;
  private checkedVotedFor: NodeId | null = null;

  constructor(opts: CoreOptions, hooks: RaftHooks = {}) {
    this.id = opts.id;
    this.timings = opts.timings;
    this.rng = opts.rng;
    this.hooks = hooks;
    this.lastNow = opts.now;
    const p: RaftPersistentState | undefined = isPersistentState(opts.persisted) ? opts.persisted : undefined;
    const snap: RaftSnapshot = p?.raftSnapshot ?? {
      lastIncludedIndex: 0,
      lastIncludedTerm: 0,
      voters: [...opts.peers],
      store: {},
    };
    this.term = p?.term ?? 0;
    this.votedFor = p?.votedFor ?? null;
    this.journal = new DurableJournal({ term: this.term, votedFor: this.votedFor });
    this.log = new RaftLog(snap, p ? [...p.log] : [], this.journal);
    this.store = { ...snap.store };
    this.commitIndex = snap.lastIncludedIndex;
    this.lastApplied = snap.lastIncludedIndex;
    const last = this.log.entryAt(this.log.lastIndex);
    if (last) this.clock.observe(last.timestamp, opts.now);
    this.refreshConfig(opts.now);
    this.resetElectionTimer(opts.now);
    // A new node's first record is its whole (initial) state; a restarted one's is in storage.
    if (!p) this.journal.checkpoint(this.persistentState());
    this.checkedTerm = this.term;
    this.checkedVotedFor = this.votedFor;
    this.checkInvariants();
  }

  // ---------------------------------------------------------------- NodeCore inputs

  onClient(req: ClientRequest, now: number): void {
    this.lastNow = now;
    this.stepClient(req, now);
    this.checkInvariants();
  }

  private stepClient(req: ClientRequest, now: number): void {
    const op: ClientOp = req.op;
    switch (op.op) {
      case 'write':
        this.propose(req.id, 'write', { type: 'put', key: op.key, value: op.value }, now);
        return;
      case 'delete':
        this.propose(req.id, 'write', { type: 'delete', key: op.key }, now);
        return;
      case 'batch':
        if (op.entries.length === 0) {
          this.reply({ id: req.id, ok: false, code: 'bad_request', error: 'a batch needs at least one entry' });
          return;
        }
        this.propose(req.id, 'write', { type: 'batch', entries: op.entries.map((e) => ({ key: e.key, value: e.value })) }, now);
        return;
      case 'read':
        this.startRead(req.id, op.key, now);
        return;
      default:
        unreachable(op);
    }
  }

  onMessage(from: NodeId, msg: unknown, now: number): void {
    this.lastNow = now;
    if (from !== this.id && isRaftMessage(msg) && this.stepTerm(from, msg, now) === 'step') {
      this.dispatch(from, msg, now);
    }
    this.checkInvariants();
  }

  /** The per-kind handlers: they see only what stepTerm let through, at our current term. */
  private dispatch(from: NodeId, m: RaftMessage, now: number): void {
    switch (m.kind) {
      case 'vote_req':
        this.onVoteRequest(from, m, now);
        return;
      case 'vote_resp':
        this.onVoteResponse(from, m, now);
        return;
      case 'append':
        this.onAppend(from, m, now);
        return;
      case 'append_resp':
        this.onAppendResponse(from, m, now);
        return;
      case 'heartbeat':
        this.onHeartbeat(from, m, now);
        return;
      case 'heartbeat_resp':
        this.onHeartbeatResponse(from, m, now);
        return;
      case 'snapshot':
        this.onSnapshot(from, m, now);
        return;
      case 'snapshot_resp':
        this.onSnapshotResponse(from, m, now);
        return;
      default:
        unreachable(m);
    }
  }

  onTick(now: number): void {
    this.lastNow = now;
    if (this.role === 'leader') {
      if (now >= this.heartbeatDeadline) {
        // CheckQuorum (dissertation §6.2): a leader that has not heard from a majority within an
        // election timeout steps down, so a partitioned or paused leader stops claiming leadership.
        if (!this.quorumActive(now)) {
          this.becomeFollower(this.term, '', now);
        } else {
          for (const peer of this.progress.keys()) this.sendAppend(peer, now);
          this.heartbeatDeadline = now + this.timings.heartbeatMs;
        }
      }
    } else if (now >= this.electionDeadline) {
      this.campaign(now);
    }
    this.expire(now);
    this.checkInvariants();
  }

  nextDeadline(): number {
    let d = this.role === 'leader' ? this.heartbeatDeadline : this.electionDeadline;
    const p = this.pending.nextDeadline();
    if (p < d) d = p;
    const r = this.pendingReads.nextDeadline();
    if (r < d) d = r;
    return d;
  }

  drain(out: CoreOutput): void {
    this.flush(this.lastNow);
    // Durable records first: the shell persists them before it posts anything of this step.
    this.journal.drain(this.term, this.votedFor, out.durable ?? (out.durable = []));
    if (this.out.messages.length) {
      for (const m of this.out.messages) out.messages.push(m);
      this.out.messages.length = 0;
    }
    if (this.out.replies.length) {
      for (const r of this.out.replies) out.replies.push(r);
      this.out.replies.length = 0;
    }
    if (this.out.events.length) {
      for (const e of this.out.events) out.events.push(e);
      this.out.events.length = 0;
    }
    this.checkInvariants();
  }

  control(cmd: ControlCommand, now: number): ControlResult {
    this.lastNow = now;
    const result = this.stepControl(cmd, now);
    this.checkInvariants();
    return result;
  }

  private stepControl(cmd: ControlCommand, now: number): ControlResult {
    switch (cmd.kind) {
      case 'clock_skew':
        this.clock.skewMs = cmd.ms;
        return { ok: true, data: { skew_ms: cmd.ms } };
      case 'add_server':
      case 'remove_server':
        return this.changeMembership(cmd, now);
      case 'replication_mode':
        return { ok: false, code: 'unsupported', error: 'replication_mode applies to single_leader clusters only' };
      case 'peers':
        return {
          ok: false,
          code: 'unsupported',
          error: 'raft changes membership through its log: use add_server / remove_server',
        };
      case 'set_leader':
        return { ok: false, code: 'unsupported', error: 'raft elects its own leader; set_leader is for single_leader clusters' };
      case 'custom':
        return { ok: false, code: 'unsupported', error: `unknown raft command: ${cmd.name}` };
      default:
        return unreachable(cmd);
    }
  }

  status(now: number): CoreStatus {
    return statusView(this.viewState(), now);
  }

  logView(): unknown[] {
    return logView(this.log);
  }

  storeView(): Record<string, Version> {
    return { ...this.store };
  }

  persistentState(): RaftPersistentState {
    return { term: this.term, votedFor: this.votedFor, log: [...this.log.all()], raftSnapshot: this.log.raftSnapshot };
  }

  inspect(): RaftInspection {
    return inspectView(this.viewState());
  }

  /** The state the views read (raft/views.ts), as it is now. */
  private viewState(): RaftViewState {
    return {
      id: this.id,
      role: this.role,
      preCandidate: this.preCandidate,
      term: this.term,
      votedFor: this.votedFor,
      leaderId: this.leaderId,
      commitIndex: this.commitIndex,
      lastApplied: this.lastApplied,
      voters: this.voters,
      configIndex: this.configIndex,
      leaderLastIndex: this.leaderLastIndex,
      hlcRemoteRefused: this.clock.remoteRefused,
      log: this.log,
      progress: this.progress,
      appendTime: (index) => this.appendTime(index),
    };
  }

  // ---------------------------------------------------------------- the term gate (etcd raft's Step)

  /**
   * Every term rule, applied once to each peer message before its handler runs (the shape of
   * etcd raft's `Step`). 'step' hands the message on; the handler then sees our current term in it
   * (a pre-vote carries the term it proposes instead). 'drop' means the gate has dealt with it.
   *
   * Pre-votes (dissertation §9.6) carry a term nobody holds yet, so they never change ours. A
   * vote request of a newer term is ignored while we heard from a leader within the minimum
   * election timeout (§4.2.3). A newer term makes us a follower (§5.1), of its sender when that is
   * the leader; a leader of our own term makes a candidate step down (§5.2). An older term's
   * message is answered with our term so that its stale sender learns it (§5.1), or ignored when
   * it is itself an answer.
   */
  private stepTerm(from: NodeId, m: RaftMessage, now: number): 'step' | 'drop' {
    // §4.2.3: within a leader's lease, vote requests of a newer term (pre-votes too) are ignored.
    if (m.kind === 'vote_req' && m.term > this.term && this.inLease(now)) return 'drop';
    if (m.kind === 'vote_req' && m.preVote) {
      // §9.6: only a proposed term ahead of ours can be granted (on the log, by the handler).
      if (m.term > this.term) return 'step';
      const resp: VoteResponse = { kind: 'vote_resp', term: this.term, preVote: true, granted: false };
      this.send(from, resp);
      return 'drop';
    }
    if (m.kind === 'vote_resp' && m.preVote) return this.stepPreVoteResponseTerm(m, now);
    if (m.term < this.term) {
      this.answerStale(from, m);
      return 'drop';
    }
    switch (m.kind) {
      case 'append':
      case 'heartbeat':
      case 'snapshot':
        // §5.1 (newer term) and §5.2 (a candidate of the same term): the sender leads this term.
        this.followLeader(from, m.term, m.leaderLastIndex, now);
        return 'step';
      case 'vote_req':
        // §5.1: adopt the newer term (and forget our vote) before deciding on the vote.
        if (m.term > this.term) this.becomeFollower(m.term, '', now);
        return 'step';
      case 'vote_resp':
      case 'append_resp':
      case 'heartbeat_resp':
      case 'snapshot_resp':
        // §5.1: an answer from a newer term ends our candidacy or leadership; nothing else in it counts.
        if (m.term > this.term) {
          this.becomeFollower(m.term, '', now);
          return 'drop';
        }
        return 'step';
      default:
        return unreachable(m);
    }
  }

  /**
   * A pre-vote answer (§9.6) matters only to a pre-candidate. A grant echoes the term it proposed
   * (ours + 1), so any other term is an answer to an earlier round; a refusal carries the voter's
   * term, and a newer one makes us its follower (§5.1).
   */
  private stepPreVoteResponseTerm(m: VoteResponse, now: number): 'step' | 'drop' {
    if (this.role !== 'candidate' || !this.preCandidate) return 'drop';
    if (m.granted) return m.term === this.term + 1 ? 'step' : 'drop';
    if (m.term > this.term) this.becomeFollower(m.term, '', now);
    return 'drop';
  }

  /** §5.1: a request of an older term is refused with our term; an older answer is ignored. */
  private answerStale(from: NodeId, m: RaftMessage): void {
    invariant(m.term < this.term, 'only older terms are stale');
    switch (m.kind) {
      case 'vote_req': {
        const resp: VoteResponse = { kind: 'vote_resp', term: this.term, preVote: false, granted: false };
        this.send(from, resp);
        return;
      }
      case 'append':
        // A stale leader learns the newer term from the answer and steps down.
        this.send(from, this.appendReject(m, 0, 0));
        return;
      case 'heartbeat':
        this.send(from, { kind: 'heartbeat_resp', term: this.term, seq: m.seq } satisfies HeartbeatResponse);
        return;
      case 'snapshot':
        this.send(from, {
          kind: 'snapshot_resp',
          term: this.term,
          matchIndex: 0,
          seq: m.seq,
        } satisfies SnapshotResponse);
        return;
      case 'vote_resp':
      case 'append_resp':
      case 'heartbeat_resp':
      case 'snapshot_resp':
        return;
      default:
        unreachable(m);
    }
  }

  // ---------------------------------------------------------------- role changes (one place, as in etcd raft)

  private becomeFollower(term: number, leader: NodeId | '', now: number): void {
    invariant(term >= this.term, () => `term must never decrease (${this.term} -> ${term})`);
    if (term > this.term) {
      this.term = term;
      this.votedFor = null;
    }
    const wasLeader = this.role === 'leader';
    this.role = 'follower';
    this.preCandidate = false;
    this.leaderId = leader;
    if (wasLeader) {
      this.progress.clear();
      this.heartbeatDeadline = Infinity;
      this.appendedAt.clear();
      this.flushNeeded = false;
      this.readBroadcast = false;
      // ReadIndex reads have no effect: fail them at once; proposals wait for commit or timeout.
      for (const r of this.pendingReads.takeAll()) this.reply(this.notLeaderReply(r.reqId));
    }
    this.resetElectionTimer(now);
  }

  /** PreVote round (dissertation §9.6): ask without disturbing anyone's term. */
  private becomePreCandidate(now: number): void {
    invariant(this.role !== 'leader', 'a leader does not campaign');
    this.role = 'candidate';
    this.preCandidate = true;
    this.leaderId = '';
    this.votes.clear();
    this.votes.add(this.id);
    this.resetElectionTimer(now);
    const req: VoteRequest = {
      kind: 'vote_req',
      term: this.term + 1,
      preVote: true,
      lastLogIndex: this.log.lastIndex,
      lastLogTerm: this.log.lastTerm,
    };
    for (const v of this.voters) if (v !== this.id) this.send(v, req);
    if (this.hasQuorum(this.votes)) this.becomeCandidate(now);
  }

  /** §5.2: increment the term, vote for self, request votes. */
  private becomeCandidate(now: number): void {
    this.term += 1;
    this.votedFor = this.id;
    this.role = 'candidate';
    this.preCandidate = false;
    this.leaderId = '';
    this.votes.clear();
    this.votes.add(this.id);
    this.resetElectionTimer(now);
    const req: VoteRequest = {
      kind: 'vote_req',
      term: this.term,
      preVote: false,
      lastLogIndex: this.log.lastIndex,
      lastLogTerm: this.log.lastTerm,
    };
    for (const v of this.voters) if (v !== this.id) this.send(v, req);
    if (this.hasQuorum(this.votes)) this.becomeLeader(now);
  }

  private becomeLeader(now: number): void {
    invariant(this.role === 'candidate', 'only a candidate becomes leader');
    invariant(!this.preCandidate, 'a pre-candidate wins a real election first');
    this.role = 'leader';
    this.leaderId = this.id;
    this.leaderSince = now;
    this.electionDeadline = Infinity;
    this.progress.clear();
    this.appendedAt.clear();
    for (const v of this.voters) if (v !== this.id) this.progress.set(v, newProgress(this.log.lastIndex, now));
    // §8: a no-op entry of the new term lets the leader commit earlier terms' entries (§5.4.2)
    // and gives ReadIndex a point after which every committed write is known.
    const noop = this.appendEntry({ type: 'noop' }, now);
    this.termStartIndex = noop.index;
    this.heartbeatDeadline = now + this.timings.heartbeatMs;
    this.emit({ type: 'leader_elected', node_id: this.id, data: { term: this.term } });
    this.hooks.leaderElected?.(this.id, this.term, this);
    for (const peer of this.progress.keys()) this.sendAppend(peer, now);
    this.maybeCommit(now);
  }

  private campaign(now: number): void {
    // A node outside the configuration (removed, or added but not yet caught up) never campaigns.
    if (!this.voters.includes(this.id)) {
      this.resetElectionTimer(now);
      return;
    }
    this.becomePreCandidate(now);
  }

  // ---------------------------------------------------------------- elections

  /**
   * Dissertation §4.2.3 / §9.6: a server that heard from a current leader within the minimum
   * election timeout ignores vote requests, so a rejoining or removed server cannot disrupt a
   * healthy cluster. A leader (kept honest by CheckQuorum) is always in its lease.
   */
  private inLease(now: number): boolean {
    if (this.role === 'leader') return true;
    return (
      this.role === 'follower' &&
      this.leaderId !== '' &&
      now - this.lastLeaderContactAt < this.timings.electionTimeoutMsMin
    );
  }

  /** §5.4.1: the candidate's log is at least as up-to-date as ours. */
  private logUpToDate(lastLogIndex: number, lastLogTerm: number): boolean {
    const myTerm = this.log.lastTerm;
    return lastLogTerm > myTerm || (lastLogTerm === myTerm && lastLogIndex >= this.log.lastIndex);
  }

  /** RequestVote receiver (§5.2, §5.4.1) and PreVote (§9.6); stepTerm has applied the term rules. */
  private onVoteRequest(from: NodeId, m: VoteRequest, now: number): void {
    if (m.preVote) {
      invariant(m.term > this.term, 'stepTerm passes only pre-votes for a term ahead of ours');
      // A pre-vote changes nothing here: granted when the candidate's log is up to date (§9.6).
      const granted = this.logUpToDate(m.lastLogIndex, m.lastLogTerm);
      const resp: VoteResponse = { kind: 'vote_resp', term: granted ? m.term : this.term, preVote: true, granted };
      this.send(from, resp);
      return;
    }
    invariant(m.term === this.term, 'stepTerm passes only vote requests of our term');
    // §5.2: one vote per term, first come first served (a repeated request gets the same answer).
    const canVote = this.votedFor === null || this.votedFor === from;
    const granted = canVote && this.logUpToDate(m.lastLogIndex, m.lastLogTerm);
    if (granted) {
      this.votedFor = from;
      this.resetElectionTimer(now);
    }
    const resp: VoteResponse = { kind: 'vote_resp', term: this.term, preVote: false, granted };
    this.send(from, resp);
  }

  private onVoteResponse(from: NodeId, m: VoteResponse, now: number): void {
    if (m.preVote) {
      invariant(m.granted, 'stepTerm passes only granted pre-votes');
      invariant(this.preCandidate, 'stepTerm passes pre-votes only to a pre-candidate');
      this.votes.add(from);
      if (this.hasQuorum(this.votes)) this.becomeCandidate(now);
      return;
    }
    invariant(m.term === this.term, 'stepTerm passes only vote answers of our term');
    if (this.role !== 'candidate' || this.preCandidate || !m.granted) return;
    this.votes.add(from);
    if (this.hasQuorum(this.votes)) this.becomeLeader(now);
  }

  // ---------------------------------------------------------------- replication, follower side

  /** A message from the leader of term `term` (≥ ours): follow it and restart the election timer. */
  private followLeader(from: NodeId, term: number, leaderLastIndex: number, now: number): void {
    invariant(term >= this.term, () => `stepTerm follows leaders of a term >= ours, not ${term} < ${this.term}`);
    if (term === this.term) {
      // Election safety (§5.2): at most one leader per term.
      invariant(this.role !== 'leader', () => `election safety: ${from} and ${this.id} both lead term ${term}`);
      const knownLeader = this.role === 'follower' ? this.leaderId : '';
      if (knownLeader !== '') {
        invariant(knownLeader === from, () => `election safety: ${from} and ${knownLeader} both lead term ${term}`);
      }
    }
    if (term > this.term || this.role !== 'follower') this.becomeFollower(term, from, now);
    else this.resetElectionTimer(now);
    this.leaderId = from;
    this.lastLeaderContactAt = now;
    this.leaderLastIndex = leaderLastIndex;
  }

  /** AppendEntries receiver (§5.3); stepTerm has made us the sender's follower. */
  private onAppend(from: NodeId, m: AppendRequest, now: number): void {
    invariant(m.term === this.term, 'stepTerm passes only appends of our term');
    let prevIndex = m.prevLogIndex;
    let prevTerm = m.prevLogTerm;
    let entries = m.entries;
    const snapIndex = this.log.snapshotIndex;
    if (prevIndex < snapIndex) {
      // Entries up to our raftSnapshot are committed, hence equal to the leader's (§5.4.3): skip them.
      const skip = Math.min(entries.length, snapIndex - prevIndex);
      const lastSkipped = entries[skip - 1];
      if (skip === entries.length) {
        this.send(from, this.appendAccept(m, m.prevLogIndex + m.entries.length));
        return;
      }
      invariant(lastSkipped, 'at least one entry was skipped');
      invariant(lastSkipped.index === snapIndex, 'entries are contiguous');
      invariant(lastSkipped.term === this.log.snapshotTerm, 'committed entry differs from the raftSnapshot');
      entries = entries.slice(skip);
      prevIndex = snapIndex;
      prevTerm = this.log.snapshotTerm;
    }
    // §5.3 consistency check, with the fast back-off hints.
    if (prevIndex > this.log.lastIndex) {
      this.send(from, this.appendReject(m, 0, this.log.lastIndex + 1));
      return;
    }
    const localPrevTerm = this.log.termAt(prevIndex);
    invariant(localPrevTerm !== undefined, 'prevIndex lies within the retained log');
    if (localPrevTerm !== prevTerm) {
      this.send(from, this.appendReject(m, localPrevTerm, this.log.firstIndexOfTerm(localPrevTerm, prevIndex)));
      return;
    }
    let configTouched = false;
    for (const e of entries) {
      const existing = this.log.termAt(e.index);
      if (existing === e.term) continue; // already have it (a duplicate or a stale resend)
      if (existing !== undefined) {
        // §5.3: a conflicting entry and all that follow it are deleted. Never a committed one.
        invariant(e.index > this.commitIndex, () => `would truncate committed index ${e.index} (commit ${this.commitIndex})`);
        // A proposal of ours among the dropped entries stays pending: another node may still hold
        // it and commit it as a later leader. Only the entry applied at its index decides.
        const dropped = this.log.truncateFrom(e.index);
        configTouched ||= dropped.some((d) => d.type === 'config');
      }
      this.log.append(e);
      this.clock.observe(e.timestamp, now);
      configTouched ||= e.type === 'config';
    }
    if (configTouched) this.refreshConfig(now);
    const matchIndex = prevIndex + entries.length;
    // §5.3 rule 5: commit up to min(leaderCommit, index of the last entry this request verified).
    const newCommit = Math.min(m.leaderCommit, matchIndex);
    if (newCommit > this.commitIndex) {
      this.commitIndex = newCommit;
      this.apply(now);
    }
    this.send(from, this.appendAccept(m, matchIndex));
  }

  private appendAccept(m: AppendRequest, matchIndex: number): AppendResponse {
    return {
      kind: 'append_resp',
      term: this.term,
      success: true,
      matchIndex,
      rejectIndex: 0,
      conflictTerm: 0,
      conflictIndex: 0,
      seq: m.seq,
    };
  }

  private appendReject(m: AppendRequest, conflictTerm: number, conflictIndex: number): AppendResponse {
    return {
      kind: 'append_resp',
      term: this.term,
      success: false,
      matchIndex: 0,
      rejectIndex: m.prevLogIndex,
      conflictTerm,
      conflictIndex,
      seq: m.seq,
    };
  }

  /** A heartbeat (an empty append without the log check); stepTerm has made us the sender's follower. */
  private onHeartbeat(from: NodeId, m: HeartbeatRequest, now: number): void {
    invariant(m.term === this.term, 'stepTerm passes only heartbeats of our term');
    const newCommit = Math.min(m.leaderCommit, this.log.lastIndex);
    if (newCommit > this.commitIndex) {
      this.commitIndex = newCommit;
      this.apply(now);
    }
    this.send(from, { kind: 'heartbeat_resp', term: this.term, seq: m.seq } satisfies HeartbeatResponse);
  }

  /** InstallSnapshot receiver (§7). */
  private onSnapshot(from: NodeId, m: SnapshotRequest, now: number): void {
    invariant(m.term === this.term, 'stepTerm passes only snapshots of our term');
    const snap = m.raftSnapshot;
    if (snap.lastIncludedIndex > this.commitIndex) {
      // Entries discarded past the snapshot may still commit elsewhere: their proposals stay pending.
      this.log.install(snap);
      this.journal.checkpoint(this.persistentState());
      this.store = { ...snap.store };
      this.commitIndex = snap.lastIncludedIndex;
      this.lastApplied = snap.lastIncludedIndex;
      for (const v of Object.values(snap.store)) this.clock.observe(v.timestamp, now);
      // Proposals the raftSnapshot swallowed: their fate is in the store, not in a log we can read.
      for (const p of this.pending.takeUpTo(snap.lastIncludedIndex)) {
        this.reply(this.indeterminateReply(p.reqId, 'this node was caught up by a raftSnapshot'));
      }
      this.refreshConfig(now);
      this.emit({ type: 'entry_replicated', node_id: this.id, data: { index: this.lastApplied, raft_snapshot: true } });
      this.hooks.snapshotInstalled?.(this.id, snap.lastIncludedIndex);
    }
    this.send(from, {
      kind: 'snapshot_resp',
      term: this.term,
      matchIndex: snap.lastIncludedIndex,
      seq: m.seq,
    } satisfies SnapshotResponse);
  }

  // ---------------------------------------------------------------- replication, leader side

  /**
   * Sends `peer` what it is missing from nextIndex on (at most maxEntriesPerMessage entries), or a
   * raftSnapshot when nextIndex has been compacted away. nextIndex advances optimistically past
   * what was sent; a rejection moves it back (§5.3).
   */
  private sendAppend(peer: NodeId, now: number): void {
    const pr = this.progress.get(peer);
    if (!pr) return;
    if (pr.next <= this.log.snapshotIndex) {
      if (now - pr.snapshotSentAt >= this.timings.retransmitMs) {
        pr.snapshotSentAt = now;
        this.send(peer, {
          kind: 'snapshot',
          term: this.term,
          raftSnapshot: this.log.raftSnapshot,
          leaderLastIndex: this.log.lastIndex,
          seq: this.readSeq,
        } satisfies SnapshotRequest);
      } else {
        this.send(peer, {
          kind: 'heartbeat',
          term: this.term,
          leaderCommit: Math.min(this.commitIndex, pr.match),
          leaderLastIndex: this.log.lastIndex,
          seq: this.readSeq,
        } satisfies HeartbeatRequest);
      }
      return;
    }
    const prevLogIndex = pr.next - 1;
    const prevLogTerm = this.log.termAt(prevLogIndex);
    invariant(prevLogTerm !== undefined, () => `no term at ${prevLogIndex} (snapshot ${this.log.snapshotIndex})`);
    const last = Math.min(this.log.lastIndex, pr.next + this.timings.maxEntriesPerMessage - 1);
    const entries = last >= pr.next ? this.log.slice(pr.next, last) : [];
    this.send(peer, {
      kind: 'append',
      term: this.term,
      prevLogIndex,
      prevLogTerm,
      entries,
      leaderCommit: this.commitIndex,
      leaderLastIndex: this.log.lastIndex,
      seq: this.readSeq,
    } satisfies AppendRequest);
    if (entries.length > 0) pr.next = last + 1;
  }

  /** Sends new entries (and ReadIndex heartbeats) gathered since the last drain. */
  private flush(now: number): void {
    if (this.role !== 'leader' || (!this.flushNeeded && !this.readBroadcast)) return;
    for (const [peer, pr] of this.progress) {
      const unsent = pr.next > this.log.snapshotIndex && pr.next <= this.log.lastIndex;
      if (this.readBroadcast || unsent) this.sendAppend(peer, now);
    }
    this.flushNeeded = false;
    this.readBroadcast = false;
  }

  /** A follower's answer of our term (stepTerm dropped the others): its progress, if we still lead. */
  private leaderResponse(from: NodeId, term: number, seq: number, now: number): Progress | undefined {
    invariant(term === this.term, 'stepTerm passes only answers of our term');
    if (this.role !== 'leader') return undefined;
    const pr = this.progress.get(from);
    if (!pr) return undefined;
    pr.lastAckAt = now;
    if (seq > pr.ackedSeq) pr.ackedSeq = seq;
    return pr;
  }

  private onAppendResponse(from: NodeId, m: AppendResponse, now: number): void {
    const pr = this.leaderResponse(from, m.term, m.seq, now);
    if (!pr) return;
    if (m.success) {
      if (m.matchIndex > pr.match) pr.match = m.matchIndex;
      if (pr.next <= pr.match) pr.next = pr.match + 1;
      this.maybeCommit(now);
    } else if (m.rejectIndex > pr.match) {
      // Fast back-off (§5.3): skip the follower's whole conflicting term in one step.
      pr.next = backedOffNext(pr, m, (term) => this.log.lastIndexOfTerm(term));
      this.sendAppend(from, now);
    }
    if (this.role === 'leader') {
      if (pr.next > this.log.snapshotIndex && pr.next <= this.log.lastIndex) this.sendAppend(from, now);
      this.resolveReads();
    }
  }

  private onHeartbeatResponse(from: NodeId, m: HeartbeatResponse, now: number): void {
    const pr = this.leaderResponse(from, m.term, m.seq, now);
    if (!pr) return;
    this.resolveReads();
  }

  private onSnapshotResponse(from: NodeId, m: SnapshotResponse, now: number): void {
    const pr = this.leaderResponse(from, m.term, m.seq, now);
    if (!pr) return;
    pr.snapshotSentAt = -Infinity;
    if (m.matchIndex > pr.match) pr.match = m.matchIndex;
    if (pr.next <= pr.match) pr.next = pr.match + 1;
    this.maybeCommit(now);
    if (this.role !== 'leader') return;
    if (pr.next <= this.log.lastIndex) this.sendAppend(from, now);
    this.resolveReads();
  }

  /**
   * §5.3/§5.4.2: the highest index stored on a majority of the voters becomes committed, but only
   * if it belongs to the current term; earlier terms' entries commit indirectly. A leader outside
   * the configuration does not count itself (dissertation §4.2.2).
   */
  private maybeCommit(now: number): void {
    if (this.role !== 'leader') return;
    const matchOf = (v: NodeId): number => (v === this.id ? this.log.lastIndex : (this.progress.get(v)?.match ?? 0));
    const n = majorityValue(this.voters, matchOf);
    if (n > this.commitIndex && this.log.termAt(n) === this.term) {
      this.commitIndex = n;
      this.pruneAppendTimes();
      this.apply(now);
    }
  }

  private quorumActive(now: number): boolean {
    return isMajority(this.voters, (v) => {
      if (v === this.id) return true;
      const pr = this.progress.get(v);
      return pr !== undefined && now - pr.lastAckAt <= this.timings.electionTimeoutMsMax;
    });
  }

  // ---------------------------------------------------------------- client requests

  private propose(reqId: number, kind: PendingProposal['kind'], body: EntryBody, now: number): void {
    if (this.role !== 'leader') {
      this.reply(this.notLeaderReply(reqId));
      return;
    }
    const entry = this.appendEntry(body, now);
    this.pending.add({
      reqId,
      index: entry.index,
      term: entry.term,
      deadline: now + this.timings.requestTimeoutMs,
      kind,
    });
    this.maybeCommit(now);
  }

  private appendEntry(body: EntryBody, now: number): LogEntry {
    const entry = {
      index: this.log.lastIndex + 1,
      term: this.term,
      node_id: this.id,
      timestamp: this.clock.tick(now),
      ...body,
    } as LogEntry;
    this.log.append(entry);
    this.appendedAt.set(entry.index, now);
    this.flushNeeded = true;
    return entry;
  }

  /**
   * ReadIndex (dissertation §6.4): note the commit index (at least this term's no-op), confirm
   * leadership with a heartbeat round acknowledged by a majority, then answer once applied.
   */
  private startRead(reqId: number, key: string, now: number): void {
    if (this.role !== 'leader') {
      this.reply(this.notLeaderReply(reqId));
      return;
    }
    this.readSeq += 1;
    this.pendingReads.add({
      reqId,
      key,
      readIndex: Math.max(this.commitIndex, this.termStartIndex),
      seq: this.readSeq,
      deadline: now + this.timings.requestTimeoutMs,
    });
    this.readBroadcast = true;
    this.resolveReads();
  }

  private resolveReads(): void {
    if (this.role !== 'leader' || this.pendingReads.length === 0) return;
    const ackedOf = (v: NodeId): number => (v === this.id ? this.readSeq : (this.progress.get(v)?.ackedSeq ?? 0));
    const confirmed = majorityValue(this.voters, ackedOf);
    for (const r of this.pendingReads.takeReady(confirmed, this.lastApplied)) {
      const v = this.store[r.key];
      if (!v || v.tombstone) {
        this.reply({ id: r.reqId, ok: false, code: 'not_found', error: `key not found: ${r.key}` });
      } else {
        this.reply({ id: r.reqId, ok: true, result: { kind: 'entry', entry: v, node_id: this.id } });
      }
    }
  }

  /** Single-server membership change (dissertation §4.1), one at a time, through the log. */
  private changeMembership(
    cmd: Extract<ControlCommand, { kind: 'add_server' | 'remove_server' }>,
    now: number,
  ): ControlResult {
    if (this.role !== 'leader') return { ok: false, code: notLeaderCode(this.leaderId, this.id), error: this.notLeaderError() };
    const pendingChange = this.configIndex > this.commitIndex;
    const plan = planMembershipChange(
      {
        voters: this.voters,
        votersBefore: pendingChange ? this.log.configAt(this.configIndex - 1).voters : this.voters,
        configIndex: this.configIndex,
        commitIndex: this.commitIndex,
        termStartIndex: this.termStartIndex,
      },
      cmd.kind === 'add_server' ? 'add' : 'remove',
      cmd.node_id,
    );
    if (plan.kind === 'refuse') return { ok: false, code: 'refused', error: plan.error };
    // Already made or being made: answered with (or waiting on) that configuration.
    if (plan.kind !== 'append') return this.changeAlreadyMade(cmd.reqId, now);
    const voters = plan.voters;
    const entry = this.appendEntry({ type: 'config', voters }, now);
    this.pending.add({
      reqId: cmd.reqId,
      index: entry.index,
      term: entry.term,
      deadline: now + this.timings.requestTimeoutMs,
      kind: 'control',
    });
    // The new configuration takes effect as soon as it is appended (§4.1).
    this.refreshConfig(now);
    this.maybeCommit(now);
    return { ok: true, data: { index: entry.index, term: entry.term, voters } };
  }

  /**
   * The latest configuration already has what was asked. Committed: answered now. Pending (its
   * entry not yet committed): the request waits on that entry like the one that appended it.
   */
  private changeAlreadyMade(reqId: number, now: number): ControlResult {
    const index = this.configIndex;
    const term = this.log.termAt(index) ?? this.term;
    const voters = [...this.voters];
    if (index > this.commitIndex) {
      this.pending.add({ reqId, index, term, deadline: now + this.timings.requestTimeoutMs, kind: 'control' });
      return { ok: true, data: { index, term, voters, pending: true } };
    }
    const entry = this.log.entryAt(index);
    const version: Version =
      entry?.type === 'config'
        ? versionOf(entry, configKey, voters.join(','), false)
        : {
            key: configKey,
            value: voters.join(','),
            tombstone: false,
            timestamp: 0,
            node_id: this.id,
            version: index,
            vclock: {},
          };
    this.reply({ id: reqId, ok: true, result: { kind: 'entry', entry: version, node_id: this.id } });
    return { ok: true, data: { index, term, voters, already: true } };
  }

  // ---------------------------------------------------------------- state machine

  private apply(now: number): void {
    invariant(this.commitIndex <= this.log.lastIndex, 'commit index never passes the last index');
    if (this.lastApplied >= this.commitIndex) return;
    while (this.lastApplied < this.commitIndex) {
      const i = this.lastApplied + 1;
      const entry = this.log.entryAt(i);
      invariant(entry, () => `committed entry ${i} missing (snapshot ${this.log.snapshotIndex})`);
      const result = this.applyEntry(entry);
      this.lastApplied = i;
      this.hooks.applied?.(this.id, entry, this.term);
      if (entry.type === 'config' && this.role === 'leader') {
        const data = { voters: [...entry.voters], index: i, term: entry.term };
        this.emit({ type: 'membership_changed', node_id: this.id, data });
      }
      // (index, term) names one entry, and entries never move: another entry applied at a
      // proposal's index means that proposal will never take effect (a definite failure).
      for (const p of this.pending.takeAt(i)) {
        if (p.term === entry.term && result) this.reply({ id: p.reqId, ok: true, result });
        else this.reply(this.replacedReply(p.reqId));
      }
    }
    this.emit({ type: 'entry_replicated', node_id: this.id, data: { index: this.lastApplied } });
    if (this.role === 'leader') {
      this.resolveReads();
      // A leader removed from the configuration steps down once the removal is committed (§4.2.2).
      if (!this.voters.includes(this.id) && this.commitIndex >= this.configIndex) this.becomeFollower(this.term, '', now);
    }
    this.maybeCompact();
  }

  private applyEntry(e: LogEntry): ClientResult | undefined {
    const written = applyToStore(this.store, e);
    switch (e.type) {
      case 'put':
      case 'delete':
        return { kind: 'entry', entry: written[0] as Version, node_id: this.id };
      case 'batch':
        return { kind: 'batch', entries: written };
      case 'config':
        // Already in effect since it was appended; the reply is a synthetic Version.
        return { kind: 'entry', entry: versionOf(e, configKey, e.voters.join(','), false), node_id: this.id };
      case 'noop':
        return undefined;
      default:
        return unreachable(e);
    }
  }

  /** Log compaction (§7) every snapshotEveryEntries applied entries. */
  private maybeCompact(): void {
    const every = this.timings.snapshotEveryEntries;
    if (every <= 0 || this.lastApplied - this.log.snapshotIndex < every) return;
    const term = this.log.termAt(this.lastApplied);
    invariant(term !== undefined, 'applied entries are in the log');
    this.log.compact({
      lastIncludedIndex: this.lastApplied,
      lastIncludedTerm: term,
      voters: [...this.log.configAt(this.lastApplied).voters],
      store: { ...this.store },
    });
    // Now and then the whole state, so storage can forget what came before (durable.ts).
    if (this.journal.checkpointDue(() => Object.keys(this.store).length + this.log.length)) {
      this.journal.checkpoint(this.persistentState());
    }
  }

  // ---------------------------------------------------------------- invariants

  /**
   * What holds between any two steps (TigerBeetle's `invariants()`), checked after every input and
   * drain: a failure is a bug in this core (here or in the peer that sent the step's message), never
   * a client's fault. Constant time but for one pass over the leader's progress.
   */
  private checkInvariants(): void {
    const log = this.log;
    // Figure 2: commitIndex never passes the log, lastApplied never passes commitIndex.
    invariant(this.commitIndex <= log.lastIndex, () => `commit ${this.commitIndex} past last index ${log.lastIndex}`);
    invariant(this.lastApplied <= this.commitIndex, () => `applied ${this.lastApplied} past commit`);
    // §7: a raftSnapshot holds applied entries only, and the retained log starts right after it.
    invariant(log.snapshotIndex <= this.lastApplied, () => `snapshot ${log.snapshotIndex} past applied`);
    invariant(log.firstIndex <= log.snapshotIndex + 1, 'the retained log starts right after the snapshot');
    const first = log.entryAt(log.firstIndex);
    if (first) {
      invariant(first.index === log.firstIndex, () => `first entry has index ${first.index}, not ${log.firstIndex}`);
      invariant(first.term >= log.snapshotTerm, 'log terms never decrease across the snapshot');
    }
    // §5.1: the term never decreases, and no entry is from a term beyond the node's own.
    invariant(this.term >= this.checkedTerm, () => `term decreased (${this.checkedTerm} -> ${this.term})`);
    invariant(log.lastTerm <= this.term, () => `last entry's term ${log.lastTerm} beyond current term ${this.term}`);
    // §5.2: at most one vote per term; once cast it stands until the term changes.
    if (this.term === this.checkedTerm && this.checkedVotedFor !== null) {
      invariant(this.votedFor === this.checkedVotedFor, () => `vote of term ${this.term} changed`);
    }
    this.checkedTerm = this.term;
    this.checkedVotedFor = this.votedFor;
    // The configuration in effect comes from an entry of the log (§4.1), possibly compacted since.
    invariant(this.configIndex <= log.lastIndex, 'the configuration comes from the log');
    if (this.preCandidate) invariant(this.role === 'candidate', 'a pre-candidate is a candidate');
    switch (this.role) {
      case 'leader':
        this.checkLeaderInvariants();
        return;
      case 'candidate':
        // §5.2: a candidate (past its PreVote round) voted for itself in its term.
        if (!this.preCandidate) invariant(this.votedFor === this.id, 'a candidate votes for itself');
        invariant(this.leaderId === '', 'a candidate knows no leader of its term');
        this.checkNotLeaderInvariants();
        return;
      case 'follower':
        invariant(this.leaderId !== this.id, 'a follower is not its own leader');
        this.checkNotLeaderInvariants();
        return;
      default:
        unreachable(this.role);
    }
  }

  private checkLeaderInvariants(): void {
    const lastIndex = this.log.lastIndex;
    // §5.2: a leader won an election of its term, in which it voted for itself.
    invariant(this.votedFor === this.id, () => `leader ${this.id} voted for ${this.votedFor} in term ${this.term}`);
    invariant(this.leaderId === this.id, 'a leader names itself as leader');
    invariant(this.electionDeadline === Infinity, 'a leader runs no election timer');
    invariant(this.heartbeatDeadline !== Infinity, 'a leader runs a heartbeat timer');
    // §8: the no-op of this term is in the log (nothing is served before it commits).
    invariant(this.termStartIndex > 0, 'a leader appended its no-op');
    invariant(this.termStartIndex <= lastIndex, 'the no-op is in the log');
    const noopTerm = this.log.termAt(this.termStartIndex);
    if (noopTerm !== undefined) invariant(noopTerm === this.term, 'the no-op is of the leader’s term');
    invariant(!this.progress.has(this.id), 'a leader tracks no progress for itself');
    for (const [peer, pr] of this.progress) {
      // Figure 2: matchIndex < nextIndex ≤ lastIndex + 1.
      invariant(pr.match <= lastIndex, () => `${peer}: match ${pr.match} past last index ${lastIndex}`);
      invariant(pr.next > pr.match, () => `${peer}: next ${pr.next} not past match ${pr.match}`);
      invariant(pr.next <= lastIndex + 1, () => `${peer}: next ${pr.next} past last index + 1 (${lastIndex + 1})`);
    }
  }

  private checkNotLeaderInvariants(): void {
    invariant(this.progress.size === 0, 'only a leader tracks follower progress');
    invariant(this.pendingReads.length === 0, 'only a leader holds ReadIndex reads');
    invariant(this.heartbeatDeadline === Infinity, 'only a leader runs a heartbeat timer');
    invariant(!this.flushNeeded, 'only a leader has entries to send');
  }

  // ---------------------------------------------------------------- helpers

  private refreshConfig(now: number): void {
    const c = this.log.latestConfig();
    this.voters = [...c.voters];
    this.configIndex = c.index;
    if (this.role !== 'leader') return;
    for (const v of this.voters) {
      if (v !== this.id && !this.progress.has(v)) this.progress.set(v, newProgress(this.log.lastIndex, now));
    }
    for (const peer of [...this.progress.keys()]) if (!this.voters.includes(peer)) this.progress.delete(peer);
  }

  private hasQuorum(votes: ReadonlySet<NodeId>): boolean {
    return isMajority(this.voters, (v) => votes.has(v));
  }

  private resetElectionTimer(now: number): void {
    this.electionDeadline = now + this.rng.range(this.timings.electionTimeoutMsMin, this.timings.electionTimeoutMsMax);
  }

  /** When `index` was appended by this leader (lag_ms); the oldest known time when pruned. */
  private appendTime(index: number): number {
    return this.appendedAt.timeOf(index, this.leaderSince);
  }

  private pruneAppendTimes(): void {
    this.appendedAt.pruneUpTo(lowestMatch(this.progress, this.commitIndex));
  }

  /** Timeouts: proposals become indeterminate (they may still commit), reads simply fail. */
  private expire(now: number): void {
    for (const p of this.pending.takeExpired(now)) {
      this.reply(this.indeterminateReply(p.reqId, `not committed within ${this.timings.requestTimeoutMs} ms`));
    }
    for (const r of this.pendingReads.takeExpired(now)) {
      this.reply({
        id: r.reqId,
        ok: false,
        code: 'timeout',
        error: `read not confirmed by a majority within ${this.timings.requestTimeoutMs} ms`,
      });
    }
  }

  private notLeaderError(): string {
    return notLeaderError(this.leaderId, this.id);
  }

  private notLeaderReply(id: number): ClientReply {
    return notLeaderReply(id, this.leaderId, this.id);
  }

  private replacedReply(id: number): ClientReply {
    return replacedReply(id, this.leaderId, this.id);
  }

  private indeterminateReply(id: number, why: string): ClientReply {
    return indeterminateReply(id, why);
  }

  private send(to: NodeId, msg: RaftMessage): void {
    this.out.messages.push({ to, msg });
  }

  private reply(r: ClientReply): void {
    this.out.replies.push(r);
  }

  private emit(e: CoreEvent): void {
    this.out.events.push(e);
  }
}

/** A factory whose cores report to `hooks` (simulation checkers). */
export function raftCoreFactory(hooks: RaftHooks = {}): CoreFactory {
  return (opts) => new RaftCore(opts, hooks);
}

export const createRaftCore: CoreFactory = (opts) => new RaftCore(opts);
