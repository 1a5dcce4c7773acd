/**
 * The coordinator side of a leaderless node: the requests it coordinates (writes, deletes, batches
 * and reads), from the first put or get to the client's answer, read repair and the sloppy-quorum
 * probe. It owns the map of requests in flight; it stores nothing and knows no transport: it reads
 * and applies through its CoordinatorHost (the core), and the decisions are the leaves' (placement,
 * write-op, read-op). A finished request leaves the map at once (the core checks it every step).
 */
import type { ClientReply, ClusterConfig, CoreTimings, NodeId, Version } from '../../core.js';
import type { HybridClock } from '../../hlc.js';
import { clockSum, incrementClock } from '../../dynamo/vclock.js';
import { lwwNewer, observeStrict } from '../../dynamo/version.js';
import { invariant } from '../../../util/assert.js';
import { emptyKeepingStorage } from '../../../util/out-list.js';
import type { AuditCause } from './audit.js';
import type { LeaderlessMessage } from './messages.js';
import type { Op, OpBase } from './op.js';
import {
  assignHolders,
  plan,
  quorumMet,
  quorumStillPossible,
  recruit,
  slotOf,
  type Group,
  type PlacementCache,
  type Slot,
} from './placement.js';
import {
  digestMismatches,
  newestOf,
  newReadOp,
  readReply,
  readSettled,
  readTimedOut,
  silentDataFetches,
  staleResponders,
  unresolvedDigests,
  type ReadOp,
} from './read-op.js';
import {
  foldBatchResult,
  writeRefused,
  writeSettled,
  writeSucceeded,
  writeTimedOut,
  type BatchOp,
  type WriteOp,
} from './write-op.js';
import { invariantBroken } from '../invariant-broken.js';

/** Why a version was applied to the store (its audit record's kind). */
export type ApplyCause = Extract<AuditCause, 'write' | 'apply' | 'repair' | 'handoff' | 'transfer' | 'anti_entropy'>;

/** The counters a coordinator bumps (a part of the core's status). */
export interface CoordinatorStats {
  writes: number;
  reads: number;
  quorum_achieved: number;
  quorum_failed: number;
  read_quorum_failed: number;
  read_repairs: number;
}

/** What the coordinator needs from its node: identity, time, placement, the local store, output. */
export interface CoordinatorHost {
  readonly id: NodeId;
  readonly now: number;
  readonly config: ClusterConfig;
  readonly timings: CoreTimings;
  readonly clock: HybridClock;
  readonly members: readonly NodeId[];
  readonly placementCache: PlacementCache;
  readonly store: ReadonlyMap<string, Version>;
  readonly storedBytesMax: number;
  readonly stats: CoordinatorStats;
  regionOf(node: NodeId): number;
  readonly suspected: (node: NodeId) => boolean;
  localVersion(key: string): Version | null;
  applyVersion(v: Version, cause: ApplyCause, from: NodeId): boolean;
  deliver(to: NodeId, msg: LeaderlessMessage): void;
  reply(r: ClientReply): void;
  emit(type: string, data: Record<string, unknown>): void;
}

export class Coordinator {
  /** Requests in flight, by round-trip id; a finished one is removed at once. */
  readonly ops = new Map<number, Op>();
  private readonly batches = new Map<number, BatchOp>();
  private lastRoundTripId = 0;
  /** Requests this step created or changed: the ones checkInvariants looks at (cheap per step). */
  private readonly touched: Op[] = [];

  constructor(
    private readonly host: CoordinatorHost,
    private readonly probeMs: number,
  ) {}

  /** A batch's writes report to it; its reply goes out once every entry ended. */
  startBatch(requestId: number, entries: number): void {
    this.batches.set(requestId, {
      requestId,
      results: new Array<ClientReply | null>(entries).fill(null),
      remaining: entries,
    });
  }

  /** The earliest deadline or probe of a request in flight (Infinity when none). */
  nextDeadline(): number {
    let at = Infinity;
    for (const op of this.ops.values()) at = Math.min(at, op.deadline, op.probeAt);
    return at;
  }

  /** Expires or probes every request whose time has come. */
  tick(now: number): void {
    if (this.ops.size === 0) return;
    // Copied: expiring removes from the map.
    for (const op of [...this.ops.values()]) {
      if (now >= op.deadline) this.expire(op);
      else if (now >= op.probeAt) {
        op.probeAt = now + this.probeMs;
        this.touched.push(op);
        this.probe(op);
      }
    }
  }

