/**
 * Single-leader replication as a pure state machine: one leader appends client writes to a log,
 * applies them, and ships the log to followers, which apply entries strictly in order and ack.
 * Durability modes decide when the client hears back: async (after the leader applied), semi_sync
 * (after one follower acked), sync (after every follower acked), each bounded by a timeout that
 * answers 409 with an indeterminate outcome. Leadership changes only by an explicit `set_leader`
 * (failover is the orchestrator's decision); there is no election here — that is raft's job.
 *
 * Durable state (what survives a crash): the log it appended and the store it applied, with the
 * epoch and leader it follows. Each change is a durable record drained with the step (an appended
 * entry, a leader change, a checkpoint of the whole store when a store copy replaced it or when the
 * records since the last checkpoint outweigh the store); singleLeaderDurableFold rebuilds the state
 * a restarted node starts from. Stored bytes (store + retained log) are held to the node's budget:
 * a write past it is refused with storage_full (507), and the retained log is also held to a share
 * of the budget so overwrites cannot grow memory without bound.
 *
 * Role changes (leader, epoch) happen in one section, each guarded by assertions, and
 * checkInvariants() runs after every input (raft.ts's shape). The wire is in single-leader/messages.ts,
 * the durable records and their fold in single-leader/durable.ts, the retained log and its compaction
 * in single-leader/retained-log.ts, what the leader knows of each follower in single-leader/progress.ts,
 * the writes waiting for follower acks in single-leader/waiters.ts, the object a runtime holds
 * (createSingleLeaderCore) in single-leader/node.ts, the limits in ../limits.ts.
 */
import { invariant } from '../../util/assert.js';
import { drainOutbox, newCoreOutbox, type CoreOutbox } from '../../util/out-list.js';
import { HybridClock } from '../hlc.js';
import {
  durableCheckpointMinBytes,
  retainedLogShareOfBudget,
  singleLeaderAppendsInFlightMax,
  storedEntryOverheadBytes,
} from '../limits.js';
import type {
  ClientReply,
  ClientRequest,
  ControlCommand,
  ControlResult,
  CoreEvent,
  CoreOptions,
  CoreOutput,
  CoreStatus,
  CoreTimings,
  NodeCore,
  NodeId,
  ReplicationMode,
  Version,
} from '../core.js';
import {
  entryRecord,
  isSingleLeaderPersisted,
  versionBytes,
  versionOf,
  type SingleLeaderPersisted,
  type SingleLeaderRecord,
} from './single-leader/durable.js';
import {
  isSingleLeaderMessage,
  type AckMessage,
  type AppendMessage,
  type LogEntry,
  type SingleLeaderMessage,
  type StoreCopyMessage,
} from './single-leader/messages.js';
import {
  applyAck,
  newProgress,
  nodeKeyedRecord,
  ProgressTable,
  retransmitIfStalled,
  type Progress,
} from './single-leader/progress.js';
import { SingleLeaderNode } from './single-leader/node.js';
import { RetainedLog } from './single-leader/retained-log.js';
import { settleWaiters, type Waiter } from './single-leader/waiters.js';
import { invariantBroken } from './invariant-broken.js';

export { singleLeaderDurableFold } from './single-leader/durable.js';
export type { LogEntry } from './single-leader/messages.js';

export class SingleLeaderCore implements NodeCore {
  readonly id: NodeId;
  private peers: NodeId[];
  private readonly timings: CoreTimings;
  private mode: ReplicationMode;
  private readonly clock = new HybridClock();

  private leaderId: NodeId;
  private epoch = 0;
  /** The epoch of the last log entry (kept through store copies and restarts): failover ranks by it first. */
  private lastEntryEpoch = 0;
  /** The retained log suffix (its lastIndex is this node's last index). */
  private readonly log: RetainedLog;
  private commitIndex = 0;
  /** Every entry is applied as it is appended: lastApplied === lastIndex after every step. */
  private lastApplied = 0;
  private readonly store = new Map<string, Version>();

  private readonly progress = new ProgressTable();
  private waiters: Waiter[] = [];
  private leaderLastIndex = 0;

  /** Budget on storeBytes + the retained log's bytes (Infinity when none); the log gets a share of it. */
  private readonly storedBytesMax: number;
  private storeBytes = 0;
  /** Bytes of durable records since the last checkpoint. */
  private durableSinceCheckpoint = 0;
  private refusedStorageFull = 0;

