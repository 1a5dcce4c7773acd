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
 * entry, a leader change, a checkpoint of the whole store when a snapshot replaced it or when the
 * records since the last checkpoint outweigh the store); singleLeaderDurableFold rebuilds the state
 * a restarted node starts from. Stored bytes (store + retained log) are held to the node's budget:
 * a write past it is refused with storage_full (507), and the retained log is also held to a share
 * of the budget so overwrites cannot grow memory without bound.
 */
import { invariant } from '../../util/assert.js';
import { HybridClock } from '../hlc.js';
import { durableCheckpointMinBytes, retainedLogShareOfBudget, storedEntryOverheadBytes } from '../limits.js';
import type {
  ClientReply, ClientRequest, ControlCommand, ControlResult, CoreEvent, CoreOptions, CoreOutput, CoreStatus,
  CoreTimings, DurableFold, NodeCore, NodeId, ReplicationMode, Version,
} from '../core.js';

/** One log entry. `ops` holds one operation, or several for an atomic batch (applied all-or-nothing). */
export interface LogEntry {
  index: number;
  epoch: number;
  ts: number;
  ops: Array<{ key: string; value: string | null }>;
}

type Msg =
  /** Leader -> follower: entries after `prev`; `last` is the leader's last index, `commit` its commit index. */
  | { t: 'append'; epoch: number; leader: NodeId; prev: number; entries: LogEntry[]; last: number; commit: number }
  /** Leader -> follower too far behind the retained log (or on a diverged history): the whole store. */
  | { t: 'snapshot'; epoch: number; leader: NodeId; index: number; store: Version[]; last: number; commit: number; lastEntryEpoch?: number }
  /** Follower -> leader: `match` is the follower's last index; ok=false asks for entries after match (or a snapshot when match < 0). */
  | { t: 'ack'; epoch: number; match: number; ok: boolean };

interface Progress {
  match: number;
  next: number;
  /** When we last sent something that is still unacknowledged (retransmit timer). */
  sentAt: number;
  inflight: number;
  /** Time the oldest entry this follower has not acked was appended at the leader. */
  needSnapshot: boolean;
}

interface Waiter {
  reqId: number;
  index: number;
  deadline: number;
  mode: ReplicationMode;
  reply: ClientReply;
}

/**
 * The leader (and each follower) keeps the last 1,000-1,250 entries; a follower further behind
 * gets a snapshot. Kept short on purpose: an entry that outlives a few young-generation GC
 * cycles is copied into the old generation, and with 10,000 retained every entry of every node
 * was (the V8 GC helper threads' CPU during the write benchmark went from ~20% to ~13% of a core).
 */
const retainedLogMax = 1_000;
const compactChunk = 250;

// ---- durable records and their fold

/**
 * A durable record: an appended entry (its ops flattened as key, value pairs; value null for a
 * delete), a leader change, or a checkpoint of the whole store. Flat arrays: they are encoded on
 * every write, and msgpack packs an array of scalars about twice as fast as nested objects.
 */
type SlRecord =
  | ['e', number, number, number, ...Array<string | null>]
  | ['l', number, NodeId]
  /** A checkpoint: epoch, leader, last index, the store, and the epoch of the last entry. */
  | ['c', number, NodeId, number, Version[], number?];

function entryRecord(e: LogEntry): SlRecord {
  const r: SlRecord = ['e', e.index, e.epoch, e.ts];
  for (const o of e.ops) r.push(o.key, o.value);
  return r;
}

function entryOfRecord(r: Extract<SlRecord, ['e', ...unknown[]]>): LogEntry {
  const ops: LogEntry['ops'] = [];
  for (let i = 4; i + 1 < r.length; i += 2) ops.push({ key: r[i] as string, value: r[i + 1] as string | null });
  return { index: r[1], epoch: r[2], ts: r[3], ops };
}

