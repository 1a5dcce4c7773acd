/**
 * Leaderless (Dynamo-style) replication as a pure NodeCore. The node that receives a client request
 * coordinates it: the key's N preferred replicas come from a consistent-hash ring (128 virtual
 * nodes per member), a write succeeds after W acks and a read after R replies (newest version by
 * HLC timestamp, ties by node id; tombstones win over older values and are repaired like values).
 * Around that: sloppy quorums with hinted handoff, read repair (async, sync, digest), region-aware
 * consistency levels (leaderless/placement.ts), a phi-accrual failure detector fed by heartbeats,
 * Merkle anti-entropy between replicas, and key streaming when membership changes. N/W/R can be
 * changed at run time (custom control `set_quorum`), which the checkers' safe add-node uses.
 * Not a consensus protocol: concurrent writes are settled by last-writer-wins, not ordered.
 *
 * This file is the shell (fields, NodeCore inputs, the per-kind `handle` switch, timers,
 * membership, hinted handoff, heartbeats and anti-entropy glue). In leaderless/: coordinator (the
 * requests this node coordinates), storage (versions, hints, bytes and durable records), and the
 * leaves: messages (the wire), placement (groups, quorum arithmetic), write-op and read-op (what a
 * request answers), hints (the capped hint store and transfers), controls (the `custom` controls),
 * durable (records and their fold), audit (GET nodes/{id}/log). Limits: ../limits.ts, leaderless.
 *
 * One step is one input (onClient, onMessage, onTick, control). A message this node sends itself
 * is queued and handled at the end of the step, after the input's own work (TigerBeetle's loopback
 * queue), never re-entering the core mid-loop: code after a send never sees its request finished
 * by it. checkInvariants() runs once the queue is empty.
 *
 * Durable state (what survives a crash): the store and the hints held for others (versions carry
 * their vector clocks and HLC timestamps). Each change is a durable record, with a checkpoint of
 * both when the records since the last one outweigh them; leaderlessDurableFold rebuilds them. A
 * restarted node catches up by hinted handoff (its stand-ins hand back), anti-entropy (started at
 * once) and read repair; in-flight requests it coordinated are lost (their clients saw them fail).
 * A replica refuses a client write (put) that would take its stored bytes (store + hints) past its
 * budget with put_nack; the coordinator answers storage_full (507) as soon as the refusals leave
 * too few replicas for W. Repairs, handoffs and anti-entropy are always applied (convergence).
 */
import {
  type ClientReply,
  type ClientRequest,
  type ClusterConfig,
  type ControlCommand,
  type ControlResult,
  type CoreFactory,
  type CoreOptions,
  type CoreOutput,
  type CoreStatus,
  type CoreTimings,
  type NodeCore,
  type NodeId,
  type Version,
} from '../core.js';
import { externalTimestampProblem, HybridClock } from '../hlc.js';
import {
  corruptTimestampAheadMsMax,
  leaderlessAntiEntropyIntervalMs,
  leaderlessAuditRecordsMax,
  leaderlessCorruptCopyAgeMs,
  leaderlessHandoffEventKeysMax,
  leaderlessHandoffIntervalMs,
  leaderlessHeartbeatIntervalMsMax,
  leaderlessHeartbeatIntervalMsMin,
  leaderlessHeartbeatMsPerMember,
  leaderlessHintedVersionsMax,
  leaderlessPendingRequestsMax,
  leaderlessPlacementCacheKeysMax,
  leaderlessProbeMsMin,
  leaderlessProbeShareOfTimeout,
  leaderlessSuspectedHeartbeatIntervalMs,
  repairOverBudgetFactorMax,
} from '../limits.js';
import { invariant, unreachable } from '../../util/assert.js';
import { drainOutbox, emptyKeepingStorage, newCoreOutbox, type CoreOutbox } from '../../util/out-list.js';
import { aeAnswer, aePlan, aeRoot } from '../dynamo/anti-entropy.js';
import { PhiAccrualDetector, defaultPhiOptions } from '../dynamo/phi.js';
import { ringFor, type HashRing } from '../dynamo/ring.js';
import { lwwNewer, observeStrict, versionDigest } from '../dynamo/version.js';
import { AuditLog } from './leaderless/audit.js';
import { answerControl, type ControlHost, type CorruptArgs, type QuorumSizes } from './leaderless/controls.js';
import { Coordinator, type ApplyCause, type CoordinatorHost } from './leaderless/coordinator.js';
import { isLeaderlessPersisted, type LeaderlessPersisted } from './leaderless/durable.js';
import { TransferSet } from './leaderless/hints.js';
import { decodeLeaderlessMessage, type HandoffPurpose, type LeaderlessMessage } from './leaderless/messages.js';
import { PlacementCache } from './leaderless/placement.js';
import { ReplicaStorage } from './leaderless/storage.js';