  private readonly out: CoreOutbox<SingleLeaderRecord> = newCoreOutbox();
  private lastNow = 0;
  /** Checker state: the epoch checkInvariants() saw last (an epoch only moves forward). */
  private checkedEpoch = 0;

  constructor(opts: CoreOptions) {
    this.id = opts.id;
    this.peers = [...opts.peers];
    this.timings = opts.timings;
    this.mode = opts.config.replication_mode;
    this.storedBytesMax = opts.storedBytesMax ?? Infinity;
    this.log = new RetainedLog(this.storedBytesMax * retainedLogShareOfBudget);
    if (isSingleLeaderPersisted(opts.persisted)) {
      this.leaderId = '';
      this.restore(opts.persisted, opts.now);
    } else {
      this.leaderId = opts.peers[0] ?? opts.id;
      if (this.isLeader()) this.becomeLeader(0, opts.now);
      else this.durable(['l', this.epoch, this.leaderId]);
    }
    this.checkedEpoch = this.epoch;
    this.checkInvariants();
  }

  /**
   * A restarted node: store, log and epoch from its durable records. It does not resume leading on
   * its own (the orchestrator may have failed over meanwhile): it waits for set_leader.
   */
  private restore(p: SingleLeaderPersisted, now: number): void {
    this.epoch = p.epoch;
    this.leaderId = p.leader === this.id ? '' : p.leader;
    for (const v of p.store.values()) {
      this.store.set(v.key, v);
      this.storeBytes += versionBytes(v);
      this.clock.observe(v.timestamp, now);
    }
    this.lastEntryEpoch = p.lastEntryEpoch;
    this.lastApplied = p.index;
    this.commitIndex = p.index;
    this.log.restore(p.log, p.index, now);
  }

  private durable(r: SingleLeaderRecord, bytes = storedEntryOverheadBytes): void {
    this.out.durable.push(r);
    this.durableSinceCheckpoint += bytes;
  }

  /** The whole store as one record, once the records since the last one outweigh it (limits.ts). */
  private maybeCheckpoint(): void {
    if (this.durableSinceCheckpoint <= Math.max(durableCheckpointMinBytes, this.storeBytes)) return;
    this.durable(['c', this.epoch, this.leaderId, this.lastApplied, [...this.store.values()], this.lastEntryEpoch]);
    this.durableSinceCheckpoint = 0;
  }

  /** This node's last log index (every entry up to it is applied). */
  private get lastIndex(): number {
    return this.log.lastIndex;
  }

  private isLeader(): boolean {
    return this.leaderId === this.id;
  }

  private followers(): NodeId[] {
    return this.peers.filter((p) => p !== this.id);
  }

  /** Some peer besides this node (followers() without building the list: checked on every write). */
  private hasFollowers(): boolean {
    for (const p of this.peers) if (p !== this.id) return true;
    return false;
  }

  // ---- role changes: the leader and the epoch change here only (besides restore on a restart)

  /**
   * The orchestrator's set_leader (a failover, or telling a restarted node who leads). Without an
   * epoch the node moves to the next one. The orchestrator's epochs only move forward.
   */
  private setLeader(leader: NodeId, epoch: number, now: number): void {
    if (epoch < this.epoch) invariantBroken(`${this.id}: set_leader to epoch ${epoch}, behind its epoch ${this.epoch}`);
    if (leader === this.id) this.becomeLeader(epoch, now);
    else this.becomeFollower(leader, epoch);
  }

  /**
   * A message from a leader: stale epochs are refused (false); a newer epoch, or another leader in
   * this epoch, makes this node its follower (the orchestrator moved leadership and this node has
   * not been told yet, or a message overtook the set_leader).
   */
  private acceptLeader(leader: NodeId, epoch: number): boolean {
    if (epoch < this.epoch) return false;
    if (epoch > this.epoch || leader !== this.leaderId) this.becomeFollower(leader, epoch);
    return true;
  }