/** What a restarted single-leader node starts from (CoreOptions.persisted). */
interface SlPersisted {
  epoch: number;
  leader: NodeId;
  /** Last index appended (and applied). */
  index: number;
  store: Map<string, Version>;
  /** Entries appended since the last checkpoint, oldest first (the core compacts them on start). */
  log: LogEntry[];
  /** The epoch of the last entry appended (failover ranks candidates by it first). */
  lastEntryEpoch: number;
}

/** Bytes a stored version is counted as (limits.ts storedEntryOverheadBytes). */
function versionBytes(v: Version): number {
  return v.key.length + v.value.length + storedEntryOverheadBytes;
}

function entryBytes(e: LogEntry): number {
  let b = storedEntryOverheadBytes;
  for (const o of e.ops) b += o.key.length + (o.value === null ? 0 : o.value.length);
  return b;
}

/** The version an entry's op leaves in the store: one rule for the core and for the fold. */
function versionOf(o: LogEntry['ops'][number], e: LogEntry, leader: NodeId): Version {
  return { key: o.key, value: o.value ?? '', tombstone: o.value === null, timestamp: e.ts, node_id: leader, version: e.index, vclock: { [leader]: e.index } };
}

function isSlRecord(r: unknown): r is SlRecord {
  return Array.isArray(r) && (r[0] === 'e' || r[0] === 'l' || r[0] === 'c');
}

function isPersisted(p: unknown): p is SlPersisted {
  return typeof p === 'object' && p !== null && (p as SlPersisted).store instanceof Map && Array.isArray((p as SlPersisted).log);
}

export const singleLeaderDurableFold: DurableFold = {
  fold(state, record) {
    if (!isSlRecord(record)) return state;
    const st: SlPersisted = isPersisted(state) ? state : { epoch: 0, leader: '', index: 0, store: new Map(), log: [], lastEntryEpoch: 0 };
    switch (record[0]) {
      case 'c':
        return { epoch: record[1], leader: record[2], index: record[3], store: new Map(record[4].map((v) => [v.key, v])), log: [], lastEntryEpoch: record[5] ?? record[1] };
      case 'l':
        st.epoch = record[1];
        st.leader = record[2];
        return st;
      case 'e': {
        const e = entryOfRecord(record);
        invariant(e.index === st.index + 1, () => `durable entries are contiguous (${e.index} after ${st.index})`);
        for (const o of e.ops) st.store.set(o.key, versionOf(o, e, st.leader));
        st.log.push(e);
        st.index = e.index;
        st.lastEntryEpoch = e.epoch;
        return st;
      }
    }
  },
  isCheckpoint: (record) => isSlRecord(record) && record[0] === 'c',
};
// One append in flight per follower: under load the next one carries everything appended meanwhile
// (fewer, larger messages through the fabric), while a lone write still goes out at once.
const inflightMax = 1;

export class SingleLeaderCore implements NodeCore {
  readonly id: NodeId;
  private peers: NodeId[];
  private readonly timings: CoreTimings;
  private mode: ReplicationMode;
  private readonly clock = new HybridClock();

  private leaderId: NodeId;
  private epoch = 0;
  /** The epoch of the last log entry (kept through snapshots and restarts): failover ranks by it first. */
  private lastEntryEpoch = 0;
  /** Retained log suffix; log[0] has index firstIndex. */
  private log: LogEntry[] = [];
  private firstIndex = 1;
  private lastIndex = 0;
  private commitIndex = 0;
  private lastApplied = 0;
  private readonly store = new Map<string, Version>();
  /** Append time of each retained entry at the leader, for lag in ms. */
  private readonly appendedAt: number[] = [];

  private readonly progress = new Map<NodeId, Progress>();
  private waiters: Waiter[] = [];
  private leaderLast = 0;

  /** Budget on storeBytes + logBytes (Infinity when none), and the retained log's share of it. */
  private readonly storedBytesMax: number;
  private readonly logBytesMax: number;
  private storeBytes = 0;
  private logBytes = 0;
  /** Bytes of durable records since the last checkpoint. */
  private durableSinceCheckpoint = 0;
  private refusedStorageFull = 0;