export { leaderlessDurableFold } from './leaderless/durable.js';
export type { AuditRecord } from './leaderless/audit.js';
export type { LeaderlessMessage } from './leaderless/messages.js';

class LeaderlessCore implements NodeCore, ControlHost, CoordinatorHost {
  readonly id: NodeId;
  members: NodeId[];
  private ring: HashRing;
  /** Ring walks and region ids for the current ring (replaced with it on a membership change). */
  placementCache: PlacementCache;
  readonly config: ClusterConfig;
  readonly timings: CoreTimings;
  private readonly regions: Record<NodeId, number>;
  readonly clock = new HybridClock();
  /** Versions, hints held for others, their bytes and durable records (leaderless/storage.ts). */
  private readonly storage: ReplicaStorage;
  /** Keys to stream to nodes that joined their preference list (membership change). */
  private readonly transfers = new TransferSet();
  private readonly detectors = new Map<NodeId, PhiAccrualDetector>();
  /**
   * When this node last sent each peer a heartbeat, in a box per peer: a time is not a small
   * integer, and setting a Map entry to one allocated a number on every heartbeat.
   */
  private readonly lastHeartbeatSentAt = new Map<NodeId, { at: number }>();
  /** The requests this node coordinates (leaderless/coordinator.ts). */
  private readonly coordinator: Coordinator;
  now: number;
  private nextHeartbeatAt: number;
  private nextHandoffAt: number;
  private nextAntiEntropyAt: number;
  /** Round-robin position over the peers for the periodic anti-entropy exchange. */
  private antiEntropyCursor = 0;
  /** Messages to this node, handled at the end of the current step (see the file header). */
  private readonly loopback: LeaderlessMessage[] = [];
  private readonly out: CoreOutbox = newCoreOutbox();
  private readonly audit = new AuditLog(leaderlessAuditRecordsMax);
  readonly stats = {
    refused_storage_full: 0,
    writes: 0,
    reads: 0,
    applied: 0,
    quorum_achieved: 0,
    quorum_failed: 0,
    read_quorum_failed: 0,
    read_repairs: 0,
    hints_stored: 0,
    hints_delivered: 0,
    hints_refused: 0,
    hints_dropped: 0,
    keys_transferred: 0,
    keys_moved_out: 0,
    ae_rounds: 0,
    ae_versions_sent: 0,
    bad_messages: 0,
    overloaded: 0,
    log_dropped: 0,
  };