  /** This node leads `epoch`: every follower starts unknown (match 0), everything it holds is committed. */
  private becomeLeader(epoch: number, now: number): void {
    if (epoch < this.epoch) invariantBroken(`${this.id}: epoch ${this.epoch} -> ${epoch} goes backwards`);
    this.leaderId = this.id;
    this.epoch = epoch;
    this.durable(['l', epoch, this.id]);
    this.progress.clear();
    for (const f of this.followers()) {
      this.progress.set(f, newProgress(this.lastIndex + 1, now, false));
    }
    this.commitIndex = this.lastIndex;
  }

  /**
   * This node follows `leader` in `epoch`. Writes it was still waiting on as a leader are answered
   * as indeterminate: they are applied here, but the new leader may or may not hold them.
   */
  private becomeFollower(leader: NodeId, epoch: number): void {
    if (epoch < this.epoch) invariantBroken(`${this.id}: epoch ${this.epoch} -> ${epoch} goes backwards`);
    if (leader === this.id) invariantBroken(`${this.id} cannot follow itself (it leads through becomeLeader)`);
    this.leaderId = leader;
    this.epoch = epoch;
    this.durable(['l', epoch, leader]);
    this.progress.clear();
    for (const w of this.waiters) {
      this.out.replies.push({
        id: w.requestId,
        ok: false,
        code: 'not_leader',
        indeterminate: true,
        leader_id: leader,
        error: `leadership moved to ${leader} before the write was confirmed; its outcome is indeterminate`,
      });
    }
    this.waiters = [];
  }

  /**
   * After every input (TigerBeetle's `invariants()`, raft.ts's checkInvariants): cheap checks of
   * what must hold between steps. A failure is a bug in this core.
   */
  private checkInvariants(): void {
    // Entries are applied as they are appended, and nothing is committed that is not in the log.
    if (this.lastApplied !== this.lastIndex)
      invariantBroken(`${this.id}: applied ${this.lastApplied}, last ${this.lastIndex}`);
    if (this.commitIndex > this.lastIndex)
      invariantBroken(`${this.id}: commit ${this.commitIndex} past last ${this.lastIndex}`);
    this.log.checkInvariants();
    // An epoch only moves forward, and no entry comes from an epoch past the node's own.
    if (this.epoch < this.checkedEpoch)
      invariantBroken(`${this.id}: epoch decreased (${this.checkedEpoch} -> ${this.epoch})`);
    if (this.lastEntryEpoch > this.epoch)
      invariantBroken(`${this.id}: last entry's epoch ${this.lastEntryEpoch} past ${this.epoch}`);
    this.checkedEpoch = this.epoch;
    if (this.isLeader()) {
      if (this.progress.has(this.id)) invariantBroken('a leader tracks followers, not itself');
      for (const p of this.progress.list) {
        if (p.match > this.lastIndex || p.inflight > singleLeaderAppendsInFlightMax) this.progressBroken(p);
      }
      for (const w of this.waiters) if (w.index > this.lastIndex) invariantBroken('a waiting write is in the log');
    } else {
      // Only a leader tracks followers and holds writes waiting for acks.
      if (this.progress.size !== 0) invariantBroken(`${this.id}: a follower tracks progress`);
      if (this.waiters.length !== 0) invariantBroken(`${this.id}: a follower holds waiting writes`);
    }
  }

  /** Names the follower whose progress broke an invariant (only ever called to fail). */
  private progressBroken(p: Progress): never {
    let f = '?';
    for (const [id, q] of this.progress) if (q === p) f = id;
    if (p.match > this.lastIndex) invariantBroken(`${this.id}: ${f} matches ${p.match}, past last ${this.lastIndex}`);
    return invariantBroken(`${this.id}: ${p.inflight} appends in flight to ${f}`);
  }

  // ---- client requests ----

  onClient(req: ClientRequest, now: number): void {
    this.stepClient(req, now);
    this.checkInvariants();
  }