  /**
   * In flight within the cap; every request this step created or changed is, if still in the map,
   * filed under its id, issued in order, and not finished (a finished one must be gone). Requests
   * the step did not touch cannot have changed, so the check stays O(touched) per step.
   */
  checkInvariants(pendingMax: number): void {
    if (this.ops.size > pendingMax) invariantBroken(`${this.ops.size} requests in flight > the cap ${pendingMax}`);
    for (const op of this.touched) {
      const id = op.roundTripId;
      if (this.ops.get(id) !== op) continue;
      invariant(id > 0 && id <= this.lastRoundTripId, 'round-trip ids are issued in order');
      if (op.kind === 'write') {
        if (writeSettled(op)) invariantBroken(`write ${id} settled but still in flight`);
      } else if (readSettled(op)) {
        invariantBroken(`read ${id} settled but still in flight`);
      }
    }
  }

  /** The step is over: forget which requests it touched (bookkeeping kept out of checkInvariants). */
  endStep(): void {
    emptyKeepingStorage(this.touched);
  }

  /**
   * What every new request has: a round-trip id, its timers, and its placement (placement.ts plan:
   * the key's walk split into groups and slots). Each kind builds its op from it as one literal with
   * every field (read-op.ts newReadOp, startWrite), then registers it.
   */
  private opBase(key: string, requestId: number, quorum: number): OpBase {
    const host = this.host;
    const { groups, slots } = plan({
      walk: host.placementCache.walk(key, host.config.quorum_n),
      level: host.config.consistency_level,
      regionIds: host.placementCache.regionIds(host.members, this.regionOf),
      regionOf: this.regionOf,
      coordinatorRegion: host.regionOf(host.id),
      quorum,
    });
    const now = host.now;
    return {
      roundTripId: ++this.lastRoundTripId,
      requestId,
      key,
      startedAt: now,
      deadline: now + host.timings.requestTimeoutMs,
      probeAt: now + this.probeMs,
      groups,
      slots,
      used: null,
    };
  }

  /** The host's regionOf, made once (not a closure per request). */
  private readonly regionOf = (m: NodeId): number => this.host.regionOf(m);

  /** A new request in flight: filed under its id, touched, its first holders chosen. */
  private register(op: Op): void {
    this.ops.set(op.roundTripId, op);
    this.touched.push(op);
    assignHolders(op, this.host.config.sloppy_quorum, this.host.suspected);
  }

  // ------------------------------------------------------------ writes

  startWrite(requestId: number, key: string, value: string, tombstone: boolean, batch: WriteOp['batch']): void {
    this.host.stats.writes++;
    const local = this.host.localVersion(key);
    const vclock = incrementClock(local?.vclock ?? {}, this.host.id);
    const version: Version = {
      key,
      value,
      tombstone,
      timestamp: this.host.clock.tick(this.host.now),
      node_id: this.host.id,
      version: clockSum(vclock),
      vclock,
    };
    const base = this.opBase(key, requestId, this.host.config.quorum_w);
    // One literal with every field (a spread of the base would be a generic copy per write).
    const op: WriteOp = {
      roundTripId: base.roundTripId,
      requestId,
      key,
      startedAt: base.startedAt,
      deadline: base.deadline,
      probeAt: base.probeAt,
      groups: base.groups,
      slots: base.slots,
      used: base.used,
      kind: 'write',
      version,
      replied: false,
      batch,
    };
    this.register(op);
    // One message object for every intended replica (the actor encodes it once).
    let direct: LeaderlessMessage | undefined;
    for (const slot of op.slots) {
      const to = slot.holders[0] as NodeId;
      if (to !== slot.intended) this.sendPut(op, slot, to);
      else {
        direct ??= {
          kind: 'put',
          roundTripId: op.roundTripId,
          version: op.version,
          hintFor: null,
          ack: true,
          repair: false,
        };
        this.host.deliver(to, direct);
      }
    }
    this.checkWrite(op);
  }

  private sendPut(op: WriteOp, slot: Slot, to: NodeId): void {
    const hintFor = to === slot.intended ? null : slot.intended;
    this.host.deliver(to, {
      kind: 'put',
      roundTripId: op.roundTripId,
      version: op.version,
      hintFor,
      ack: true,
      repair: false,
    });
  }