  constructor(opts: CoreOptions) {
    this.id = opts.id;
    this.members = [...opts.peers];
    this.ring = ringFor(this.members);
    this.placementCache = new PlacementCache(this.ring, leaderlessPlacementCacheKeysMax);
    // A private copy: set_quorum changes N/W/R on this node only (cores in one test may share a config object).
    this.config = { ...opts.config };
    this.timings = opts.timings;
    this.regions = { ...(opts.regions ?? {}) };
    const probeMs = Math.max(
      leaderlessProbeMsMin,
      Math.floor(opts.timings.requestTimeoutMs * leaderlessProbeShareOfTimeout),
    );
    this.coordinator = new Coordinator(this, probeMs);
    this.now = opts.now;
    for (const m of this.members) {
      if (m !== this.id) this.detectors.set(m, this.newDetector());
    }
    this.checkDetectors();
    // Periodic duties start at staggered offsets so nodes do not all fire at one instant.
    this.nextHeartbeatAt = opts.now + opts.rng.range(0, this.heartbeatIntervalMs() - 1);
    this.nextHandoffAt = opts.now + opts.rng.range(1, leaderlessHandoffIntervalMs);
    this.nextAntiEntropyAt = opts.now + opts.rng.range(1, leaderlessAntiEntropyIntervalMs);
    this.storage = new ReplicaStorage(opts.storedBytesMax ?? Infinity, leaderlessHintedVersionsMax, this.out.durable);
    if (isLeaderlessPersisted(opts.persisted)) this.restore(opts.persisted, opts.now);
  }

  /** This node's own versions (CoordinatorHost; read-only outside storage). */
  get store(): ReadonlyMap<string, Version> {
    return this.storage.versions;
  }

  get storedBytesMax(): number {
    return this.storage.storedBytesMax;
  }

  /** A restarted node: store and hints as they were, its clock past them, catch-up duties at once. */
  private restore(p: LeaderlessPersisted, now: number): void {
    this.storage.restore(p, (timestamp) => this.clock.observe(timestamp, now));
    this.nextAntiEntropyAt = now;
    this.nextHandoffAt = now;
  }

  // ------------------------------------------------------------ NodeCore

  onClient(req: ClientRequest, now: number): void {
    this.now = now;
    this.admit(req);
    this.endStep();
  }

  private admit(req: ClientRequest): void {
    const op = req.op;
    // A batch counts one request per entry, so the cap holds for ops.size (checkInvariants).
    const requests = op.op === 'batch' ? op.entries.length : 1;
    if (this.coordinator.ops.size + requests > leaderlessPendingRequestsMax) {
      this.stats.overloaded++;
      this.reply({
        id: req.id,
        ok: false,
        code: 'timeout',
        error: `coordinator ${this.id} overloaded: too many requests in flight`,
      });
      return;
    }
    switch (op.op) {
      case 'write':
        this.coordinator.startWrite(req.id, op.key, op.value, false, null);
        return;
      case 'delete':
        this.coordinator.startWrite(req.id, op.key, '', true, null);
        return;
      case 'read':
        this.coordinator.startRead(req.id, op.key);
        return;
      case 'batch': {
        if (op.entries.length === 0) {
          this.reply({ id: req.id, ok: true, result: { kind: 'batch', entries: [] } });
          return;
        }
        this.coordinator.startBatch(req.id, op.entries.length);
        op.entries.forEach((e, index) =>
          this.coordinator.startWrite(req.id, e.key, e.value, false, { id: req.id, index }),
        );
        return;
      }
      default:
        unreachable(op);
    }
  }

  onMessage(from: NodeId, raw: unknown, now: number): void {
    this.now = now;
    const msg = decodeLeaderlessMessage(raw);
    if (msg) this.handle(from, msg);
    else this.stats.bad_messages++;
    this.endStep();
  }

  onTick(now: number): void {
    this.now = now;
    if (now >= this.nextHeartbeatAt) {
      this.nextHeartbeatAt = now + this.heartbeatIntervalMs();
      this.sendHeartbeats();
    }
    this.coordinator.tick(now);
    if (now >= this.nextHandoffAt) {
      this.nextHandoffAt = now + leaderlessHandoffIntervalMs;
      this.handoffTick();
    }
    if (now >= this.nextAntiEntropyAt) {
      this.nextAntiEntropyAt = now + leaderlessAntiEntropyIntervalMs;
      const peers = this.reachablePeers();
      if (peers.length > 0) this.startAntiEntropy(peers[this.antiEntropyCursor++ % peers.length] as NodeId);
    }
    this.endStep();
  }

