/**
 * One simulated cluster in live mode: its node actors (worker_threads) and their lifecycle (spawn,
 * crash, restart, add, remove, pause, resume, single-leader failover), its fabric driven by the
 * real clock in the front process, its leader bookkeeping, and the entry point of client operations.
 * Every node-to-node message passes through the fabric here; the fabric decides latency, drops,
 * partitions and back-pressure, and deliveries to a worker are batched (one post per destination
 * per pass). Each node's durable storage (DurableStore) lives here too, so a crashed node can be
 * restarted from it. Views that aggregate over nodes wait at most nodeCallDeadlineMs per node.
 * Protocol decisions stay in the cores; the leaves are under cluster/ (status tracking, raft
 * membership, the operation history, the fault log's link settings, the wire views, live time).
 */
import { randomUUID } from 'node:crypto';
import { Fabric } from '../fabric/fabric.js';
import { reservedFrameIndexMin } from '../../protocol/actor.js';
import { LiveFabricDriver, type WirePayload } from '../fabric/live.js';
import type { ClusterState, NodeStatus } from '../../protocol/replication.js';
import { liveRng } from '../util/rng.js';
import {
  type ClientOp,
  type ClientReply,
  type ClusterConfig,
  type CoreEvent,
  type CoreStatus,
  type CoreTimings,
  type NodeId,
} from './core.js';
import { NodeHandle, type ExitInfo } from './node-handle.js';
import { FaultLog, type HistoryOp } from './history.js';
import { messageKindTag } from './link-stats.js';
import { DurableStore } from './durable-store.js';
import {
  faultIntervalsMax,
  fabricLimitsFromEnv,
  historyOpsMax,
  nodeCallDeadlineMs,
  requestSweepMs,
  validateTimings,
} from './limits.js';
import { canRestart } from './cores/index.js';
import { ReplicationError } from './errors.js';
import { applyRegionLatency, baseLatencyMs, isFaultOfNode, recordFault } from './cluster/fault-recording.js';
import { NodeStatusTracker, type StatusProbe } from './cluster/node-status.js';
import { OperationHistory } from './cluster/operation-history.js';
import { RaftMembership } from './cluster/raft-membership.js';
import { preciseNowMs, withinMs } from './cluster/time.js';
import { clusterMetrics, partitionsView, toNodeStatus } from './cluster/views.js';
import { failoverChoice } from './cluster/failover.js';

export type { HistoryOp } from './history.js';
export type { StatusProbe } from './cluster/node-status.js';
export { preciseNowMs, withinMs } from './cluster/time.js';
export { toKVEntry } from './cluster/views.js';

export interface ClusterHooks {
  event: (clusterId: string, e: CoreEvent) => void;
  /** Every worker exit, whatever its reason (stopped ones included, for the exit counter). */
  nodeExit: (clusterId: string, nodeId: string, exit: ExitInfo) => void;
}

export interface ClusterOptions {
  /** Per-node budget on stored bytes (CoreOptions.storedBytesMax); absent: unbounded. */
  storedBytesMax?: number;
}

export class Cluster {
  readonly id = randomUUID();
  readonly created = new Date().toISOString();
  readonly nodes = new Map<NodeId, NodeHandle>();
  readonly fabric: Fabric<WirePayload>;
  readonly regions: Record<NodeId, number> = {};
  leaderId: NodeId | undefined;
  epoch = 0;
  private nextNodeNumber = 1;
  private readonly driver: LiveFabricDriver;
  private sweepTimer: NodeJS.Timeout;
  /** Client operations: the bounded history and the success and failure counters. */
  private readonly operations = new OperationHistory(historyOpsMax);
  /**
   * When each fault (pause, crash, stall, partition, latency, drop, clock skew, heal) started and
   * ended, for the history's fault lane: network faults are seen through the fabric's
   * onFaultChange, node faults where this class applies them, skew and stall by the routes.
   */
  readonly faults = new FaultLog(faultIntervalsMax);
  /** The nodes' last statuses, who was silent, and the status call in flight per node. */
  private readonly status = new NodeStatusTracker(this.nodes);
  /** Raft: the authoritative leader and the committed configuration seen (unused by the others). */
  private readonly raft: RaftMembership;
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
    this.fabric.onFaultChange = (change) =>
      recordFault(this.faults, change, (from, to) => baseLatencyMs(config, this.regions, from, to), preciseNowMs());
    this.raft = new RaftMembership({
      nodes: this.nodes,
      fabric: this.fabric,
      requestTimeoutMs: timings.requestTimeoutMs,
      leader: () => this.raftLeader(),
      startNode: () => {
        const id = this.newNodeId();
        this.regions[id] = 0;
        this.fabric.addNode(id);
        return this.spawn(id, [...this.nodes.keys(), id]);
      },
      discardNode: async (handle) => {
        this.nodes.delete(handle.id);
        this.fabric.removeNode(handle.id);
        await handle.terminate();
      },
      stopDropped: (id) => this.stopDroppedMember(id),
    });
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
            if (e.type === 'membership_changed') this.raft.membershipChanged(e);
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
    this.status.crashed(nodeId);
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