  onAck(from: NodeId, roundTripId: number): void {
    const op = this.ops.get(roundTripId);
    if (!op) return;
    this.touched.push(op);
    if (op.kind === 'read') {
      // Sync read repair: a stale replica confirmed it took the newest version.
      if (op.repairAcksAwaited.delete(from) && op.repairAcksAwaited.size === 0 && !op.answered) this.answerRead(op);
      this.closeReadIfDone(op);
      return;
    }
    const slot = slotOf(op, from);
    if (!slot || slot.done) return;
    slot.done = true;
    this.checkWrite(op);
  }

  /**
   * A replica refused the write for its budget: once the refusals leave a group fewer replicas than
   * its quorum needs, the write fails with storage_full (507) at once.
   */
  onNack(from: NodeId, roundTripId: number): void {
    const op = this.ops.get(roundTripId);
    if (!op || op.kind !== 'write' || op.replied) return;
    this.touched.push(op);
    const slot = slotOf(op, from);
    if (!slot || slot.done) return;
    slot.refused = true;
    if (quorumStillPossible(op)) return;
    op.replied = true;
    this.ops.delete(op.roundTripId);
    this.finishWrite(op, writeRefused(op, from, this.host.storedBytesMax));
  }

  private checkWrite(op: WriteOp): void {
    if (!op.replied && quorumMet(op)) {
      op.replied = true;
      this.host.stats.quorum_achieved++;
      const { event, reply } = writeSucceeded(op, this.host.id, this.host.now);
      this.host.emit('quorum_achieved', event);
      this.finishWrite(op, reply);
    }
    // Keep recruiting until every slot holds a copy (N copies, as Dynamo's sloppy quorum aims for).
    if (writeSettled(op)) this.ops.delete(op.roundTripId);
  }

  private finishWrite(op: WriteOp, r: ClientReply): void {
    if (!op.batch) {
      this.host.reply(r);
      return;
    }
    const batch = this.batches.get(op.batch.id);
    if (!batch) return;
    const done = foldBatchResult(batch, op.batch.index, r);
    if (!done) return;
    this.batches.delete(batch.requestId);
    this.host.reply(done);
  }

  // ------------------------------------------------------------ reads and read repair

  startRead(requestId: number, key: string): void {
    this.host.stats.reads++;
    const op = newReadOp(this.opBase(key, requestId, this.host.config.quorum_r), this.host.config.read_repair_mode);
    this.register(op);
    const first = op.slots.map((s) => s.holders[0] as NodeId);
    // Digest reads (Cassandra-style): one replica, this node when it is one, sends the full value.
    if (op.mode === 'digest') op.dataReplica = first.includes(this.host.id) ? this.host.id : (first[0] ?? null);
    for (const node of first) this.sendGet(op, node, op.mode === 'digest' && node !== op.dataReplica);
  }

  private sendGet(op: ReadOp, to: NodeId, digestOnly: boolean): void {
    this.host.deliver(to, { kind: 'get', roundTripId: op.roundTripId, key: op.key, digestOnly });
  }

  onGetReply(from: NodeId, msg: Extract<LeaderlessMessage, { kind: 'get_reply' }>): void {
    const op = this.ops.get(msg.roundTripId);
    if (!op || op.kind !== 'read') return;
    this.touched.push(op);
    if (msg.version) observeStrict(this.host.clock, msg.version.timestamp, this.host.now);
    const slot = slotOf(op, from);
    if (slot) slot.done = true;
    if (msg.full) op.fullReplies.set(from, msg.version);
    else op.digestReplies.set(from, msg.digest);
    this.evaluateRead(op);
  }

  /** Asks digest responders that differ from `newest` for their full value; returns how many differ. */
  private fetchMismatched(op: ReadOp, newest: Version | null): number {
    const { waiting, toAsk } = digestMismatches(op, newest);
    for (const node of toAsk) this.sendGet(op, node, false);
    return waiting;
  }