  private stepClient(req: ClientRequest, now: number): void {
    const op = req.op;
    if (op.op === 'read') {
      const v = this.store.get(op.key);
      if (!v || v.tombstone) {
        this.out.replies.push({
          id: req.id,
          ok: false,
          code: 'not_found',
          error: `key ${JSON.stringify(op.key)} not found on ${this.id}`,
        });
      } else {
        this.out.replies.push({ id: req.id, ok: true, result: { kind: 'entry', entry: v, node_id: this.id } });
      }
      return;
    }
    if (!this.isLeader()) {
      this.out.replies.push({
        id: req.id,
        ok: false,
        code: 'not_leader',
        leader_id: this.leaderId,
        error: `${this.id} is not the leader; the leader is ${this.leaderId}`,
      });
      return;
    }
    let ops: LogEntry['ops'];
    switch (op.op) {
      case 'write':
        ops = [{ key: op.key, value: op.value }];
        break;
      case 'delete':
        ops = [{ key: op.key, value: null }];
        break;
      case 'batch':
        ops = op.entries.map((e) => ({ key: e.key, value: e.value }));
        break;
    }
    const growth = this.growthOf(ops);
    if (growth > 0 && this.storeBytes + this.log.bytes + growth > this.storedBytesMax) {
      this.refusedStorageFull++;
      this.out.replies.push({
        id: req.id,
        ok: false,
        code: 'storage_full',
        error:
          `node ${this.id} would store ${this.storeBytes + this.log.bytes + growth} bytes, past its budget of ` +
          `${this.storedBytesMax} bytes (REPLSIM_NODE_MEMORY_MB); delete keys or raise the budget`,
      });
      return;
    }
    const entry = this.append(ops, now);
    let reply: ClientReply;
    if (op.op === 'batch') {
      const versions: Version[] = [];
      for (const o of ops) versions.push(this.store.get(o.key) as Version);
      reply = { id: req.id, ok: true, result: { kind: 'batch', entries: versions } };
    } else {
      const v = this.store.get((ops[0] as LogEntry['ops'][number]).key) as Version;
      reply = { id: req.id, ok: true, result: { kind: 'entry', entry: v, node_id: this.id } };
    }
    if (this.mode === 'async' || !this.hasFollowers()) {
      this.out.replies.push(reply);
    } else {
      this.waiters.push({
        requestId: req.id,
        index: entry.index,
        deadline: now + this.timings.requestTimeoutMs,
        mode: this.mode,
        reply,
      });
    }
  }

  /** Bytes a new entry with `ops` adds: its log entry plus what each op changes in the store. */
  private growthOf(ops: LogEntry['ops']): number {
    let b = storedEntryOverheadBytes;
    for (const o of ops) {
      const len = o.value === null ? 0 : o.value.length;
      const cur = this.store.get(o.key);
      b += 2 * (o.key.length + len) + storedEntryOverheadBytes - (cur === undefined ? 0 : versionBytes(cur));
    }
    return b;
  }

  private append(ops: LogEntry['ops'], now: number): LogEntry {
    invariant(this.isLeader(), 'only the leader appends client writes');
    const entry: LogEntry = {
      index: this.lastIndex + 1,
      epoch: this.epoch,
      timestamp: this.clock.tick(now),
      node_id: this.id,
      ops,
    };
    this.appendEntry(entry, now);
    this.updateCommit();
    this.log.compact();
    return entry;
  }

  /** Leader and followers: an entry joins the log (a durable record) and is applied. */
  private appendEntry(e: LogEntry, now: number): void {
    const bytes = this.log.append(e, now);
    this.lastEntryEpoch = e.epoch;
    this.durable(entryRecord(e), bytes);
    this.apply(e);
  }

  /** Followers and the leader apply entries strictly in index order, stamped with their writer. */
  private apply(entry: LogEntry): void {
    if (entry.index !== this.lastApplied + 1)
      invariantBroken(`${this.id}: apply ${entry.index} after ${this.lastApplied}`);
    for (const o of entry.ops) {
      const cur = this.store.get(o.key);
      if (cur !== undefined) this.storeBytes -= versionBytes(cur);
      const v = versionOf(o, entry);
      this.store.set(o.key, v);
      this.storeBytes += versionBytes(v);
    }
    this.lastApplied = entry.index;
  }

  /**
   * Leader commit index per mode: async = last appended; semi_sync = highest index on >= 1 follower;
   * sync = on every follower.
   */
  private updateCommit(): void {
    if (!this.isLeader()) return;
    let c: number;
    if (this.mode === 'async' || this.progress.size === 0) c = this.lastIndex;
    else {
      // semi_sync: the highest match of any follower; sync: the lowest (every follower has it).
      const semi = this.mode === 'semi_sync';
      c = semi ? -Infinity : Infinity;
      for (const p of this.progress.list) c = semi ? Math.max(c, p.match) : Math.min(c, p.match);
    }
    if (c > this.commitIndex) this.commitIndex = c;
  }