  /** Inter-region latency is the base topology, re-applied after faults are cleared. */
  applyRegionLatency(): void {
    applyRegionLatency(this.fabric, this.config, this.regions);
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
      this.operations.record(op.client_id ?? node.httpClientId, nodeId, op, reply, invokeMs, preciseNowMs());
      done(reply);
    });
  }

  /** Successful writes (deletes and batches included) and reads, and failed writes. */
  get writes(): number {
    return this.operations.writes;
  }

  get reads(): number {
    return this.operations.reads;
  }

  get writeFailures(): number {
    return this.operations.writeFailures;
  }

  /** The recorded operations, oldest first. */
  history(): HistoryOp[] {
    return this.operations.toArray();
  }

  /** Operations that fell off the history cap. */
  get historyDropped(): number {
    return this.operations.dropped;
  }

  /** Up to `limit` recorded operations from index `since` on (HistoryRing.slice), and the ring's bounds. */
  historyPage(
    since: number,
    limit: number,
  ): { first: number; ops: HistoryOp[]; firstIndex: number; nextIndex: number } {
    return this.operations.page(since, limit);
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
    if (this.config.strategy === 'raft') return this.raft.addMember();
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
    const id = this.raft.authoritativeLeader(st);
    return id === undefined ? undefined : this.nodes.get(id);
  }

  /** The fallback for a lost membership_changed: the authoritative leader's committed config. */
  private reconcileRaftMembership(st: ReadonlyMap<NodeId, CoreStatus>): void {
    if (this.config.strategy === 'raft') this.raft.reconcile(st);
  }

  /** A member a committed raft configuration dropped: stopped and gone, as DELETE would have done. */
  private stopDroppedMember(id: NodeId): void {
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

  /** `committed`: raft already committed a configuration without the node; only stop it. */
  async removeNode(nodeId: NodeId, opts: { committed?: boolean } = {}): Promise<void> {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    if (this.config.strategy === 'raft' && this.nodes.size > 1 && opts.committed !== true)
      await this.raft.removeMember(nodeId);
    if (this.nodes.get(nodeId) !== n) return; // stopped meanwhile by the committed configuration
    this.raft.forget(nodeId);
    this.nodes.delete(nodeId);
    // A removed node's faults end with it (its node faults, and those of its links).
    this.faults.closeWhere((k) => isFaultOfNode(k, nodeId), preciseNowMs());
    this.fabric.removeNode(nodeId);
    delete this.regions[nodeId];
    this.durableStores.get(nodeId)?.clear();
    this.durableStores.delete(nodeId);
    this.status.forget(nodeId);
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
      candidates.map(async (n) => ({ id: n.id, status: await withinMs(n.remote.status(), nodeCallDeadlineMs) })),
    );
    const chosen = failoverChoice(
      answered.filter((x): x is { id: NodeId; status: CoreStatus } => x.status !== undefined),
    );
    if (chosen === undefined) {
      this.leaderId = undefined;
      return undefined;
    }
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

  /** Last statuses seen, for metrics collection without a round trip. */
  get lastStatus(): Map<NodeId, CoreStatus> {
    return this.status.lastStatus;
  }

  async nodeStatus(nodeId: NodeId): Promise<NodeStatus | undefined> {
    const n = this.nodes.get(nodeId);
    if (!n) return undefined;
    const probe = await this.probe(n);
    return this.toNodeStatus(n, probe.ok ? probe.status : this.status.lastKnown(nodeId), undefined);
  }

  /** One node's status within the deadline (NodeStatusTracker.probe). */
  probe(n: NodeHandle): Promise<StatusProbe> {
    return this.status.probe(n);
  }

  private toNodeStatus(n: NodeHandle, s: CoreStatus, leader: CoreStatus | undefined): NodeStatus {
    const shown = this.status.shownState(n);
    return toNodeStatus(n, s, leader, {
      id: this.id,
      strategy: this.config.strategy,
      shown,
      nodeIds: this.nodes.keys(),
    });
  }

  /**
   * The statuses of the nodes that answered within nodeCallDeadlineMs (crashed nodes are not
   * asked); the others keep their last known status in lastStatus and show as crashed or
   * unresponsive in state().
   */
  statuses(): Promise<Map<NodeId, CoreStatus>> {
    return this.status.statuses();
  }

  async state(): Promise<ClusterState> {
    const st = await this.statuses();
    let leaderId = this.leaderId;
    if (this.config.strategy === 'raft') {
      this.reconcileRaftMembership(st);
      leaderId = this.raft.authoritativeLeader(st);
      this.leaderId = leaderId;
    }
    const leaderStatus = leaderId ? st.get(leaderId) : undefined;
    const nodes: Record<string, NodeStatus> = {};
    for (const n of this.nodes.values())
      nodes[n.id] = this.toNodeStatus(n, st.get(n.id) ?? this.status.lastKnown(n.id), leaderStatus);
    if (this.config.strategy === 'raft') {
      // A node that still believes it leads but is not the authoritative leader (paused, cut off).
      for (const [id, node] of Object.entries(nodes))
        if (node.role === 'leader' && id !== leaderId) node.stale_leader = true;
    }
    const partitions = partitionsView(this.fabric);
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
    return clusterMetrics(
      {
        fabric: this.fabric,
        leaderId: this.leaderId,
        nodes: this.nodes,
        crashes: this.crashes,
        restarts: this.restarts,
        durableBytes: this.durableBytes(),
        writes: this.writes,
        reads: this.reads,
        writeFailures: this.writeFailures,
        historyOps: this.operations.length,
        historyDropped: this.historyDropped,
      },
      st,
    );
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