  private evaluateRead(op: ReadOp): void {
    if (op.answered) {
      // Late replies (the N-R replicas beyond the quorum): fold in what they know, repair the stale.
      const newest = newestOf([op.newest, ...op.fullReplies.values()]);
      op.newest = newest;
      if (op.mode === 'digest') this.fetchMismatched(op, newest);
      this.repairStale(op);
      this.closeReadIfDone(op);
      return;
    }
    if (!quorumMet(op) || op.fullReplies.size === 0) return;
    const newest = newestOf(op.fullReplies.values());
    // Digest mode: a replica whose digest differs may hold something newer; fetch before answering.
    if (op.mode === 'digest' && this.fetchMismatched(op, newest) > 0) return;
    op.newest = newest;
    if (op.mode === 'sync') {
      if (!op.syncRepairSent) {
        op.syncRepairSent = true;
        const stale = this.repairStale(op, true);
        for (const node of stale) {
          if (node !== this.host.id) op.repairAcksAwaited.add(node);
        }
      }
      if (op.repairAcksAwaited.size > 0) return;
      this.answerRead(op);
      // Nothing to repair and every slot replied: the read is over (it used to linger until its deadline).
      this.closeReadIfDone(op);
      return;
    }
    this.answerRead(op);
    this.repairStale(op);
    this.closeReadIfDone(op);
  }

  private answerRead(op: ReadOp): void {
    op.answered = true;
    this.host.reply(readReply(op, this.host.id));
  }

  /**
   * Read repair (read-op.ts staleResponders): every stale responder gets the newest, and the
   * coordinator's own stale copy is repaired too. Returns the nodes repaired now; `withAck` asks
   * them to acknowledge (sync mode).
   */
  private repairStale(op: ReadOp, withAck = false): NodeId[] {
    const newest = op.newest;
    if (!newest) return [];
    const repaired: NodeId[] = [];
    for (const { node, hintFor } of staleResponders(op)) {
      repaired.push(node);
      const roundTripId = withAck ? op.roundTripId : -1;
      this.host.deliver(node, {
        kind: 'put',
        roundTripId,
        version: newest,
        hintFor,
        ack: withAck && node !== this.host.id,
        repair: true,
      });
    }
    const own = this.host.store.get(op.key);
    if (own && lwwNewer(newest, own) && !op.fullReplies.has(this.host.id) && !op.digestReplies.has(this.host.id)) {
      this.host.applyVersion(newest, 'repair', this.host.id);
      repaired.push(this.host.id);
    }
    if (repaired.length > 0) {
      this.host.stats.read_repairs += repaired.length;
      this.host.emit('read_repair', {
        key: op.key,
        mode: op.mode,
        repaired,
        timestamp: newest.timestamp,
        tombstone: newest.tombstone,
      });
    }
    return repaired;
  }

  private closeReadIfDone(op: ReadOp): void {
    if (readSettled(op)) this.ops.delete(op.roundTripId);
  }

  // ------------------------------------------------------------ timers: probe and expiry

  /** A slot still silent after the probe: walk further along the ring (sloppy quorum). */
  probe(op: Op): void {
    if (op.kind === 'read') {
      if (op.answered) return;
      for (const node of silentDataFetches(op)) this.sendGet(op, node, false);
    }
    if (!this.host.config.sloppy_quorum) return;
    if (op.kind === 'write' && op.replied && writeSettled(op)) return;
    for (const slot of op.slots) {
      if (slot.done || slot.refused || (op.groups[slot.group] as Group).required === 0) continue;
      const standIn = recruit(op, slot, this.host.suspected);
      if (!standIn) continue;
      if (op.kind === 'write') this.sendPut(op, slot, standIn);
      else this.sendGet(op, standIn, false);
    }
  }

  expire(op: Op): void {
    this.ops.delete(op.roundTripId);
    if (op.kind === 'write') {
      if (op.replied) return;
      const { event, reply } = writeTimedOut(op, this.host.config.sloppy_quorum);
      this.host.stats.quorum_failed++;
      this.host.emit('quorum_failed', event);
      this.finishWrite(op, reply);
      return;
    }
    if (op.answered) return;
    let unresolved: NodeId[] = [];
    if (op.newest !== null || (quorumMet(op) && op.fullReplies.size > 0)) {
      const known = newestOf([op.newest, ...op.fullReplies.values()]);
      // A digest that differs from what is known may stand for a newer version (swarm seed 398):
      // without its full value the answer could be stale, so the read fails instead (Cassandra's
      // digest mismatch whose data read times out is a read timeout too).
      unresolved = op.mode === 'digest' ? unresolvedDigests(op, known) : [];
      if (unresolved.length === 0) {
        // Quorum met but a sync repair never completed: answer with what is known.
        op.newest = known;
        this.answerRead(op);
        return;
      }
    }
    const { event, reply } = readTimedOut(op, unresolved);
    this.host.stats.read_quorum_failed++;
    this.host.emit('quorum_failed', event);
    this.host.reply(reply);
  }
}