  nextDeadline(): number {
    return Math.min(this.nextHeartbeatAt, this.nextHandoffAt, this.nextAntiEntropyAt, this.coordinator.nextDeadline());
  }

  drain(out: CoreOutput): void {
    this.storage.maybeCheckpoint();
    // Handed over in place (util/out-list.ts): the lists keep their storage for the next step.
    drainOutbox(this.out, out);
  }

  control(cmd: ControlCommand, now: number): ControlResult {
    this.now = now;
    const result = this.controlStep(cmd);
    this.endStep();
    return result;
  }

  private controlStep(cmd: ControlCommand): ControlResult {
    switch (cmd.kind) {
      case 'clock_skew':
        this.clock.skewMs = cmd.ms;
        return { ok: true, data: { skew_ms: cmd.ms } };
      case 'peers':
        this.changeMembership(cmd.peers);
        return { ok: true, data: { members: [...this.members] } };
      case 'replication_mode':
        return { ok: false, code: 'unsupported', error: 'replication_mode applies to single_leader clusters only' };
      case 'set_leader':
      case 'add_server':
      case 'remove_server':
        return { ok: false, code: 'unsupported', error: `${cmd.kind} is not supported by leaderless clusters` };
      case 'custom':
        return answerControl(this, cmd.name, cmd.args);
      default:
        return unreachable(cmd);
    }
  }

  /** A view: reads the state at `now` and changes nothing (suspicion is computed at `now`). */
  status(now: number): CoreStatus {
    const at = Math.max(this.now, now);
    return {
      role: 'replica',
      commit_index: this.stats.applied,
      last_applied: this.stats.applied,
      leader_id: '',
      lag: 0,
      extra: {
        keys: this.store.size,
        hints_held: this.storage.hints.count,
        pending_transfers: this.transfers.count,
        in_flight: this.coordinator.ops.size,
        suspected: this.others().filter((p) => this.suspectedAt(p, at)),
        hlc_remote_refused: this.clock.remoteRefused,
        stored_bytes: this.storage.storedBytes,
        stored_bytes_max: Number.isFinite(this.storedBytesMax) ? this.storedBytesMax : null,
        ...this.stats,
        log_dropped: this.audit.dropped,
      },
    };
  }

  logView(): unknown[] {
    return this.audit.view();
  }

  storeView(): Record<string, Version> {
    const out: Record<string, Version> = {};
    for (const key of [...this.store.keys()].sort()) out[key] = { ...(this.store.get(key) as Version) };
    return out;
  }

  // ------------------------------------------------------------ one step's end

  /** Handles the messages this node sent itself during the step (they may send more), then checks. */
  private endStep(): void {
    for (let i = 0; i < this.loopback.length; i++) this.handle(this.id, this.loopback[i] as LeaderlessMessage);
    emptyKeepingStorage(this.loopback);
    this.checkInvariants();
    this.coordinator.endStep();
  }

  /** Cheap truths after every step (TigerBeetle's invariants()); a failure is a bug in this core. */
  private checkInvariants(): void {
    this.storage.checkInvariants();
    this.transfers.checkInvariants();
    invariant(this.loopback.length === 0, 'the loopback queue is empty between steps');
    // A finished op is gone from the map: what stays is still waiting for something.
    this.coordinator.checkInvariants(leaderlessPendingRequestsMax);
    invariant(this.audit.length <= leaderlessAuditRecordsMax, 'the audit log is within its cap');
    // That no detector watches this node itself is checked where the detectors change (checkDetectors).
  }

  /** No detector watches this node itself: checked after each change of the detectors, their only changes. */
  private checkDetectors(): void {
    invariant(!this.detectors.has(this.id), 'no detector watches this node itself');
  }

  // ------------------------------------------------------------ message handling

