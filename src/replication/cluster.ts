/**
 * One simulated cluster in live mode: its node actors (worker_threads), its fabric driven by the
 * real clock in the front process, its leader bookkeeping, and its client-operation history.
 * Every node-to-node message passes through the fabric here; the fabric decides latency, drops,
 * partitions and back-pressure, and deliveries to a worker are batched (one post per destination
 * per pass). Each node's durable storage (DurableStore) lives here too, so a crashed node can be
 * restarted from it. Views that aggregate over nodes wait at most nodeCallDeadlineMs per node.
 * Protocol decisions stay in the cores.
 */
import { randomUUID } from 'node:crypto';
import { Fabric } from '../fabric/fabric.js';
import { nodeIndex, reservedFrameIndexMin } from '../../protocol/actor.js';
import { LiveFabricDriver, type WirePayload } from '../fabric/live.js';
import type { ClusterState, NodeStatus, KVEntry, Partition } from '../../protocol/replication.js';
import { liveRng } from '../util/rng.js';
import {
  lastEntryEpochOf,
  type ClientOp,
  type ClientReply,
  type ClusterConfig,
  type CoreEvent,
  type CoreStatus,
  type CoreTimings,
  type NodeId,
  type Version,
} from './core.js';
import { NodeHandle, type ExitInfo } from './node-handle.js';
import { FaultLog, HistoryRing, type HistoryOp } from './history.js';
import type { FabricFaultChange } from '../fabric/fabric.js';
import { messageKindTag } from './link-stats.js';
import { DurableStore } from './durable-store.js';
import {
  faultIntervalsMax,
  fabricLimitsFromEnv,
  historyOpsMax,
  membershipChangeRetriesMax,
  membershipChangeRetryMs,
  nodeCallDeadlineMs,
  requestSweepMs,
  validateTimings,
} from './limits.js';
import { canRestart } from './cores/index.js';
import { ReplicationError } from './errors.js';
import { unreachable } from '../util/assert.js';

export interface ClusterHooks {
  event: (clusterId: string, e: CoreEvent) => void;
  /** Every worker exit, whatever its reason (stopped ones included, for the exit counter). */
  nodeExit: (clusterId: string, nodeId: string, exit: ExitInfo) => void;
}

export interface ClusterOptions {
  /** Per-node budget on stored bytes (CoreOptions.storedBytesMax); absent: unbounded. */
  storedBytesMax?: number;
}

/** What a node told within the deadline: its status, or why it did not. */
export type StatusProbe = { ok: true; status: CoreStatus } | { ok: false; why: 'crashed' | 'unresponsive' };