  // ---- peer messages ----

  onMessage(from: NodeId, raw: unknown, now: number): void {
    if (!isSingleLeaderMessage(raw)) return;
    switch (raw.kind) {
      case 'append':
        this.onAppend(raw, now);
        break;
      case 'store_copy':
        this.onStoreCopy(raw);
        break;
      case 'ack':
        this.onAck(from, raw, now);
        break;
    }
    this.checkInvariants();
  }

  private onAppend(m: AppendMessage, now: number): void {
    if (!this.acceptLeader(m.leader, m.epoch)) return;
    this.leaderLastIndex = Math.max(this.leaderLastIndex, m.leaderLastIndex);
    if (m.prevIndex > this.lastIndex) {
      // A gap (a dropped message): ask for everything after what we have.
      this.send(m.leader, { kind: 'ack', epoch: this.epoch, matchIndex: this.lastIndex, success: false });
      return;
    }
    const mine = this.log.entryAt(m.prevIndex);
    if (m.prevIndex >= this.log.firstIndex && m.prevIndex > 0 && mine && mine.epoch > m.epoch) {
      this.send(m.leader, { kind: 'ack', epoch: this.epoch, matchIndex: -1, success: false });
      return;
    }
    let applied = 0;
    for (const e of m.entries) {
      if (e.index <= this.lastIndex) {
        const have = this.log.entryAt(e.index);
        if (have && have.epoch !== e.epoch) {
          // A diverged history after a failover: our later entries were orphaned. Rebuild from a store copy.
          this.send(m.leader, { kind: 'ack', epoch: this.epoch, matchIndex: -1, success: false });
          return;
        }
        continue;
      }
      invariant(e.index === this.lastIndex + 1, 'append entries are contiguous');
      this.clock.observe(e.timestamp, now);
      this.appendEntry(e, now);
      applied++;
    }
    this.log.compact();
    if (this.lastIndex > m.leaderLastIndex) {
      // We hold entries the leader never had (written under a leader that was failed over):
      // they are orphaned. Rebuild from the leader's store so this replica converges with it.
      this.send(m.leader, { kind: 'ack', epoch: this.epoch, matchIndex: -1, success: false });
      return;
    }
    this.commitIndex = Math.max(this.commitIndex, Math.min(m.leaderCommit, this.lastIndex));
    if (applied > 0)
      this.event({
        type: 'entry_replicated',
        node_id: this.id,
        data: { index: this.lastIndex, entries: applied, leader: m.leader },
      });
    this.send(m.leader, { kind: 'ack', epoch: this.epoch, matchIndex: this.lastIndex, success: true });
  }

  /** The leader's whole store replaces ours (and our log): a follower too far behind, or diverged. */
  private onStoreCopy(m: StoreCopyMessage): void {
    if (!this.acceptLeader(m.leader, m.epoch)) return;
    this.store.clear();
    this.storeBytes = 0;
    for (const v of m.store) {
      this.store.set(v.key, v);
      this.storeBytes += versionBytes(v);
    }
    this.lastEntryEpoch = m.lastEntryEpoch ?? m.epoch;
    this.durable(['c', this.epoch, this.leaderId, m.index, m.store, this.lastEntryEpoch]);
    this.durableSinceCheckpoint = 0;
    this.log.resetTo(m.index);
    this.lastApplied = m.index;
    this.commitIndex = Math.min(m.leaderCommit, m.index);
    this.leaderLastIndex = Math.max(this.leaderLastIndex, m.leaderLastIndex);
    // "snapshot: true" in the event is kept for its readers: here it means a store copy.
    this.event({
      type: 'entry_replicated',
      node_id: this.id,
      data: { index: m.index, snapshot: true, leader: m.leader },
    });
    this.send(m.leader, { kind: 'ack', epoch: this.epoch, matchIndex: this.lastIndex, success: true });
  }

  private onAck(from: NodeId, m: AckMessage, now: number): void {
    if (!this.isLeader() || m.epoch > this.epoch) return;
    const p = this.progress.get(from);
    if (!p) return;
    applyAck(p, m, this.lastIndex, this.log.firstIndex, now);
    this.updateCommit();
    this.settleWaiters(now);
  }