  private out: CoreOutput = { messages: [], replies: [], events: [], durable: [] };

  constructor(opts: CoreOptions) {
    this.id = opts.id;
    this.peers = [...opts.peers];
    this.timings = opts.timings;
    this.mode = opts.config.replication_mode;
    this.storedBytesMax = opts.storedBytesMax ?? Infinity;
    this.logBytesMax = this.storedBytesMax * retainedLogShareOfBudget;
    if (isPersisted(opts.persisted)) {
      this.leaderId = '';
      this.restore(opts.persisted, opts.now);
      return;
    }
    this.leaderId = opts.peers[0] ?? opts.id;
    if (this.isLeader()) this.becomeLeader(0, opts.now);
    else this.durable(['l', this.epoch, this.leaderId]);
  }

  /**
   * A restarted node: store, log and epoch from its durable records. It does not resume leading on
   * its own (the orchestrator may have failed over meanwhile): it waits for set_leader.
   */
  private restore(p: SlPersisted, now: number): void {
    this.epoch = p.epoch;
    this.leaderId = p.leader === this.id ? '' : p.leader;
    for (const v of p.store.values()) {
      this.store.set(v.key, v);
      this.storeBytes += versionBytes(v);
      this.clock.observe(v.timestamp, now);
    }
    this.log = p.log;
    for (const e of p.log) {
      this.appendedAt.push(now);
      this.logBytes += entryBytes(e);
    }
    this.firstIndex = p.log[0]?.index ?? p.index + 1;
    this.lastIndex = p.index;
    this.lastEntryEpoch = p.lastEntryEpoch;
    this.lastApplied = p.index;
    this.commitIndex = p.index;
    this.compact();
  }

  private durable(r: SlRecord, bytes = storedEntryOverheadBytes): void {
    (this.out.durable as unknown[]).push(r);
    this.durableSinceCheckpoint += bytes;
  }

  /** The whole store as one record, once the records since the last one outweigh it (limits.ts). */
  private maybeCheckpoint(): void {
    if (this.durableSinceCheckpoint <= Math.max(durableCheckpointMinBytes, this.storeBytes)) return;
    this.durable(['c', this.epoch, this.leaderId, this.lastApplied, [...this.store.values()], this.lastEntryEpoch]);
    this.durableSinceCheckpoint = 0;
  }

  private isLeader(): boolean {
    return this.leaderId === this.id;
  }

  private followers(): NodeId[] {
    return this.peers.filter((p) => p !== this.id);
  }

  /** Role changes happen here and in becomeFollower only. */
  private becomeLeader(epoch: number, now: number): void {
    this.leaderId = this.id;
    this.epoch = epoch;
    this.durable(['l', epoch, this.id]);
    this.progress.clear();
    for (const f of this.followers()) this.progress.set(f, { match: 0, next: this.lastIndex + 1, sentAt: now, inflight: 0, needSnapshot: false });
    this.commitIndex = this.lastIndex;
  }

  private becomeFollower(leader: NodeId, epoch: number): void {
    this.leaderId = leader;
    this.epoch = epoch;
    this.durable(['l', epoch, leader]);
    this.progress.clear();
    for (const w of this.waiters) {
      this.out.replies.push({ id: w.reqId, ok: false, code: 'not_leader', error: `leadership moved to ${leader} before the write was confirmed; its outcome is indeterminate`, indeterminate: true, leader_id: leader });
    }
    this.waiters = [];
  }

  // ---- client requests ----