  private handle(from: NodeId, msg: LeaderlessMessage): void {
    switch (msg.kind) {
      case 'heartbeat':
        this.detectors.get(from)?.heartbeat(this.now);
        observeStrict(this.clock, msg.hlc, this.now);
        return;
      case 'put':
        this.onPut(from, msg);
        return;
      case 'put_ack':
        this.coordinator.onAck(from, msg.roundTripId);
        return;
      case 'put_nack':
        this.coordinator.onNack(from, msg.roundTripId);
        return;
      case 'get': {
        const v = this.localVersion(msg.key);
        this.deliver(from, {
          kind: 'get_reply',
          roundTripId: msg.roundTripId,
          key: msg.key,
          full: !msg.digestOnly,
          version: msg.digestOnly ? null : v,
          digest: versionDigest(v),
        });
        return;
      }
      case 'get_reply':
        this.coordinator.onGetReply(from, msg);
        return;
      case 'handoff': {
        const cause: ApplyCause = msg.purpose === 'hint' ? 'handoff' : 'transfer';
        for (const v of msg.versions) this.applyVersion(v, cause, from);
        const items = msg.versions.map((v): [string, number] => [v.key, v.timestamp]);
        this.deliver(from, { kind: 'handoff_ack', purpose: msg.purpose, items });
        return;
      }
      case 'handoff_ack':
        this.onHandoffAck(from, msg.purpose, msg.items);
        return;
      case 'anti_entropy_root': {
        const answer = aeAnswer(this.pairDigests(from), msg, this.timings.maxEntriesPerMessage);
        if (answer) this.deliver(from, { kind: 'anti_entropy_keys', ...answer });
        return;
      }
      case 'anti_entropy_keys': {
        const exchange = aePlan(this.pairDigests(from), msg, this.timings.maxEntriesPerMessage);
        if (exchange.push.length > 0) this.pushKeys(from, exchange.push);
        if (exchange.pull.length > 0) this.deliver(from, { kind: 'anti_entropy_pull', keys: exchange.pull });
        return;
      }
      case 'anti_entropy_pull':
        this.pushKeys(from, msg.keys.slice(0, this.timings.maxEntriesPerMessage));
        return;
      case 'anti_entropy_push':
        for (const v of msg.versions) this.applyVersion(v, 'anti_entropy', from);
        return;
      default:
        unreachable(msg);
    }
  }

  /** Sends through the fabric, or queues for the end of the step when the destination is this node. */
  deliver(to: NodeId, msg: LeaderlessMessage): void {
    if (to === this.id) this.loopback.push(msg);
    else this.out.messages.push({ to, msg });
  }

  private onPut(from: NodeId, msg: Extract<LeaderlessMessage, { kind: 'put' }>): void {
    const owner = msg.hintFor !== null && msg.hintFor !== this.id ? msg.hintFor : null;
    const current = owner !== null ? this.storage.hints.get(owner, msg.version.key) : this.store.get(msg.version.key);
    if (!msg.repair && this.storage.wouldOverflow(msg.version, current)) {
      // Client writes only: repairs keep replicas converging whatever the budget.
      this.stats.refused_storage_full++;
      if (msg.ack) this.deliver(from, { kind: 'put_nack', roundTripId: msg.roundTripId, key: msg.version.key });
      return;
    }
    let stored = true;
    if (owner !== null) stored = this.storeHint(owner, msg.version, from);
    else this.applyVersion(msg.version, msg.repair ? 'repair' : from === this.id ? 'write' : 'apply', from);
    if (stored && msg.ack) this.deliver(from, { kind: 'put_ack', roundTripId: msg.roundTripId, key: msg.version.key });
  }

  // ------------------------------------------------------------ placement and suspicion

  private others(): NodeId[] {
    return this.members.filter((m) => m !== this.id);
  }

  /** Peers not suspected now (anti-entropy partners). */
  private reachablePeers(): NodeId[] {
    const peers: NodeId[] = [];
    for (const m of this.members) if (m !== this.id && !this.suspected(m)) peers.push(m);
    return peers;
  }

  regionOf(node: NodeId): number {
    return this.regions[node] ?? 0;
  }