/** Settles with `p`'s value, or with undefined after `ms` (or when `p` rejects). */
export async function withinMs<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([p.catch(() => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export type { HistoryOp } from './history.js';

/** Sub-millisecond wall-clock time: two sequential operations never share an instant in the history. */
export const preciseNowMs = (): number => performance.timeOrigin + performance.now();

export function toKVEntry(v: Version): KVEntry {
  return {
    key: v.key,
    value: Buffer.from(v.value, 'utf8').toString('base64'),
    vclock: v.vclock,
    timestamp: v.timestamp,
    node_id: v.node_id,
    tombstone: v.tombstone,
    version: v.version,
  };
}

/**
 * Asks the raft leader for one membership change and waits for its answer. Right after an election
 * the leader refuses changes until it commits an entry of its term ("retry shortly"): retried up to
 * membershipChangeRetriesMax times, membershipChangeRetryMs apart (limits.ts).
 */
async function proposeMembershipChange(
  leader: NodeHandle,
  cmd: { kind: 'add_server' | 'remove_server'; node_id: NodeId },
): Promise<ClientReply> {
  let r = await leader.controlAwait(cmd);
  for (let i = 0; i < membershipChangeRetriesMax && !r.ok && /retry shortly/.test(r.error); i++) {
    await new Promise((res) => setTimeout(res, membershipChangeRetryMs));
    r = await leader.controlAwait(cmd);
  }
  return r;
}

export class Cluster {
  readonly id = randomUUID();
  readonly created = new Date().toISOString();
  readonly nodes = new Map<NodeId, NodeHandle>();
  readonly fabric: Fabric<WirePayload>;
  readonly regions: Record<NodeId, number> = {};
  leaderId: NodeId | undefined;
  epoch = 0;
  /** Raft: index of the newest committed configuration seen (membership_changed or a status). */
  private raftConfigIndex = 0;
  /** Raft: nodes started by POST nodes whose addition is not yet seen committed. */
  private readonly raftJoining = new Set<NodeId>();
  private nextNodeNumber = 1;
  private readonly driver: LiveFabricDriver;
  private sweepTimer: NodeJS.Timeout;
  /** Bounded history: a ring of historyOpsMax operations; what falls off is counted. */
  private readonly historyRing = new HistoryRing(historyOpsMax);
  /**
   * When each fault (pause, crash, stall, partition, latency, drop, clock skew, heal) started and
   * ended, for the history's fault lane: network faults are seen through the fabric's
   * onFaultChange, node faults where this class applies them, skew and stall by the routes.
   */
  readonly faults = new FaultLog(faultIntervalsMax);
  writes = 0;
  reads = 0;
  writeFailures = 0;
  /** Last statuses seen, for metrics collection without a round trip. */
  lastStatus = new Map<NodeId, CoreStatus>();
  /** Nodes that did not answer within the deadline at the last aggregate view. */
  private readonly unresponsive = new Set<NodeId>();
  /** The status call in flight per node (at most one). */
  private readonly statusCalls = new Map<NodeHandle, Promise<CoreStatus | undefined>>();
  /** Each node's durable storage; kept across crashes, dropped when the node is removed. */
  private readonly durableStores = new Map<NodeId, DurableStore>();
  /** Worker exits that were not asked for (crashes), and restarts. */
  crashes = 0;
  restarts = 0;

  constructor(
    readonly config: ClusterConfig,
    readonly timings: CoreTimings,
    private readonly hooks: ClusterHooks,
    private readonly options: ClusterOptions = {},
  ) {
    const timingsCheck = validateTimings(timings);
    if (!timingsCheck.ok) throw new RangeError(`invalid replication timings: ${timingsCheck.error}`);
    this.fabric = new Fabric<WirePayload>({ rng: liveRng(), ...fabricLimitsFromEnv() });
    this.driver = new LiveFabricDriver(this.fabric, (to, frames) => this.nodes.get(to)?.deliverNet(frames));
    this.fabric.onFaultChange = (change) => this.recordFault(change);
    this.sweepTimer = setInterval(() => {
      const now = Date.now();
      for (const n of this.nodes.values()) n.sweep(now);
    }, requestSweepMs);
    this.sweepTimer.unref();
  }

  /** Spawns the initial nodes and waits until every actor answers. */
  async start(): Promise<void> {
    const ids: NodeId[] = [];
    for (let i = 0; i < this.config.node_count; i++) ids.push(`n${this.nextNodeNumber++}`);
    ids.forEach((id, i) => {
      this.regions[id] = Math.floor((i * this.config.regions) / ids.length);
    });
    for (const id of ids) this.fabric.addNode(id);
    this.applyRegionLatency();
    for (const id of ids) this.spawn(id, ids);
    if (this.config.strategy === 'single_leader') this.leaderId = ids[0];
    await Promise.all([...this.nodes.values()].map((n) => n.ready()));
  }

  private spawn(id: NodeId, peers: NodeId[], restore?: ArrayBuffer[]): NodeHandle {
    let durable = this.durableStores.get(id);
    if (durable === undefined) {
      durable = new DurableStore();
      this.durableStores.set(id, durable);
    }
    const coreOpts: ConstructorParameters<typeof NodeHandle>[1] = {
      id,
      cluster_id: this.id,
      peers,
      config: this.config,
      timings: this.timings,
      regions: this.regions,
    };
    if (this.options.storedBytesMax !== undefined) coreOpts.storedBytesMax = this.options.storedBytesMax;
    const handle: NodeHandle = new NodeHandle(
      id,
      coreOpts,
      Math.floor(Math.random() * 2 ** 31),
      this.timings.requestTimeoutMs,
      {
        onNet: (fromId, buf) => this.driver.submitFrames(fromId, buf),
        onEvents: (nodeId, events) => {
          for (const e of events) {
            if (e.type === 'leader_elected') this.leaderId = e.node_id ?? nodeId;
            if (e.type === 'membership_changed') this.onMembershipChanged(e);
            this.hooks.event(this.id, { ...e, node_id: e.node_id ?? nodeId });
          }
        },
        onExit: (nodeId, exit) => this.onNodeExit(handle, nodeId, exit),
      },
      durable,
      restore,
    );
    this.nodes.set(id, handle);
    return handle;
  }

  /**
   * A worker exited. Stopped on purpose: nothing to do. Otherwise the node is crashed: its pending
   * requests have failed (NodeHandle), it shows as `crashed` until restarted, and a crashed
   * single-leader leader is failed over at once (as removal does) so the cluster keeps serving.
   */
  private onNodeExit(handle: NodeHandle, nodeId: NodeId, exit: ExitInfo): void {
    this.hooks.nodeExit(this.id, nodeId, exit);
    if (exit.reason === 'stopped' || this.nodes.get(nodeId) !== handle) return;
    this.crashes++;
    const now = preciseNowMs();
    this.faults.close(`pause ${nodeId}`, now);
    this.faults.open(`crash ${nodeId}`, { kind: 'crash', node: nodeId }, now);
    this.unresponsive.delete(nodeId);
    if (this.config.strategy === 'single_leader' && this.leaderId === nodeId) {
      this.failover().catch(() => {
        // No live node answered: leaderId stays unset until a restart fails over again.
      });
    }
  }

  /** Nodes whose worker is running (not crashed, not removed): what REPLSIM_MAX_NODES counts. */
  get liveNodes(): number {
    let n = 0;
    for (const h of this.nodes.values()) if (!h.isDown) n++;
    return n;
  }

  /** Bytes held in the nodes' durable storage. */
  durableBytes(): Record<NodeId, number> {
    const out: Record<NodeId, number> = {};
    for (const id of this.nodes.keys()) out[id] = this.durableStores.get(id)?.bytes ?? 0;
    return out;
  }

  /**
   * POST nodes/{id}/crash: the worker is killed with no goodbye. Its durable storage stays; its
   * pending requests fail at once; peers' messages to it are lost until it restarts.
   */
  async crash(nodeId: NodeId): Promise<void> {
    const n = this.nodes.get(nodeId);
    if (!n) throw new ReplicationError('not_found', `node ${nodeId} not found in cluster ${this.id}`);
    if (n.isDown) {
      throw new ReplicationError('node_crashed', `node ${nodeId} has already crashed (${n.exit?.reason ?? 'exited'})`);
    }
    await n.crash();
  }

  /**
   * POST nodes/{id}/restart: a new worker for a crashed node, built from its durable storage (the
   * strategy's DurableFold), told the current members and (single-leader) the current leader; it
   * catches up through its strategy's own repair (log retransmission or snapshot, anti-entropy,
   * hinted handoff, read repair). A single-leader cluster with no live leader fails over after.
   */
  async restart(nodeId: NodeId): Promise<NodeHandle> {
    const old = this.nodes.get(nodeId);
    if (!old) throw new ReplicationError('not_found', `node ${nodeId} not found in cluster ${this.id}`);
    if (!old.isDown) {
      throw new ReplicationError('refused', `node ${nodeId} is ${old.state}, not crashed; crash it first`);
    }
    if (!canRestart(this.config.strategy)) {
      throw new ReplicationError('refused', `restarting a crashed ${this.config.strategy} node is not supported yet`);
    }
    const restore = this.durableStores.get(nodeId)?.contents() ?? [];
    const handle = this.spawn(nodeId, [...this.nodes.keys()], restore);
    this.fabric.setDeliverable(nodeId, true);
    try {
      if (this.config.strategy === 'single_leader') {
        const leader = this.leaderId !== undefined ? this.nodes.get(this.leaderId) : undefined;
        if (leader !== undefined && leader !== handle && !leader.isDown) {
          await handle.remote.control({ kind: 'set_leader', leader_id: leader.id, epoch: this.epoch });
        }
      }
      await handle.ready();
    } catch (err) {
      throw new ReplicationError('node_crashed', `node ${nodeId} did not come back: ${(err as Error).message}`);
    }
    this.restarts++;
    this.faults.close(`crash ${nodeId}`, preciseNowMs());
    if (this.config.strategy === 'single_leader') {
      const leader = this.leaderId !== undefined ? this.nodes.get(this.leaderId) : undefined;
      if (leader === undefined || leader.isDown || leader === handle) await this.failover();
    }
    this.kick();
    return handle;
  }

  /** The latency a link has with no fault applied: the inter-region latency between regions, else 0. */
  private baseLatencyMs(from: NodeId, to: NodeId): number {
    if (this.config.regions <= 1 || this.regions[from] === this.regions[to]) return 0;
    return this.config.inter_region_latency_ms;
  }

  /** The fabric's fault settings changed: open or close the matching interval of the fault log. */
  private recordFault(change: FabricFaultChange): void {
    const now = preciseNowMs();
    switch (change.kind) {
      case 'latency': {
        const key = `latency ${change.from}>${change.to}`;
        if (change.ms === this.baseLatencyMs(change.from, change.to)) this.faults.close(key, now);
        else this.faults.open(key, { kind: 'latency', from: change.from, to: change.to, value: change.ms }, now);
        return;
      }
      case 'drop': {
        const key = `drop ${change.from}>${change.to}`;
        if (change.rate === 0) this.faults.close(key, now);
        else this.faults.open(key, { kind: 'drop', from: change.from, to: change.to, value: change.rate }, now);
        return;
      }
      case 'partition':
        this.faults.open(
          `partition ${change.partitionId}`,
          {
            kind: 'partition',
            partition_id: change.partitionId,
            group_a: change.groupA,
            group_b: change.groupB,
          },
          now,
        );
        return;
      case 'heal':
        this.faults.close(`partition ${change.partitionId}`, now);
        return;
      case 'clear':
        this.faults.closeWhere((k) => /^(partition|latency|drop) /.test(k), now);
        this.faults.instant({ kind: 'heal' }, now);
        return;
      default:
        return unreachable(change);
    }
  }

  /** Inter-region latency is the base topology, re-applied after faults are cleared. */
  applyRegionLatency(): void {
    if (this.config.regions <= 1) return;
    const ids = this.fabric.nodes();
    for (const a of ids)
      for (const b of ids) {
        if (a !== b && this.regions[a] !== this.regions[b])
          this.fabric.setLatency(a, b, this.config.inter_region_latency_ms);
      }
  }

  // ---- fabric driving (live mode) ----

  kick(): void {
    this.driver.kick();
  }

  // ---- client operations ----

  defaultTarget(): NodeId | undefined {
    if (this.leaderId && this.nodes.has(this.leaderId)) return this.leaderId;
    return this.nodes.keys().next().value;
  }

  clientOp(nodeId: NodeId, op: ClientOp): Promise<ClientReply> {
    return new Promise((resolve) => this.submit(nodeId, op, resolve));
  }

  /**
   * A client operation on one node, answered through `done` (the hot path of writes and reads:
   * no promise per layer). The outcome is recorded in the history and the counters first.
   */
  submit(nodeId: NodeId, op: ClientOp, done: (r: ClientReply) => void): void {
    const node = this.nodes.get(nodeId);
    if (!node) {
      done({ id: 0, ok: false, code: 'not_found', error: `node ${nodeId} not found in cluster ${this.id}` });
      return;
    }
    if (node.state === 'paused') {
      done({ id: 0, ok: false, code: 'paused', error: `node ${nodeId} is paused` });
      return;
    }
    // A crashed node answers through its handle at once (node_crashed).
    const invokeMs = preciseNowMs();
    node.submit(op, (reply) => {
      this.record(node, op, reply, invokeMs, preciseNowMs());
      done(reply);
    });
  }

  private record(node: NodeHandle, op: ClientOp, reply: ClientReply, invokeMs: number, completeMs: number): void {
    const nodeId = node.id;
    if (reply.ok) {
      if (op.op === 'read') this.reads++;
      else this.writes++;
    } else if (op.op !== 'read') this.writeFailures++;
    const outcome: HistoryOp['outcome'] = reply.ok ? 'ok' : reply.indeterminate ? 'info' : 'fail';
    const client = op.client_id ?? node.httpClientId;
    const h = this.historyRing;
    switch (op.op) {
      case 'write':
        h.push(client, nodeId, 'write', op.key, op.value, invokeMs, completeMs, outcome);
        break;
      case 'delete':
        h.push(client, nodeId, 'delete', op.key, null, invokeMs, completeMs, outcome);
        break;
      case 'read':
        if (reply.ok || reply.code === 'not_found') {
          const seen = reply.ok && reply.result.kind === 'entry' ? reply.result.entry.value : null;
          h.push(client, nodeId, 'read', op.key, seen, invokeMs, completeMs, 'ok');
        }
        break;
      case 'batch':
        for (const e of op.entries) h.push(client, nodeId, 'write', e.key, e.value, invokeMs, completeMs, outcome);
        break;
    }
  }

  /** The recorded operations, oldest first. */
  history(): HistoryOp[] {
    return this.historyRing.toArray();
  }

  /** Operations that fell off the history cap. */
  get historyDropped(): number {
    return this.historyRing.dropped;
  }

  /** Up to `limit` recorded operations from index `since` on (HistoryRing.slice), and the ring's bounds. */
  historyPage(
    since: number,
    limit: number,
  ): { first: number; ops: HistoryOp[]; firstIndex: number; nextIndex: number } {
    const page = this.historyRing.slice(since, limit);
    return { ...page, firstIndex: this.historyRing.firstIndex, nextIndex: this.historyRing.nextIndex };
  }

  /**
   * Counts peer messages by type on each fabric link (read from their bytes, link-stats.ts) while
   * on; off, they are counted without a type. On while a /ws client watches this cluster's links.
   */
  countMessageKinds(on: boolean): void {
    this.driver.kindOf = on ? messageKindTag : undefined;
  }

  // ---- node control ----

  async pause(nodeId: NodeId): Promise<void> {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    if (n.isDown) throw new ReplicationError('node_crashed', `node ${nodeId} has crashed; restart it first`);
    n.state = 'paused';
    this.fabric.setDeliverable(nodeId, false);
    this.faults.open(`pause ${nodeId}`, { kind: 'pause', node: nodeId }, preciseNowMs());
    await n.remote.pause();
  }

  async resume(nodeId: NodeId): Promise<void> {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    if (n.isDown) {
      const restart = `POST .../nodes/${nodeId}/restart`;
      throw new ReplicationError('node_crashed', `node ${nodeId} has crashed; restart it with ${restart}`);
    }
    n.state = 'online';
    this.fabric.setDeliverable(nodeId, true);
    this.faults.close(`pause ${nodeId}`, preciseNowMs());
    await n.remote.resume();
    this.kick();
  }

  /**
   * A fresh node id for add-node. Node numbers are frame indexes on the wire (protocol/actor.ts), so
   * they stay below the reserved ones: past that (32,765 add-node calls on one cluster) a 409.
   */
  private newNodeId(): string {
    if (this.nextNodeNumber >= reservedFrameIndexMin) {
      throw new ReplicationError(
        'refused',
        `cluster ${this.id} has used all ${reservedFrameIndexMin - 1} node ids; create a new cluster`,
      );
    }
    return `n${this.nextNodeNumber++}`;
  }

  async addNode(): Promise<NodeHandle> {
    if (this.config.strategy === 'raft') return this.addRaftNode();
    const id = this.newNodeId();
    const peers = [...this.nodes.keys(), id];
    this.regions[id] = peers.length % Math.max(1, this.config.regions);
    this.fabric.addNode(id);
    this.applyRegionLatency();
    const handle = this.spawn(id, peers);
    if (this.leaderId) await handle.remote.control({ kind: 'set_leader', leader_id: this.leaderId, epoch: this.epoch });
    await handle.ready();
    await this.controlLive({ kind: 'peers', peers }, id);
    return handle;
  }

  /** The authoritative raft leader (authoritativeRaftLeader), after asking every node. */
  async raftLeader(): Promise<NodeHandle | undefined> {
    const st = await this.statuses();
    this.reconcileRaftMembership(st);
    const id = this.authoritativeRaftLeader(st);
    return id === undefined ? undefined : this.nodes.get(id);
  }

  /**
   * The one raft leader `state` names: of the nodes that claim leadership, are online (not paused,
   * crashed or silent) and reach a majority of their configuration's voters through the fabric
   * (online voters not partitioned away from it), the one of the highest term. A paused or
   * partitioned former leader still says `leader` (it cannot know better until it hears a newer
   * term or CheckQuorum steps it down) and is shown with stale_leader: true.
   */
  private authoritativeRaftLeader(st: ReadonlyMap<NodeId, CoreStatus>): NodeId | undefined {
    let best: NodeId | undefined;
    let bestTerm = -1;
    for (const [id, s] of st) {
      const h = this.nodes.get(id);
      if (s.role !== 'leader' || !h || h.isDown || h.state !== 'online' || (s.term ?? 0) <= bestTerm) continue;
      if (!this.reachesRaftMajority(id, raftVotersOf(s))) continue;
      best = id;
      bestTerm = s.term ?? 0;
    }
    return best;
  }

  private reachesRaftMajority(id: NodeId, voters: readonly NodeId[]): boolean {
    let reached = 0;
    for (const v of voters) {
      const h = this.nodes.get(v);
      if (v === id) reached++;
      else if (h && !h.isDown && h.state === 'online' && !this.fabric.isBlocked(id, v)) reached++;
    }
    return reached >= Math.floor(voters.length / 2) + 1;
  }

  /**
   * A committed raft configuration (membership_changed from a leader, or a leader's status that
   * says its latest configuration is committed): the members it dropped are stopped and leave the
   * cluster, as DELETE would have done. A node still joining (its add not yet seen committed) is
   * left alone; configurations older than the last one seen are ignored (several leaders report).
   */
  private onRaftConfigCommitted(voters: readonly NodeId[], index: number): void {
    if (index <= this.raftConfigIndex) return;
    this.raftConfigIndex = index;
    for (const id of voters) this.raftJoining.delete(id);
    for (const id of [...this.nodes.keys()]) {
      if (voters.includes(id) || this.raftJoining.has(id)) continue;
      this.removeNode(id, { committed: true })
        .then(() =>
          this.hooks.event(this.id, {
            type: 'node_state_changed',
            node_id: id,
            data: { state: 'offline', reason: 'removed' },
          }),
        )
        .catch(() => {
          // Already gone (a concurrent DELETE finished it): nothing left to stop.
        });
    }
  }

  /** A committed change's answer carries the configuration: {key: '__config__', value: voters, version: index}. */
  private onRaftChangeAnswered(r: ClientReply): void {
    if (!r.ok || r.result.kind !== 'entry') return;
    const { value, version } = r.result.entry;
    this.onRaftConfigCommitted(
      value.split(',').filter((v) => v !== ''),
      version,
    );
  }

  private onMembershipChanged(e: CoreEvent): void {
    const voters = e.data?.['voters'];
    const index = e.data?.['index'];
    if (!Array.isArray(voters) || typeof index !== 'number') return;
    this.onRaftConfigCommitted(
      voters.filter((v): v is NodeId => typeof v === 'string'),
      index,
    );
  }

  /** The fallback for a lost membership_changed: the authoritative leader's committed config. */
  private reconcileRaftMembership(st: ReadonlyMap<NodeId, CoreStatus>): void {
    if (this.config.strategy !== 'raft') return;
    const leader = this.authoritativeRaftLeader(st);
    const extra = leader === undefined ? undefined : st.get(leader)?.extra;
    if (!extra || extra['config_committed'] !== true || typeof extra['config_index'] !== 'number') return;
    this.onRaftConfigCommitted(raftVotersOf(st.get(leader as NodeId) as CoreStatus), extra['config_index']);
  }

  /**
   * Raft membership goes through the log, one single-server change at a time: start the new node
   * knowing the current configuration plus itself, then have the leader append the new
   * configuration; the leader catches the node up with AppendEntries or InstallSnapshot.
   */
  private async addRaftNode(): Promise<NodeHandle> {
    const leader = await this.raftLeader();
    if (!leader) {
      throw new ReplicationError('no_leader', 'no leader elected yet; a raft membership change needs a leader');
    }
    const id = this.newNodeId();
    const peers = [...this.nodes.keys(), id];
    this.regions[id] = 0;
    this.fabric.addNode(id);
    this.raftJoining.add(id);
    const handle = this.spawn(id, peers);
    await handle.ready();
    const r = await proposeMembershipChange(leader, { kind: 'add_server', node_id: id });
    if (r.ok) {
      this.onRaftChangeAnswered(r);
      return handle;
    }
    if (r.indeterminate) {
      // The entry may still commit: the node stays (a member if it does; DELETE withdraws it).
      throw new ReplicationError(
        'timeout',
        `${id} was started and its addition proposed, but it was not committed within ` +
          `${this.timings.requestTimeoutMs} ms; ` +
          `${id} joins if the entry commits (DELETE ${id} withdraws it)`,
      );
    }
    this.raftJoining.delete(id);
    this.nodes.delete(id);
    this.fabric.removeNode(id);
    await handle.terminate();
    throw new ReplicationError(r.code, r.error);
  }

  /**
   * DELETE of a raft member: the leader appends a configuration without it, finds it already gone
   * from the committed one, or waits on the pending entry that removes it. Returns once committed;
   * a refusal throws its code naming why; a commit timeout throws 'timeout' saying the removal is pending: if the
   * entry commits, the node is stopped and leaves (onRaftConfigCommitted), and a repeated DELETE
   * waits for the same entry instead of proposing another.
   */
  private async removeRaftMember(nodeId: NodeId): Promise<void> {
    const leader = await this.raftLeader();
    if (!this.nodes.has(nodeId)) return; // a committed configuration seen meanwhile removed it
    if (!leader) {
      throw new ReplicationError('no_leader', 'no leader elected yet; a raft membership change needs a leader');
    }
    const r = await proposeMembershipChange(leader, { kind: 'remove_server', node_id: nodeId });
    if (r.ok) {
      this.onRaftChangeAnswered(r);
      return;
    }
    if (r.indeterminate) {
      throw new ReplicationError(
        'timeout',
        `the removal of ${nodeId} was proposed but not committed within ${this.timings.requestTimeoutMs} ms ` +
          `(a majority of the new configuration is unreachable or paused); it stays pending: if it commits, ` +
          `${nodeId} is stopped and leaves the cluster; DELETE again to wait for the outcome`,
      );
    }
    throw new ReplicationError(r.code, r.error);
  }

  /** `committed`: raft already committed a configuration without the node; only stop it. */
  async removeNode(nodeId: NodeId, opts: { committed?: boolean } = {}): Promise<void> {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    if (this.config.strategy === 'raft' && this.nodes.size > 1 && opts.committed !== true)
      await this.removeRaftMember(nodeId);
    if (this.nodes.get(nodeId) !== n) return; // stopped meanwhile by the committed configuration
    this.raftJoining.delete(nodeId);
    this.nodes.delete(nodeId);
    // A removed node's faults end with it (its node faults, and those of its links).
    const ofNode = (k: string): boolean =>
      k.endsWith(` ${nodeId}`) || k.includes(` ${nodeId}>`) || k.endsWith(`>${nodeId}`);
    this.faults.closeWhere(ofNode, preciseNowMs());
    this.fabric.removeNode(nodeId);
    delete this.regions[nodeId];
    this.durableStores.get(nodeId)?.clear();
    this.durableStores.delete(nodeId);
    this.unresponsive.delete(nodeId);
    this.lastStatus.delete(nodeId);
    await n.terminate();
    const peers = [...this.nodes.keys()];
    if (this.config.strategy !== 'raft') await this.controlLive({ kind: 'peers', peers });
    if (this.config.strategy === 'leaderless' && this.config.quorum_n > peers.length && peers.length > 0) {
      // The replication factor cannot exceed the nodes left: shrink N (and W, R with it). Capping W
      // and R at the new N keeps W + R > N, since only N went down.
      const n = peers.length;
      this.config.quorum_n = n;
      this.config.quorum_w = Math.min(this.config.quorum_w, n);
      this.config.quorum_r = Math.min(this.config.quorum_r, n);
      const args = { n, w: this.config.quorum_w, r: this.config.quorum_r };
      await this.controlLive({ kind: 'custom', name: 'set_quorum', args });
    }
    if (this.config.strategy === 'single_leader' && this.leaderId === nodeId) await this.failover();
  }

  /**
   * A control to every node whose worker runs (crashed ones learn the current state when they
   * restart); `except` skips one. A node that fails meanwhile does not fail the others.
   */
  private async controlLive(cmd: Parameters<NodeHandle['remote']['control']>[0], except?: NodeId): Promise<void> {
    await Promise.allSettled(
      [...this.nodes.values()].filter((n) => n.id !== except && !n.isDown).map((n) => n.remote.control(cmd)),
    );
  }

  /**
   * single_leader failover: promote the most up-to-date online follower (writes it never saw are
   * orphaned). Crashed nodes and nodes silent past the deadline are not candidates.
   */
  async failover(): Promise<NodeId | undefined> {
    const candidates = [...this.nodes.values()].filter((n) => n.state === 'online' && !n.isDown);
    const answered = await Promise.all(
      candidates.map(async (n) => ({ n, s: await withinMs(n.remote.status(), nodeCallDeadlineMs) })),
    );
    const statuses = answered.filter((x): x is { n: NodeHandle; s: CoreStatus } => x.s !== undefined);
    if (statuses.length === 0) {
      this.leaderId = undefined;
      return undefined;
    }
    // Most up-to-date log first: the epoch of the last entry, then its index (Raft §5.4.1's rule).
    // By last_applied alone a restarted ex-leader with orphaned entries of an old epoch won over the
    // follower holding a newer acknowledged semi_sync write (single_leader swarm, seed 1653).
    statuses.sort(
      (a, b) =>
        lastEntryEpochOf(b.s) - lastEntryEpochOf(a.s) ||
        b.s.last_applied - a.s.last_applied ||
        nodeIndex(a.n.id) - nodeIndex(b.n.id),
    );
    const chosen = (statuses[0] as { n: NodeHandle }).n.id;
    this.epoch++;
    this.leaderId = chosen;
    await this.controlLive({ kind: 'set_leader', leader_id: chosen, epoch: this.epoch });
    this.hooks.event(this.id, {
      type: 'leader_elected',
      node_id: chosen,
      data: { epoch: this.epoch, reason: 'failover' },
    });
    return chosen;
  }

  // ---- views ----

  async nodeStatus(nodeId: NodeId): Promise<NodeStatus | undefined> {
    const n = this.nodes.get(nodeId);
    if (!n) return undefined;
    const probe = await this.probe(n);
    return this.toNodeStatus(n, probe.ok ? probe.status : this.lastKnown(nodeId), undefined);
  }

  /**
   * One node's status within the deadline; a crashed node answers at once, a silent one is named.
   * One status call per node at a time: views asked meanwhile share it, and once a node has been
   * found unresponsive, views do not wait for it again until that call has come back.
   */
  async probe(n: NodeHandle): Promise<StatusProbe> {
    if (n.isDown) return { ok: false, why: 'crashed' };
    let call = this.statusCalls.get(n);
    const shared = call !== undefined;
    if (call === undefined) {
      call = n.remote
        .status()
        .then(
          (st) => {
            if (this.nodes.get(n.id) === n) {
              this.lastStatus.set(n.id, st);
              this.unresponsive.delete(n.id);
            }
            return st;
          },
          () => undefined,
        )
        .finally(() => this.statusCalls.delete(n));
      this.statusCalls.set(n, call);
    }
    const s = shared && this.unresponsive.has(n.id) ? undefined : await withinMs(call, nodeCallDeadlineMs);
    if (s === undefined) {
      if (n.isDown) return { ok: false, why: 'crashed' };
      this.unresponsive.add(n.id);
      return { ok: false, why: 'unresponsive' };
    }
    return { ok: true, status: s };
  }

  /** The last status a node gave, or an empty one (a node that never answered). */
  private lastKnown(nodeId: NodeId): CoreStatus {
    return this.lastStatus.get(nodeId) ?? { role: 'unknown', commit_index: 0, last_applied: 0, leader_id: '', lag: 0 };
  }

  /** crashed (worker gone), unresponsive (silent past the deadline at the last look), else the handle's state. */
  private shownState(n: NodeHandle): NodeStatus['state'] {
    if (n.isDown) return n.state === 'offline' ? 'offline' : 'crashed';
    if (this.unresponsive.has(n.id)) return 'unresponsive';
    return n.state;
  }

  private toNodeStatus(n: NodeHandle, s: CoreStatus, leader: CoreStatus | undefined): NodeStatus {
    const fromLeader = leader?.followers?.[n.id]?.lag_entries;
    return {
      id: n.id,
      cluster_id: this.id,
      strategy: this.config.strategy,
      role: s.role,
      state: this.shownState(n),
      commit_index: s.commit_index,
      last_applied: s.last_applied,
      leader_id: s.leader_id,
      peers: [...this.nodes.keys()].filter((p) => p !== n.id),
      lag: Math.max(s.lag, fromLeader ?? 0),
    };
  }

  /**
   * The statuses of the nodes that answered within nodeCallDeadlineMs (crashed nodes are not
   * asked); the others keep their last known status in lastStatus and show as crashed or
   * unresponsive in state().
   */
  async statuses(): Promise<Map<NodeId, CoreStatus>> {
    const nodes = [...this.nodes.values()];
    const probes = await Promise.all(nodes.map((n) => this.probe(n)));
    const m = new Map<NodeId, CoreStatus>();
    nodes.forEach((n, i) => {
      const p = probes[i] as StatusProbe;
      if (p.ok) m.set(n.id, p.status);
    });
    for (const id of [...this.lastStatus.keys()]) if (!this.nodes.has(id)) this.lastStatus.delete(id);
    return m;
  }

  async state(): Promise<ClusterState> {
    const st = await this.statuses();
    let leaderId = this.leaderId;
    if (this.config.strategy === 'raft') {
      this.reconcileRaftMembership(st);
      leaderId = this.authoritativeRaftLeader(st);
      this.leaderId = leaderId;
    }
    const leaderStatus = leaderId ? st.get(leaderId) : undefined;
    const nodes: Record<string, NodeStatus> = {};
    for (const n of this.nodes.values())
      nodes[n.id] = this.toNodeStatus(n, st.get(n.id) ?? this.lastKnown(n.id), leaderStatus);
    if (this.config.strategy === 'raft') {
      // A node that still believes it leads but is not the authoritative leader (paused, cut off).
      for (const [id, node] of Object.entries(nodes))
        if (node.role === 'leader' && id !== leaderId) node.stale_leader = true;
    }
    const partitions: Record<string, Partition> = {};
    for (const [pid, p] of this.fabric.partitions()) {
      partitions[pid] = {
        id: pid,
        group_a: Object.fromEntries(p.groupA.map((x) => [x, true])),
        group_b: Object.fromEntries(p.groupB.map((x) => [x, true])),
      };
    }
    const stats = this.fabric.stats();
    const state: ClusterState = {
      id: this.id,
      config: this.config,
      node_ids: [...this.nodes.keys()],
      nodes,
      metrics: this.metrics(st),
      created: this.created,
      partitions,
      dropped_messages: stats.dropped_full,
    };
    if (leaderId) state.leader_id = leaderId;
    if (this.config.regions > 1) state.node_regions = { ...this.regions };
    return state;
  }

  metrics(st: Map<NodeId, CoreStatus> = this.lastStatus): Record<string, unknown> {
    const stats = this.fabric.stats();
    const lag: Record<string, number> = {};
    const leader = this.leaderId ? st.get(this.leaderId) : undefined;
    if (leader?.followers) for (const [f, p] of Object.entries(leader.followers)) lag[f] = p.lag_ms;
    const extra: Record<string, unknown> = {};
    for (const [id, s] of st) if (s.extra) extra[id] = s.extra;
    const down: Record<NodeId, string> = {};
    for (const n of this.nodes.values()) if (n.isDown && n.exit) down[n.id] = n.exit.reason;
    return {
      crashed_nodes: down,
      crashes: this.crashes,
      restarts: this.restarts,
      durable_bytes: this.durableBytes(),
      writes: this.writes,
      reads: this.reads,
      write_failures: this.writeFailures,
      dropped_messages: stats.dropped_full,
      fabric: stats,
      replication_lag_ms: lag,
      history_ops: this.historyRing.length,
      history_dropped: this.historyDropped,
      nodes: extra,
    };
  }

  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    this.driver.close();
    await Promise.all([...this.nodes.values()].map((n) => n.terminate()));
    this.nodes.clear();
    for (const d of this.durableStores.values()) d.clear();
    this.durableStores.clear();
  }
}

/** A raft node's configuration as its status reports it (CoreStatus.extra.voters). */
function raftVotersOf(s: CoreStatus): NodeId[] {
  const v = s.extra?.['voters'];
  return Array.isArray(v) ? v.filter((x): x is NodeId => typeof x === 'string') : [];
}