  private settleWaiters(now: number): void {
    if (this.waiters.length === 0) return;
    const matches: number[] = [];
    for (const p of this.progress.list) matches.push(p.match);
    const settled = settleWaiters(this.waiters, matches, now, this.id, this.timings.requestTimeoutMs);
    for (const r of settled.replies) this.out.replies.push(r);
    this.waiters = settled.keep;
  }

  // ---- time ----

  onTick(now: number): void {
    this.stepTick(now);
    this.checkInvariants();
  }

  private stepTick(now: number): void {
    if (!this.isLeader()) return;
    for (let i = 0; i < this.progress.ids.length; i++) {
      const f = this.progress.ids[i] as NodeId;
      const p = this.progress.list[i] as Progress;
      if (retransmitIfStalled(p, this.lastIndex, now, this.timings.retransmitMs)) {
        this.event({
          type: 'follower_lag',
          node_id: f,
          data: { leader: this.id, lag_entries: this.lastIndex - p.match, lag_ms: this.lagMs(p, now) },
        });
      }
    }
    this.settleWaiters(now);
  }

  nextDeadline(): number {
    let d = Infinity;
    if (this.isLeader()) {
      for (const p of this.progress.list)
        if (p.match < this.lastIndex) d = Math.min(d, p.sentAt + this.timings.retransmitMs);
      for (const w of this.waiters) d = Math.min(d, w.deadline);
    }
    return d;
  }

  // ---- output ----

  private send(to: NodeId, msg: SingleLeaderMessage): void {
    this.out.messages.push({ to, msg });
  }

  private event(e: CoreEvent): void {
    this.out.events.push(e);
  }

  /**
   * Replication messages are built here, once per drain: every entry appended since the last drain
   * goes in one message per follower.
   */
  private replicate(now: number): void {
    if (!this.isLeader()) return;
    // Followers at the same point get the same message object (the actor encodes it once).
    let sharedNext = -1;
    let shared: AppendMessage | undefined;
    for (let i = 0; i < this.progress.ids.length; i++) {
      const f = this.progress.ids[i] as NodeId;
      const p = this.progress.list[i] as Progress;
      if (p.needStoreCopy) {
        p.needStoreCopy = false;
        p.next = this.lastIndex + 1;
        p.inflight = 1;
        p.sentAt = now;
        this.send(f, {
          kind: 'store_copy',
          epoch: this.epoch,
          leader: this.id,
          index: this.lastIndex,
          store: [...this.store.values()],
          leaderLastIndex: this.lastIndex,
          leaderCommit: this.commitIndex,
          lastEntryEpoch: this.lastEntryEpoch,
        });
        continue;
      }
      if (p.next > this.lastIndex || p.inflight >= singleLeaderAppendsInFlightMax) continue;
      if (p.next < this.log.firstIndex) {
        p.needStoreCopy = true;
        this.replicate(now);
        return;
      }
      let msg: AppendMessage;
      if (shared !== undefined && sharedNext === p.next) msg = shared;
      else {
        const entries = this.log.slice(p.next, this.timings.maxEntriesPerMessage);
        if (entries.length === 0) continue;
        msg = {
          kind: 'append',
          epoch: this.epoch,
          leader: this.id,
          prevIndex: p.next - 1,
          entries,
          leaderLastIndex: this.lastIndex,
          leaderCommit: this.commitIndex,
        };
        shared = msg;
        sharedNext = p.next;
      }
      if (p.inflight === 0) p.sentAt = now;
      this.send(f, msg);
      p.next += msg.entries.length;
      p.inflight++;
      if (p.next <= this.lastIndex) this.replicate(now);
    }
  }

  drain(out: CoreOutput): void {
    this.replicate(this.lastNow);
    this.maybeCheckpoint();
    // Handed over in place (util/out-list.ts): the lists keep their storage for the next step.
    drainOutbox(this.out, out);
    this.checkInvariants();
  }

  /** Records the latest time seen so drain() can stamp sends without reading a clock. */
  observeTime(now: number): void {
    this.lastNow = now;
  }

  // ---- control and views ----

  control(cmd: ControlCommand, now: number): ControlResult {
    const result = this.stepControl(cmd, now);
    this.checkInvariants();
    return result;
  }