  private suspectedAt(node: NodeId, at: number): boolean {
    if (node === this.id) return false;
    return this.detectors.get(node)?.suspected(at) ?? false;
  }

  readonly suspected = (node: NodeId): boolean => this.suspectedAt(node, this.now);

  private preferenceList(key: string): NodeId[] {
    return this.placementCache.preferenceList(key, this.config.quorum_n);
  }

  // ------------------------------------------------------------ local storage, hints, transfers

  /** The newest version this node holds for a key, as a replica or as a stand-in. */
  localVersion(key: string): Version | null {
    return this.storage.newest(key);
  }

  /** Newer wins (HLC timestamp, then node id): an older value never overwrites a newer tombstone. */
  applyVersion(v: Version, cause: ApplyCause, from: NodeId): boolean {
    observeStrict(this.clock, v.timestamp, this.now);
    const current = this.store.get(v.key);
    if (current && !lwwNewer(v, current)) return false;
    if (this.storage.wouldOverflow(v, current, this.storedBytesMax * repairOverBudgetFactorMax)) {
      this.stats.refused_storage_full++;
      return false;
    }
    this.storage.set(v);
    this.stats.applied++;
    this.audit.append(cause, v, from);
    return true;
  }

  /** Holds `v` for `owner` (a stand-in's duty); false when the hint store is full (no ack). */
  private storeHint(owner: NodeId, v: Version, from: NodeId): boolean {
    observeStrict(this.clock, v.timestamp, this.now);
    const put = this.storage.putHint(owner, v);
    if (put.outcome === 'already_newer') return true;
    if (put.outcome === 'full') {
      this.stats.hints_refused++;
      return false;
    }
    this.stats.hints_stored++;
    this.audit.append('hint', v, from, owner);
    return true;
  }

  /** Hinted handoff and membership transfers: (re)send to reachable owners until acknowledged. */
  private handoffTick(): void {
    const max = Math.max(1, this.timings.maxEntriesPerMessage);
    // Copied (dropHintsOf changes the map), unless there is nobody to copy (the usual tick).
    for (const [owner] of this.storage.hints.ownerCount === 0 ? [] : [...this.storage.hints.owners()]) {
      if (!this.members.includes(owner)) {
        // The owner left the cluster: its hints have nowhere to go.
        this.stats.hints_dropped += this.storage.dropHintsOf(owner);
        continue;
      }
      if (this.suspected(owner)) continue;
      this.deliver(owner, { kind: 'handoff', purpose: 'hint', versions: this.storage.hints.batchFor(owner, max) });
    }
    for (const to of this.transfers.nodes()) {
      if (!this.members.includes(to)) {
        this.transfers.forget(to);
        continue;
      }
      if (this.suspected(to)) continue;
      const versions = this.transfers.batchFor(to, max, (key) => this.store.get(key));
      if (versions.length > 0) this.deliver(to, { kind: 'handoff', purpose: 'transfer', versions });
    }
  }

  private onHandoffAck(from: NodeId, purpose: HandoffPurpose, items: Array<[string, number]>): void {
    if (purpose === 'hint') {
      const delivered: string[] = [];
      for (const [key, timestamp] of items) {
        // Only the version that was sent is settled; a newer hint for the key waits for the next round.
        if (this.storage.settleHint(from, key, timestamp)) delivered.push(key);
      }
      if (delivered.length > 0) {
        this.stats.hints_delivered += delivered.length;
        const keys = delivered.slice(0, leaderlessHandoffEventKeysMax);
        this.emit('hinted_handoff', { to: from, keys, count: delivered.length });
      }
      return;
    }
    for (const key of this.transfers.settle(
      from,
      items.map(([key]) => key),
    )) {
      this.stats.keys_transferred++;
      this.dropIfMovedOut(key);
    }
  }