  onClient(req: ClientRequest, now: number): void {
    const op = req.op;
    if (op.op === 'read') {
      const v = this.store.get(op.key);
      if (!v || v.tombstone) {
        this.out.replies.push({ id: req.id, ok: false, code: 'not_found', error: `key ${JSON.stringify(op.key)} not found on ${this.id}` });
      } else {
        this.out.replies.push({ id: req.id, ok: true, result: { kind: 'entry', entry: v, node_id: this.id } });
      }
      return;
    }
    if (!this.isLeader()) {
      this.out.replies.push({ id: req.id, ok: false, code: 'not_leader', error: `${this.id} is not the leader; the leader is ${this.leaderId}`, leader_id: this.leaderId });
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
    if (growth > 0 && this.storeBytes + this.logBytes + growth > this.storedBytesMax) {
      this.refusedStorageFull++;
      this.out.replies.push({
        id: req.id, ok: false, code: 'storage_full',
        error: `node ${this.id} would store ${this.storeBytes + this.logBytes + growth} bytes, past its budget of ${this.storedBytesMax} bytes (REPLSIM_NODE_MEMORY_MB); delete keys or raise the budget`,
      });
      return;
    }
    const entry = this.append(ops, now);
    const versions = ops.map((o) => this.store.get(o.key) as Version);
    const reply: ClientReply = op.op === 'batch'
      ? { id: req.id, ok: true, result: { kind: 'batch', entries: versions } }
      : { id: req.id, ok: true, result: { kind: 'entry', entry: versions[0] as Version, node_id: this.id } };
    if (this.mode === 'async' || this.followers().length === 0) {
      this.out.replies.push(reply);
    } else {
      this.waiters.push({ reqId: req.id, index: entry.index, deadline: now + this.timings.requestTimeoutMs, mode: this.mode, reply });
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
    const entry: LogEntry = { index: this.lastIndex + 1, epoch: this.epoch, ts: this.clock.tick(now), ops };
    this.appendEntry(entry, now);
    this.updateCommit();
    this.compact();
    return entry;
  }

  /** Leader and followers: an entry joins the log (a durable record) and is applied. */
  private appendEntry(e: LogEntry, now: number): void {
    this.log.push(e);
    this.appendedAt.push(now);
    const bytes = entryBytes(e);
    this.logBytes += bytes;
    this.lastIndex = e.index;
    this.lastEntryEpoch = e.epoch;
    this.durable(entryRecord(e), bytes);
    this.apply(e);
  }

  /** Followers and the leader apply entries strictly in index order. */
  private apply(entry: LogEntry): void {
    invariant(entry.index === this.lastApplied + 1, () => `${this.id}: apply ${entry.index} after ${this.lastApplied}`);
    for (const o of entry.ops) {
      const cur = this.store.get(o.key);
      if (cur !== undefined) this.storeBytes -= versionBytes(cur);
      const v = versionOf(o, entry, this.leaderId);
      this.store.set(o.key, v);
      this.storeBytes += versionBytes(v);
    }
    this.lastApplied = entry.index;
  }

  /**
   * Drops the oldest entries in chunks (not one by one: splice is O(n)): past retainedLogMax
   * entries, or past the log's share of the byte budget (down to three quarters of it, keeping
   * the newest entry).
   */
  private compact(): void {
    const overCount = this.log.length > retainedLogMax + compactChunk;
    const overBytes = this.logBytes > this.logBytesMax;
    if (!overCount && !overBytes) return;
    let drop = overCount ? this.log.length - retainedLogMax : 0;
    let bytes = this.logBytes;
    for (let i = 0; i < drop; i++) bytes -= entryBytes(this.log[i] as LogEntry);
    if (bytes > this.logBytesMax) {
      const target = this.logBytesMax * 0.75;
      while (drop < this.log.length - 1 && bytes > target) bytes -= entryBytes(this.log[drop++] as LogEntry);
    }
    if (drop === 0) return;
    this.log.splice(0, drop);
    this.appendedAt.splice(0, drop);
    this.firstIndex += drop;
    this.logBytes = bytes;
  }

  private entryAt(index: number): LogEntry | undefined {
    return this.log[index - this.firstIndex];
  }

  /** Leader commit index per mode: async = last appended; semi_sync = highest index on >= 1 follower; sync = on every follower. */
  private updateCommit(): void {
    if (!this.isLeader()) return;
    const matches = [...this.progress.values()].map((p) => p.match);
    let c: number;
    if (this.mode === 'async' || matches.length === 0) c = this.lastIndex;
    else if (this.mode === 'semi_sync') c = Math.max(...matches);
    else c = Math.min(...matches);
    if (c > this.commitIndex) this.commitIndex = c;
  }

  // ---- peer messages ----

  onMessage(from: NodeId, raw: unknown, now: number): void {
    const msg = raw as Msg;
    switch (msg.t) {
      case 'append':
        this.onAppend(msg, now);
        return;
      case 'snapshot':
        this.onSnapshot(msg);
        return;
      case 'ack':
        this.onAck(from, msg, now);
        return;
    }
  }

  private acceptLeader(leader: NodeId, epoch: number): boolean {
    if (epoch < this.epoch) return false;
    if (epoch > this.epoch || leader !== this.leaderId) this.becomeFollower(leader, epoch);
    return true;
  }

  private onAppend(m: Extract<Msg, { t: 'append' }>, now: number): void {
    void now;
    if (!this.acceptLeader(m.leader, m.epoch)) return;
    this.leaderLast = Math.max(this.leaderLast, m.last);
    if (m.prev > this.lastIndex) {
      // A gap (a dropped message): ask for everything after what we have.
      this.send(m.leader, { t: 'ack', epoch: this.epoch, match: this.lastIndex, ok: false });
      return;
    }
    const mine = this.entryAt(m.prev);
    if (m.prev >= this.firstIndex && m.prev > 0 && mine && mine.epoch > m.epoch) {
      this.send(m.leader, { t: 'ack', epoch: this.epoch, match: -1, ok: false });
      return;
    }
    let applied = 0;
    for (const e of m.entries) {
      if (e.index <= this.lastIndex) {
        const have = this.entryAt(e.index);
        if (have && have.epoch !== e.epoch) {
          // A diverged history after a failover: our later entries were orphaned. Rebuild from a snapshot.
          this.send(m.leader, { t: 'ack', epoch: this.epoch, match: -1, ok: false });
          return;
        }
        continue;
      }
      invariant(e.index === this.lastIndex + 1, 'append entries are contiguous');
      this.clock.observe(e.ts, now);
      this.appendEntry(e, now);
      applied++;
    }
    this.compact();
    if (this.lastIndex > m.last) {
      // We hold entries the leader never had (written under a leader that was failed over):
      // they are orphaned. Rebuild from the leader's store so this replica converges with it.
      this.send(m.leader, { t: 'ack', epoch: this.epoch, match: -1, ok: false });
      return;
    }
    this.commitIndex = Math.max(this.commitIndex, Math.min(m.commit, this.lastIndex));
    if (applied > 0) this.event({ type: 'entry_replicated', node_id: this.id, data: { index: this.lastIndex, entries: applied, leader: m.leader } });
    this.send(m.leader, { t: 'ack', epoch: this.epoch, match: this.lastIndex, ok: true });
  }

  private onSnapshot(m: Extract<Msg, { t: 'snapshot' }>): void {
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
    this.log = [];
    this.logBytes = 0;
    this.appendedAt.length = 0;
    this.firstIndex = m.index + 1;
    this.lastIndex = m.index;
    this.lastApplied = m.index;
    this.commitIndex = Math.min(m.commit, m.index);
    this.leaderLast = Math.max(this.leaderLast, m.last);
    this.event({ type: 'entry_replicated', node_id: this.id, data: { index: m.index, snapshot: true, leader: m.leader } });
    this.send(m.leader, { t: 'ack', epoch: this.epoch, match: this.lastIndex, ok: true });
  }

  private onAck(from: NodeId, m: Extract<Msg, { t: 'ack' }>, now: number): void {
    if (!this.isLeader() || m.epoch > this.epoch) return;
    const p = this.progress.get(from);
    if (!p) return;
    p.inflight = Math.max(0, p.inflight - 1);
    if (m.ok) {
      if (m.match > p.match) {
        p.match = Math.min(m.match, this.lastIndex);
        p.sentAt = now;
      }
      if (p.next <= p.match) p.next = p.match + 1;
    } else if (m.match < 0 || m.match < this.firstIndex - 1) {
      p.needSnapshot = true;
      p.inflight = 0;
    } else {
      p.match = Math.min(p.match, m.match);
      p.next = m.match + 1;
      p.inflight = 0;
    }
    this.updateCommit();
    this.settleWaiters(now);
  }

  private settleWaiters(now: number): void {
    if (this.waiters.length === 0) return;
    const matches = [...this.progress.values()].map((p) => p.match);
    const keep: Waiter[] = [];
    for (const w of this.waiters) {
      const acked = matches.filter((m) => m >= w.index).length;
      const needed = w.mode === 'sync' ? matches.length : Math.min(1, matches.length);
      if (acked >= needed) {
        this.out.replies.push(w.reply);
      } else if (now >= w.deadline) {
        const what = w.mode === 'sync' ? `all ${matches.length} followers` : 'any follower';
        this.out.replies.push({
          id: w.reqId, ok: false, code: 'timeout', indeterminate: true,
          error: `${w.mode} replication timed out after ${this.timings.requestTimeoutMs} ms: the write is applied on leader ${this.id} (index ${w.index}) but was not confirmed by ${what} (${acked}/${needed} acks); its outcome is indeterminate`,
        });
      } else keep.push(w);
    }
    this.waiters = keep;
  }

  // ---- time ----

  onTick(now: number): void {
    if (!this.isLeader()) return;
    for (const [f, p] of this.progress) {
      if (p.match < this.lastIndex && now - p.sentAt >= this.timings.retransmitMs) {
        // No progress for a while: resend from what the follower has confirmed (handles drops and pauses).
        p.next = p.match + 1;
        p.inflight = 0;
        p.sentAt = now;
        this.event({ type: 'follower_lag', node_id: f, data: { leader: this.id, lag_entries: this.lastIndex - p.match, lag_ms: this.lagMs(p, now) } });
      }
    }
    this.settleWaiters(now);
  }

  nextDeadline(): number {
    let d = Infinity;
    if (this.isLeader()) {
      for (const p of this.progress.values()) if (p.match < this.lastIndex) d = Math.min(d, p.sentAt + this.timings.retransmitMs);
      for (const w of this.waiters) d = Math.min(d, w.deadline);
    }
    return d;
  }

  // ---- output ----

  private send(to: NodeId, msg: Msg): void {
    this.out.messages.push({ to, msg });
  }

  private event(e: CoreEvent): void {
    this.out.events.push(e);
  }

  /** Replication messages are built here, once per drain: every entry appended since the last drain goes in one message per follower. */
  private replicate(now: number): void {
    if (!this.isLeader()) return;
    // Followers at the same point get the same message object (the actor encodes it once).
    let shared: { next: number; msg: Msg } | undefined;
    for (const [f, p] of this.progress) {
      if (p.needSnapshot) {
        p.needSnapshot = false;
        p.next = this.lastIndex + 1;
        p.inflight = 1;
        p.sentAt = now;
        this.send(f, { t: 'snapshot', epoch: this.epoch, leader: this.id, index: this.lastIndex, store: [...this.store.values()], last: this.lastIndex, commit: this.commitIndex, lastEntryEpoch: this.lastEntryEpoch });
        continue;
      }
      if (p.next > this.lastIndex || p.inflight >= inflightMax) continue;
      if (p.next < this.firstIndex) {
        p.needSnapshot = true;
        this.replicate(now);
        return;
      }
      let msg: Extract<Msg, { t: 'append' }>;
      if (shared !== undefined && shared.next === p.next) msg = shared.msg as Extract<Msg, { t: 'append' }>;
      else {
        const from = p.next - this.firstIndex;
        const entries = this.log.slice(from, from + this.timings.maxEntriesPerMessage);
        if (entries.length === 0) continue;
        msg = { t: 'append', epoch: this.epoch, leader: this.id, prev: p.next - 1, entries, last: this.lastIndex, commit: this.commitIndex };
        shared = { next: p.next, msg };
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
    if (this.out.messages.length) for (const m of this.out.messages) out.messages.push(m);
    if (this.out.replies.length) for (const r of this.out.replies) out.replies.push(r);
    if (this.out.events.length) for (const e of this.out.events) out.events.push(e);
    const durable = this.out.durable as unknown[];
    if (durable.length > 0) {
      if (out.durable === undefined) out.durable = [];
      for (const r of durable) out.durable.push(r);
      durable.length = 0;
    }
    this.out.messages.length = 0;
    this.out.replies.length = 0;
    this.out.events.length = 0;
  }

  private lastNow = 0;

  /** Records the latest time seen so drain() can stamp sends without reading a clock. */
  observeTime(now: number): void {
    this.lastNow = now;
  }

  // ---- control and views ----

  control(cmd: ControlCommand, now: number): ControlResult {
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
          for (const f of this.followers()) if (!this.progress.has(f)) this.progress.set(f, { match: 0, next: 1, sentAt: now, inflight: 0, needSnapshot: this.firstIndex > 1 });
          for (const f of [...this.progress.keys()]) if (!this.peers.includes(f)) this.progress.delete(f);
          this.updateCommit();
          this.settleWaiters(now);
        }
        return { ok: true };
      }
      case 'set_leader': {
        const epoch = cmd.epoch ?? this.epoch + 1;
        if (cmd.leader_id === this.id) this.becomeLeader(epoch, now);
        else this.becomeFollower(cmd.leader_id, epoch);
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
      lag: this.isLeader() ? 0 : Math.max(0, this.leaderLast - this.lastApplied),
      extra: {
        last_index: this.lastIndex, first_retained_index: this.firstIndex, epoch: this.epoch, mode: this.mode,
        last_entry_epoch: this.lastEntryEpoch,
        hlc_remote_refused: this.clock.remoteRefused,
        stored_bytes: this.storeBytes + this.logBytes,
        stored_bytes_max: Number.isFinite(this.storedBytesMax) ? this.storedBytesMax : null,
        refused_storage_full: this.refusedStorageFull,
      },
    };
    if (this.isLeader()) {
      const followers: NonNullable<CoreStatus['followers']> = {};
      for (const [f, p] of this.progress) followers[f] = { match_index: p.match, lag_entries: this.lastIndex - p.match, lag_ms: this.lagMs(p, now) };
      s.followers = followers;
    }
    return s;
  }

  private lagMs(p: Progress, now: number): number {
    if (p.match >= this.lastIndex) return 0;
    const at = this.appendedAt[p.match + 1 - this.firstIndex] ?? this.appendedAt[0];
    return at === undefined ? 0 : Math.max(0, now - at);
  }

  logView(): unknown[] {
    return this.log.slice(-1000).map((e) => ({
      index: e.index, epoch: e.epoch, timestamp: e.ts,
      type: e.ops.length > 1 ? 'batch' : e.ops[0]?.value === null ? 'delete' : 'put',
      ops: e.ops.map((o) => ({ key: o.key, ...(o.value === null ? { tombstone: true } : { value: o.value }) })),
      committed: e.index <= this.commitIndex,
    }));
  }

  storeView(): Record<string, Version> {
    return Object.fromEntries(this.store);
  }
}

/** The factory wraps the core so every input also records the time drain() stamps sends with. */
export function createSingleLeaderCore(opts: CoreOptions): NodeCore {
  const core = new SingleLeaderCore(opts);
  core.observeTime(opts.now);
  return {
    id: core.id,
    onClient: (req, now) => { core.observeTime(now); core.onClient(req, now); },
    onMessage: (from, msg, now) => { core.observeTime(now); core.onMessage(from, msg, now); },
    onTick: (now) => { core.observeTime(now); core.onTick(now); },
    nextDeadline: () => core.nextDeadline(),
    drain: (out) => core.drain(out),
    control: (cmd, now) => { core.observeTime(now); return core.control(cmd, now); },
    status: (now) => core.status(now),
    logView: () => core.logView(),
    storeView: () => core.storeView(),
  };
}
