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
 * This file holds the node's state, the NodeCore inputs, the term gate and dispatch, the role
 * changes and the apply loop. What each role does with a message is in raft/ (etcd's stepLeader,
 * stepFollower, stepCandidate: leader.ts, follower.ts, candidate.ts; requests.ts for clients), as
 * free functions over raft/state.ts; the leaves (log, progress, quorum, ReadIndex, ...) are there.
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
 * - Log compaction every snapshotEveryEntries applied entries; a leader under snapshotCatchUpEntries
 *   > 0 (the default) keeps what followers still answering lack, within that many entries
 *   (raft/compaction.ts); 0 is the old policy. The raftSnapshot's store is built when read (raft/log.ts).
 */
import {
  type ClientReply,
  type ClientRequest,
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
import { raftAppendTimesEntriesMax, raftCatchUpUnansweredMessagesMax } from '../limits.js';
import type { Rng } from '../../util/rng.js';
import { invariant, unreachable } from '../../util/assert.js';
import { hasQuorum, inLease, onVoteRequest, onVoteResponse, requestVotes } from './raft/candidate.js';
import { compactionPoint } from './raft/compaction.js';
import { DurableJournal } from './raft/durable.js';
import { drainOutbox, newCoreOutbox, type CoreOutbox } from '../../util/out-list.js';
import { appendReject, followLeader, onAppend, onHeartbeat, onSnapshot } from './raft/follower.js';
import { checkInvariants, type CheckedVote } from './raft/invariants.js';
import {
  appendEntry,
  flush,
  maybeCommit,
  onAppendResponse,
  onHeartbeatResponse,
  onSnapshotResponse,
  quorumActive,
  resolveReads,
  sendAppend,
} from './raft/leader.js';
import { RaftLog } from './raft/log.js';
import { AppendTimes, newProgress, type Progress } from './raft/progress.js';
import { PendingProposals } from './raft/proposals.js';
import { ReadIndexQueue } from './raft/read-index.js';
import { notLeaderReply, replacedReply } from './raft/replies.js';
import { expireRequests, stepClient, stepControl } from './raft/requests.js';
import type { Raft } from './raft/state.js';
import { applyToStore, clientResultOf } from './raft/state-machine.js';
import { inspectView, logView, statusView, viewStateOf, type RaftInspection } from './raft/views.js';
import {
  isPersistentState,
  isRaftMessage,
  type HeartbeatResponse,
  type LogEntry,
  type RaftMessage,
  type RaftRole,
  type RaftPersistentState,
  type RaftSnapshot,
  type SnapshotResponse,
  type VoteResponse,
} from './raft/types.js';
import { invariantBroken } from './invariant-broken.js';

export type { LogEntry, RaftMessage, RaftPersistentState, RaftRole, RaftSnapshot } from './raft/types.js';
export { raftDurableFold, type RaftDurableRecord } from './raft/durable.js';
export { configKey } from './raft/state-machine.js';
export type { RaftInspection } from './raft/views.js';

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

/**
 * One raft node. Its state and the actions of raft/state.ts are public only so that the role
 * modules under raft/ can run over it (Go's package scope in etcd): anything else reads a node
 * through inspect(), status() and the views, and never writes to it.
 */
export class RaftCore implements NodeCore, Raft {
  readonly id: NodeId;
  readonly timings: CoreTimings;
  private readonly rng: Rng;
  private readonly hooks: RaftHooks;
  readonly clock = new HybridClock();
  private readonly out: CoreOutbox = newCoreOutbox();

  // Persistent state (Figure 2).
  term = 0;
  votedFor: NodeId | null = null;
  readonly log: RaftLog;
  /** What each step changed in the state above, drained before the step's messages (core.ts). */
  readonly journal: DurableJournal;

  // Volatile state.
  store: Record<string, Version>;
  /** Object.keys(store).length, kept as entries are applied (compaction asks for it often). */
  storeKeys: number;
  commitIndex: number;
  lastApplied: number;
  role: RaftRole = 'follower';
  /** A candidate still in its PreVote round: its term has not been incremented yet. */
  preCandidate = false;
  leaderId: NodeId | '' = '';
  voters: NodeId[] = [];
  /** Index of the config entry (or snapshot) the current membership comes from. */
  configIndex = 0;
  electionDeadline = Infinity;
  lastLeaderContactAt = -Infinity;
  readonly votes = new Set<NodeId>();
  /** The leader's last index as last heard (follower lag). */
  leaderLastIndex = 0;
  /** Proposals awaiting commit+apply. */
  readonly pending = new PendingProposals();
  private lastNow: number;

  // Leader state.
  readonly progress = new Map<NodeId, Progress>();
  heartbeatDeadline = Infinity;
  /** Index of the no-op this leader appended: nothing is served before it commits (§8). */
  termStartIndex = 0;
  leaderSince = 0;
  readSeq = 0;
  readonly pendingReads = new ReadIndexQueue();
  readonly appendedAt = new AppendTimes(raftAppendTimesEntriesMax);
  /** New entries not yet sent to followers: sent together at drain() (etcd's Ready batching). */
  flushNeeded = false;
  /** A ReadIndex round waits for a heartbeat to every follower. */
  readBroadcast = false;

  /** What checkInvariants() saw last, to check that terms and votes only move forward. */
  private readonly checked: CheckedVote;

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
    this.storeKeys = Object.keys(this.store).length;
    this.commitIndex = snap.lastIncludedIndex;
    this.lastApplied = snap.lastIncludedIndex;
    const last = this.log.entryAt(this.log.lastIndex);
    if (last) this.clock.observe(last.timestamp, opts.now);
    this.refreshConfig(opts.now);
    this.resetElectionTimer(opts.now);
    // A new node's first record is its whole (initial) state; a restarted one's is in storage.
    if (!p) this.journal.checkpoint(this.persistentState());
    this.checked = { term: this.term, votedFor: this.votedFor };
    this.checkInvariants();
  }

  // ---------------------------------------------------------------- NodeCore inputs

  onClient(req: ClientRequest, now: number): void {
    this.lastNow = now;
    stepClient(this, req, now);
    this.checkInvariants();
  }

  onMessage(from: NodeId, msg: unknown, now: number): void {
    this.lastNow = now;
    if (from !== this.id && isRaftMessage(msg) && this.stepTerm(from, msg, now) === 'step') {
      this.dispatch(from, msg, now);
    }
    this.checkInvariants();
  }

  /** The per-kind handlers (raft/): they see only what stepTerm let through, at our current term. */
  private dispatch(from: NodeId, m: RaftMessage, now: number): void {
    switch (m.kind) {
      case 'vote_req':
        onVoteRequest(this, from, m, now);
        return;
      case 'vote_resp':
        onVoteResponse(this, from, m, now);
        return;
      case 'append':
        onAppend(this, from, m, now);
        return;
      case 'append_resp':
        onAppendResponse(this, from, m, now);
        return;
      case 'heartbeat':
        onHeartbeat(this, from, m, now);
        return;
      case 'heartbeat_resp':
        onHeartbeatResponse(this, from, m, now);
        return;
      case 'snapshot':
        onSnapshot(this, from, m, now);
        return;
      case 'snapshot_resp':
        onSnapshotResponse(this, from, m, now);
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
        if (!quorumActive(this, now)) {
          this.becomeFollower(this.term, '', now);
        } else {
          for (const peer of this.progress.keys()) sendAppend(this, peer, now);
          this.heartbeatDeadline = now + this.timings.heartbeatMs;
        }
      }
    } else if (now >= this.electionDeadline) {
      this.campaign(now);
    }
    expireRequests(this, now);
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
    flush(this, this.lastNow);
    // Durable records first: the shell persists them before it posts anything of this step.
    this.journal.drain(this.term, this.votedFor, out.durable ?? (out.durable = []));
    // Handed over in place (util/out-list.ts), as the other cores do; raft's durable records come
    // from its journal above, so the outbox's own durable list stays empty.
    drainOutbox(this.out, out);
    this.checkInvariants();
  }

  control(cmd: ControlCommand, now: number): ControlResult {
    this.lastNow = now;
    const result = stepControl(this, cmd, now);
    this.checkInvariants();
    return result;
  }

  status(now: number): CoreStatus {
    return statusView(viewStateOf(this), now);
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
    return inspectView(viewStateOf(this));
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
    if (m.kind === 'vote_req' && m.term > this.term && inLease(this, now)) return 'drop';
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
        followLeader(this, from, m.term, m.leaderLastIndex, now);
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
        this.send(from, appendReject(this, m, 0, 0));
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

  becomeFollower(term: number, leader: NodeId | '', now: number): void {
    if (term < this.term) invariantBroken(`term must never decrease (${this.term} -> ${term})`);
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
      for (const r of this.pendingReads.takeAll()) this.reply(notLeaderReply(r.reqId, this.leaderId, this.id));
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
    requestVotes(this, this.term + 1, true);
    if (hasQuorum(this, this.votes)) this.becomeCandidate(now);
  }

  /** §5.2: increment the term, vote for self, request votes. */
  becomeCandidate(now: number): void {
    this.term += 1;
    this.votedFor = this.id;
    this.role = 'candidate';
    this.preCandidate = false;
    this.leaderId = '';
    this.votes.clear();
    this.votes.add(this.id);
    this.resetElectionTimer(now);
    requestVotes(this, this.term, false);
    if (hasQuorum(this, this.votes)) this.becomeLeader(now);
  }

  becomeLeader(now: number): void {
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
    const noop = appendEntry(this, { type: 'noop' }, now);
    this.termStartIndex = noop.index;
    this.heartbeatDeadline = now + this.timings.heartbeatMs;
    this.emit({ type: 'leader_elected', node_id: this.id, data: { term: this.term } });
    this.hooks.leaderElected?.(this.id, this.term, this);
    for (const peer of this.progress.keys()) sendAppend(this, peer, now);
    maybeCommit(this, now);
  }

  private campaign(now: number): void {
    // A node outside the configuration (removed, or added but not yet caught up) never campaigns.
    if (!this.voters.includes(this.id)) {
      this.resetElectionTimer(now);
      return;
    }
    this.becomePreCandidate(now);
  }

  // ---------------------------------------------------------------- state machine

  apply(now: number): void {
    invariant(this.commitIndex <= this.log.lastIndex, 'commit index never passes the last index');
    if (this.lastApplied >= this.commitIndex) return;
    while (this.lastApplied < this.commitIndex) {
      const i = this.lastApplied + 1;
      const entry = this.log.entryAt(i);
      if (!entry) invariantBroken(`committed entry ${i} missing (snapshot ${this.log.snapshotIndex})`);
      const result = clientResultOf(entry, this.applyCounted(entry), this.id);
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
        else this.reply(replacedReply(p.reqId, this.leaderId, this.id));
      }
    }
    this.emit({ type: 'entry_replicated', node_id: this.id, data: { index: this.lastApplied } });
    if (this.role === 'leader') {
      resolveReads(this);
      // A leader removed from the configuration steps down once the removal is committed (§4.2.2).
      if (!this.voters.includes(this.id) && this.commitIndex >= this.configIndex)
        this.becomeFollower(this.term, '', now);
    }
    this.maybeCompact(now);
  }

  /** applyToStore, keeping storeKeys equal to Object.keys(store).length (own keys only, as it counts). */
  private applyCounted(entry: LogEntry): Version[] {
    const store = this.store;
    if (entry.type === 'put' || entry.type === 'delete') {
      const had = Object.hasOwn(store, entry.key);
      const written = applyToStore(store, entry);
      if (!had && Object.hasOwn(store, entry.key)) this.storeKeys++;
      return written;
    }
    if (entry.type !== 'batch') return applyToStore(store, entry);
    const fresh = new Set<string>();
    for (const b of entry.entries) if (!Object.hasOwn(store, b.key)) fresh.add(b.key);
    const written = applyToStore(store, entry);
    for (const k of fresh) if (Object.hasOwn(store, k)) this.storeKeys++;
    return written;
  }

  /**
   * Log compaction (§7) every snapshotEveryEntries applied entries, up to where compaction.ts says:
   * all that is applied, or (a leader under snapshotCatchUpEntries > 0) no further than what the
   * followers still answering hold, within the bounded catch-up tail.
   */
  private maybeCompact(now: number): void {
    const cut = compactionPoint({
      lastApplied: this.lastApplied,
      snapshotIndex: this.log.snapshotIndex,
      every: this.timings.snapshotEveryEntries,
      catchUpEntries: this.timings.snapshotCatchUpEntries,
      followers: this.role === 'leader' ? this.progress.values() : undefined,
      now,
      answeringMs: this.timings.electionTimeoutMsMax,
      unansweredMax: raftCatchUpUnansweredMessagesMax,
    });
    if (cut === 0) return;
    const term = this.log.termAt(cut);
    invariant(term !== undefined, 'applied entries are in the log');
    // The raftSnapshot's store is built from the entries when it is read (raft/log.ts), not copied here.
    this.log.compact(cut, term, [...this.log.configAt(cut).voters]);
    // Now and then the whole state, so storage can forget what came before (durable.ts).
    if (this.journal.checkpointDue(() => this.storeKeys + this.log.length)) {
      this.journal.checkpoint(this.persistentState());
    }
  }

  // ---------------------------------------------------------------- invariants and helpers

  /** What holds between any two steps (raft/invariants.ts), after every input and drain. */
  private checkInvariants(): void {
    checkInvariants(this, this.checked);
  }

  refreshConfig(now: number): void {
    const c = this.log.latestConfig();
    this.voters = [...c.voters];
    this.configIndex = c.index;
    if (this.role !== 'leader') return;
    for (const v of this.voters) {
      if (v !== this.id && !this.progress.has(v)) this.progress.set(v, newProgress(this.log.lastIndex, now));
    }
    for (const peer of [...this.progress.keys()]) if (!this.voters.includes(peer)) this.progress.delete(peer);
  }

  resetElectionTimer(now: number): void {
    this.electionDeadline = now + this.rng.range(this.timings.electionTimeoutMsMin, this.timings.electionTimeoutMsMax);
  }

  snapshotInstalled(lastIncludedIndex: number): void {
    this.hooks.snapshotInstalled?.(this.id, lastIncludedIndex);
  }

  send(to: NodeId, msg: RaftMessage): void {
    this.out.messages.push({ to, msg });
  }

  reply(r: ClientReply): void {
    this.out.replies.push(r);
  }

  emit(e: CoreEvent): void {
    this.out.events.push(e);
  }
}

/** A factory whose cores report to `hooks` (simulation checkers). */
export function raftCoreFactory(hooks: RaftHooks = {}): CoreFactory {
  return (opts) => new RaftCore(opts, hooks);
}

export const createRaftCore: CoreFactory = (opts) => new RaftCore(opts);