  /** After its new owners have it, a key this node no longer replicates leaves its store. */
  private dropIfMovedOut(key: string): void {
    if (this.preferenceList(key).includes(this.id) || this.transfers.pending(key)) return;
    const v = this.store.get(key);
    if (!v) return;
    this.storage.delete(key);
    this.stats.keys_moved_out++;
    this.audit.append('moved', v, this.id);
  }

  /** A node joined or left: new ring; keys whose preference list gained a node are streamed to it. */
  private changeMembership(peers: readonly NodeId[]): void {
    const oldRing = this.ring;
    this.members = [...new Set(peers)];
    if (!this.members.includes(this.id)) this.members.push(this.id);
    this.ring = ringFor(this.members);
    this.placementCache = new PlacementCache(this.ring, leaderlessPlacementCacheKeysMax);
    for (const m of this.members) {
      if (m !== this.id && !this.detectors.has(m)) this.detectors.set(m, this.newDetector());
    }
    for (const m of [...this.detectors.keys()]) {
      if (!this.members.includes(m)) this.detectors.delete(m);
    }
    this.checkDetectors();
    this.scheduleTransfers(oldRing, this.config.quorum_n);
    this.antiEntropyCursor = 0;
  }

  /**
   * Keys whose preference list gained a node (against `oldRing` with `oldN` replicas) are streamed
   * to it by the handoff timer, which starts at once.
   */
  private scheduleTransfers(oldRing: HashRing, oldN: number): void {
    for (const [key] of this.store) {
      const before = oldRing.preferenceList(key, oldN);
      for (const node of this.preferenceList(key)) {
        if (node !== this.id && !before.includes(node)) this.transfers.add(node, key);
      }
    }
    this.nextHandoffAt = Math.min(this.nextHandoffAt, this.now);
  }

  // ------------------------------------------------------------ heartbeats and anti-entropy

  private heartbeatIntervalMs(): number {
    const stretched = Math.max(leaderlessHeartbeatIntervalMsMin, this.members.length * leaderlessHeartbeatMsPerMember);
    return Math.min(leaderlessHeartbeatIntervalMsMax, stretched);
  }

  /** A detector for a peer, seeded with the heartbeat interval it is expected to keep. */
  private newDetector(): PhiAccrualDetector {
    return new PhiAccrualDetector(this.now, { ...defaultPhiOptions, firstIntervalMs: this.heartbeatIntervalMs() });
  }

  /**
   * One heartbeat object for every peer (the same content each would get; no core changes a
   * message), created only when one goes out; the members walked in order, without this node.
   */
  private sendHeartbeats(): void {
    let heartbeat: LeaderlessMessage | undefined;
    for (const peer of this.members) {
      if (peer === this.id) continue;
      const sent = this.lastHeartbeatSentAt.get(peer);
      const last = sent?.at ?? -Infinity;
      if (this.suspected(peer) && this.now - last < leaderlessSuspectedHeartbeatIntervalMs) continue;
      if (sent === undefined) this.lastHeartbeatSentAt.set(peer, { at: this.now });
      else sent.at = this.now;
      heartbeat ??= { kind: 'heartbeat', hlc: this.clock.peek() };
      this.deliver(peer, heartbeat);
    }
  }

  /** (key, digest) of the keys this node and `peer` both replicate: what an exchange compares. */
  private pairDigests(peer: NodeId): Map<string, string> {
    const out = new Map<string, string>();
    for (const [key, v] of this.store) {
      const replicas = this.preferenceList(key);
      if (replicas.includes(peer) && replicas.includes(this.id)) out.set(key, versionDigest(v));
    }
    return out;
  }

  private startAntiEntropy(peer: NodeId): void {
    this.stats.ae_rounds++;
    const root = aeRoot(this.pairDigests(peer));
    this.deliver(peer, { kind: 'anti_entropy_root', root: root.root, leaves: root.leaves });
  }