  private stepControl(cmd: ControlCommand, now: number): ControlResult {
    switch (cmd.kind) {
      case 'clock_skew':
        this.clock.skewMs = cmd.ms;
        return { ok: true };
      case 'replication_mode':
        this.mode = cmd.mode;
        this.updateCommit();
        if (cmd.mode === 'async') {
          for (const w of this.waiters) this.out.replies.push(w.reply);
          this.waiters = [];
        }
        return { ok: true };
      case 'peers': {
        this.peers = [...cmd.peers];
        if (this.isLeader()) {
          for (const f of this.followers()) {
            if (!this.progress.has(f)) this.progress.set(f, newProgress(1, now, this.log.firstIndex > 1));
          }
          for (const f of [...this.progress.keys()]) if (!this.peers.includes(f)) this.progress.delete(f);
          this.updateCommit();
          this.settleWaiters(now);
        }
        return { ok: true };
      }
      case 'set_leader': {
        const epoch = cmd.epoch ?? this.epoch + 1;
        this.setLeader(cmd.leader_id, epoch, now);
        return { ok: true, data: { epoch, last_index: this.lastIndex } };
      }
      case 'add_server':
      case 'remove_server':
      case 'custom':
        return { ok: false, code: 'unsupported', error: `${cmd.kind} is not supported by single_leader` };
    }
  }

  status(now: number): CoreStatus {
    const s: CoreStatus = {
      role: this.isLeader() ? 'leader' : 'follower',
      commit_index: this.commitIndex,
      last_applied: this.lastApplied,
      leader_id: this.leaderId,
      term: this.epoch,
      lag: this.isLeader() ? 0 : Math.max(0, this.leaderLastIndex - this.lastApplied),
      extra: {
        last_index: this.lastIndex,
        first_retained_index: this.log.firstIndex,
        epoch: this.epoch,
        mode: this.mode,
        last_entry_epoch: this.lastEntryEpoch,
        hlc_remote_refused: this.clock.remoteRefused,
        stored_bytes: this.storeBytes + this.log.bytes,
        stored_bytes_max: Number.isFinite(this.storedBytesMax) ? this.storedBytesMax : null,
        refused_storage_full: this.refusedStorageFull,
      },
    };
    if (this.isLeader()) {
      const followers: NonNullable<CoreStatus['followers']> = nodeKeyedRecord();
      for (const [f, p] of this.progress)
        followers[f] = { match_index: p.match, lag_entries: this.lastIndex - p.match, lag_ms: this.lagMs(p, now) };
      s.followers = followers;
    }
    return s;
  }

  private lagMs(p: Progress, now: number): number {
    if (p.match >= this.lastIndex) return 0;
    const at = this.log.appendedAtOrOldest(p.match + 1);
    return at === undefined ? 0 : Math.max(0, now - at);
  }

  logView(): unknown[] {
    return this.log.newest().map((e) => ({
      index: e.index,
      epoch: e.epoch,
      timestamp: e.timestamp,
      type: e.ops.length > 1 ? 'batch' : e.ops[0]?.value === null ? 'delete' : 'put',
      ops: e.ops.map((o) => (o.value === null ? { key: o.key, tombstone: true } : { key: o.key, value: o.value })),
      committed: e.index <= this.commitIndex,
    }));
  }

  /** Object.fromEntries(this.store), without the iterator protocol (the swarm reads it after every seed). */
  storeView(): Record<string, Version> {
    const view: Record<string, Version> = {};
    for (const [k, v] of this.store) {
      // An assignment to "__proto__" would set the prototype; fromEntries defines an own property.
      if (k === '__proto__')
        Object.defineProperty(view, k, { value: v, writable: true, enumerable: true, configurable: true });
      else view[k] = v;
    }
    return view;
  }

  /** The epoch (status().term) without building the status: the swarm reads it on every acknowledged write. */
  get term(): number {
    return this.epoch;
  }
}

/** The core wrapped so every input also records the time drain() stamps sends with (single-leader/node.ts). */
export function createSingleLeaderCore(opts: CoreOptions): NodeCore & { readonly term: number } {
  const core = new SingleLeaderCore(opts);
  core.observeTime(opts.now);
  return new SingleLeaderNode(core);
}