  private pushKeys(to: NodeId, keys: readonly string[]): void {
    const versions = keys.flatMap((k) => {
      const v = this.store.get(k);
      return v ? [v] : [];
    });
    if (versions.length === 0) return;
    this.stats.ae_versions_sent += versions.length;
    this.deliver(to, { kind: 'anti_entropy_push', versions });
  }

  // ------------------------------------------------------------ ControlHost (leaderless/controls.ts)

  suspicion(): { threshold: number; nodes: Record<NodeId, { phi: number; suspected: boolean }> } {
    const nodes: Record<NodeId, { phi: number; suspected: boolean }> = {};
    for (const m of [...this.members].sort()) {
      const d = this.detectors.get(m);
      const phi = d ? d.phi(this.now) : 0;
      nodes[m] = { phi: Math.round(phi * 1000) / 1000, suspected: m !== this.id && phi >= defaultPhiOptions.threshold };
    }
    return { threshold: defaultPhiOptions.threshold, nodes };
  }

  /** The placement control's list for any N (not cached: N is the caller's). */
  placementFor(key: string, n: number): NodeId[] {
    return this.ring.preferenceList(key, n);
  }

  corrupt(args: CorruptArgs): { entry: Version } | string {
    // An outside timestamp is bounded (a day ahead at most) so the bad copy cannot pin anything.
    const tsProblem =
      args.timestamp === undefined
        ? null
        : externalTimestampProblem(args.timestamp, this.clock.ceiling(this.now), corruptTimestampAheadMsMax);
    if (tsProblem !== null) return tsProblem;
    const current = this.store.get(args.key);
    // Older than the copy it replaces, so every correct replica's version beats it.
    const timestamp =
      typeof args.timestamp === 'number'
        ? args.timestamp
        : (current?.timestamp ?? this.clock.peek()) - leaderlessCorruptCopyAgeMs;
    const v: Version = {
      key: args.key,
      value: args.value,
      tombstone: false,
      timestamp,
      node_id: current?.node_id ?? this.id,
      version: current?.version ?? 1,
      vclock: { ...(current?.vclock ?? {}) },
    };
    this.storage.set(v);
    this.audit.append('corrupt', v, this.id);
    return { entry: v };
  }

  antiEntropyWithAll(): NodeId[] {
    const peers = this.reachablePeers();
    for (const p of peers) this.startAntiEntropy(p);
    return peers;
  }

  storeDigest(): { root: string; keys: number } {
    const all = new Map<string, string>();
    for (const [k, v] of this.store) all.set(k, versionDigest(v));
    return { root: aeRoot(all).root, keys: this.store.size };
  }

  keyCount(): number {
    return this.store.size;
  }

  /**
   * set_quorum: this node coordinates with new N/W/R from now on (requests already in flight keep
   * the plan they started with). The caller sequences the nodes so that every pair of quorums that
   * can be in use at once still overlaps (checkers/quorum.ts); controls.ts refuses a quorum that
   * does not overlap itself (W + R > N). A larger N streams keys to the replicas it adds.
   */
  setQuorum(sizes: QuorumSizes): number {
    const oldN = this.config.quorum_n;
    this.config.quorum_n = sizes.n;
    this.config.quorum_w = sizes.w;
    this.config.quorum_r = sizes.r;
    if (sizes.n > oldN) this.scheduleTransfers(this.ring, oldN);
    return oldN;
  }

  quorum(): QuorumSizes {
    return { n: this.config.quorum_n, w: this.config.quorum_w, r: this.config.quorum_r };
  }

  hintKeysByOwner(): Record<NodeId, string[]> {
    return this.storage.hints.keysByOwner();
  }

  // ------------------------------------------------------------ output

  reply(r: ClientReply): void {
    this.out.replies.push(r);
  }

  emit(type: string, data: Record<string, unknown>): void {
    this.out.events.push({ type, node_id: this.id, data });
  }
}

export const createLeaderlessCore: CoreFactory = (opts) => {
  invariant(opts.config.quorum_n >= 1, 'quorum_n is at least 1 (the front validates it)');
  return new LeaderlessCore(opts);
};
