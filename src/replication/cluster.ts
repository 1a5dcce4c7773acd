/**
 * One simulated cluster in live mode: its node actors (worker_threads), its fabric driven by the
 * real clock in the front process, its leader bookkeeping, and its client-operation history.
 * Every node-to-node message passes through the fabric here; the fabric decides latency, drops,
 * partitions and back-pressure, and deliveries to a worker are batched (one post per destination
 * per pass). Protocol decisions stay in the cores.
 */
import { randomUUID } from 'node:crypto';
import { Fabric } from '../fabric/fabric.js';
import { nodeIndex } from '../../protocol/actor.js';
import { LiveFabricDriver, type WirePayload } from '../fabric/live.js';
import type { ClusterState, NodeStatus, KVEntry, Partition } from '../../protocol/replication.js';
import { liveRng } from '../util/rng.js';
import type { ClientOp, ClientReply, ClusterConfig, CoreEvent, CoreStatus, CoreTimings, NodeId, Version } from './core.js';
import { NodeHandle } from './node-handle.js';
import { HistoryRing, type HistoryOp } from './history.js';

export interface ClusterHooks {
  event: (clusterId: string, e: CoreEvent) => void;
  nodeExit: (clusterId: string, nodeId: string, code: number) => void;
}

export type { HistoryOp } from './history.js';

/** Client operations kept per cluster for the linearizability checker (older ones fall off and are counted). */
export const historyMax = 20_000;

/** Sub-millisecond wall-clock time: two sequential operations never share an instant in the history. */
export const preciseNowMs = (): number => performance.timeOrigin + performance.now();

/** Fabric queue caps (messages): FABRIC_LINK_QUEUE_MAX (default 1024 per link), FABRIC_INBOX_MAX (256 per node inbox). */
export const fabricLimits = {
  linkQueueMax: positiveInt(process.env['FABRIC_LINK_QUEUE_MAX'], 1024),
  inboxMax: positiveInt(process.env['FABRIC_INBOX_MAX'], 256),
};

function positiveInt(v: string | undefined, dflt: number): number {
  const n = Number(v);
  return Number.isInteger(n) && n > 0 ? n : dflt;
}

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
  /** Bounded history: a ring of historyMax operations; what falls off is counted. */
  private readonly historyRing = new HistoryRing(historyMax);
  writes = 0;
  reads = 0;
  writeFailures = 0;
  /** Last statuses seen, for metrics collection without a round trip. */
  lastStatus = new Map<NodeId, CoreStatus>();

  constructor(
    readonly config: ClusterConfig,
    readonly timings: CoreTimings,
    private readonly hooks: ClusterHooks,
  ) {
    this.fabric = new Fabric<WirePayload>({ rng: liveRng(), linkQueueMax: fabricLimits.linkQueueMax, inboxMax: fabricLimits.inboxMax });
    this.driver = new LiveFabricDriver(this.fabric, (to, frames) => this.nodes.get(to)?.deliverNet(frames));
    this.sweepTimer = setInterval(() => {
      const now = Date.now();
      for (const n of this.nodes.values()) n.sweep(now);
    }, 500);
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

  private spawn(id: NodeId, peers: NodeId[]): NodeHandle {
    const handle = new NodeHandle(
      id,
      { id, cluster_id: this.id, peers, config: this.config, timings: this.timings, regions: this.regions },
      Math.floor(Math.random() * 2 ** 31),
      this.timings.requestTimeoutMs,
      {
        onNet: (fromId, buf) => this.driver.submitFrames(fromId, buf),
        onEvents: (nodeId, events) => {
          for (const e of events) {
            if (e.type === 'leader_elected') this.leaderId = e.node_id ?? nodeId;
            this.hooks.event(this.id, { ...e, node_id: e.node_id ?? nodeId });
          }
        },
        onExit: (nodeId, code) => this.hooks.nodeExit(this.id, nodeId, code),
      },
    );
    this.nodes.set(id, handle);
    return handle;
  }

  /** Inter-region latency is the base topology, re-applied after faults are cleared. */
  applyRegionLatency(): void {
    if (this.config.regions <= 1) return;
    const ids = this.fabric.nodes();
    for (const a of ids) for (const b of ids) {
      if (a !== b && this.regions[a] !== this.regions[b]) this.fabric.setLatency(a, b, this.config.inter_region_latency_ms);
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
      done({ id: 0, ok: false, code: 'not_found', status: 404, error: `node ${nodeId} not found in cluster ${this.id}` });
      return;
    }
    if (node.state === 'paused') {
      done({ id: 0, ok: false, code: 'paused', status: op.op === 'read' ? 404 : 409, error: `node ${nodeId} is paused` });
      return;
    }
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

  // ---- node control ----

  async pause(nodeId: NodeId): Promise<void> {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    n.state = 'paused';
    this.fabric.setDeliverable(nodeId, false);
    await n.remote.pause();
  }

  async resume(nodeId: NodeId): Promise<void> {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    n.state = 'online';
    this.fabric.setDeliverable(nodeId, true);
    await n.remote.resume();
    this.kick();
  }

  async addNode(): Promise<NodeHandle> {
    if (this.config.strategy === 'raft') return this.addRaftNode();
    const id = `n${this.nextNodeNumber++}`;
    const peers = [...this.nodes.keys(), id];
    this.regions[id] = peers.length % Math.max(1, this.config.regions);
    this.fabric.addNode(id);
    this.applyRegionLatency();
    const handle = this.spawn(id, peers);
    if (this.leaderId) await handle.remote.control({ kind: 'set_leader', leader_id: this.leaderId, epoch: this.epoch });
    await handle.ready();
    await Promise.all([...this.nodes.values()].filter((n) => n.id !== id).map((n) => n.remote.control({ kind: 'peers', peers })));
    return handle;
  }

  /** The current raft leader, if an online node claims it (highest term wins). */
  async raftLeader(): Promise<NodeHandle | undefined> {
    const st = await this.statuses();
    let best: NodeHandle | undefined;
    let bestTerm = -1;
    for (const [id, s] of st) {
      const h = this.nodes.get(id);
      if (s.role === 'leader' && h?.state === 'online' && (s.term ?? 0) > bestTerm) {
        best = h;
        bestTerm = s.term ?? 0;
      }
    }
    return best;
  }

  /**
   * Raft membership goes through the log, one single-server change at a time: start the new node
   * knowing the current configuration plus itself, then have the leader append the new
   * configuration; the leader catches the node up with AppendEntries or InstallSnapshot.
   */
  private async addRaftNode(): Promise<NodeHandle> {
    const leader = await this.raftLeader();
    if (!leader) throw Object.assign(new Error('no leader elected yet; a raft membership change needs a leader'), { status: 409 });
    const id = `n${this.nextNodeNumber++}`;
    const peers = [...this.nodes.keys(), id];
    this.regions[id] = 0;
    this.fabric.addNode(id);
    const handle = this.spawn(id, peers);
    await handle.ready();
    let r = await leader.controlAwait({ kind: 'add_server', node_id: id });
    // Right after an election the leader refuses changes until it commits an entry of its term.
    for (let i = 0; i < 10 && !r.ok && /retry shortly/.test(r.error); i++) {
      await new Promise((res) => setTimeout(res, 100));
      r = await leader.controlAwait({ kind: 'add_server', node_id: id });
    }
    if (!r.ok) {
      this.nodes.delete(id);
      this.fabric.removeNode(id);
      await handle.terminate();
      throw Object.assign(new Error(r.error), { status: r.status === 404 ? 409 : r.status });
    }
    return handle;
  }

  async removeNode(nodeId: NodeId): Promise<void> {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    if (this.config.strategy === 'raft' && this.nodes.size > 1) {
      const leader = await this.raftLeader();
      if (!leader) throw Object.assign(new Error('no leader elected yet; a raft membership change needs a leader'), { status: 409 });
      const r = await leader.controlAwait({ kind: 'remove_server', node_id: nodeId });
      if (!r.ok) throw Object.assign(new Error(r.error), { status: r.status === 404 ? 409 : r.status });
      // A removed leader steps down after committing its removal; give it a moment to hand over.
    }
    this.nodes.delete(nodeId);
    this.fabric.removeNode(nodeId);
    delete this.regions[nodeId];
    await n.terminate();
    const peers = [...this.nodes.keys()];
    if (this.config.strategy !== 'raft') await Promise.all([...this.nodes.values()].map((h) => h.remote.control({ kind: 'peers', peers })));
    if (this.config.strategy === 'leaderless' && this.config.quorum_n > peers.length && peers.length > 0) {
      // The replication factor cannot exceed the nodes left: shrink N (and W, R with it). Capping W
      // and R at the new N keeps W + R > N, since only N went down.
      const n = peers.length;
      this.config.quorum_n = n;
      this.config.quorum_w = Math.min(this.config.quorum_w, n);
      this.config.quorum_r = Math.min(this.config.quorum_r, n);
      const args = { n, w: this.config.quorum_w, r: this.config.quorum_r };
      await Promise.all([...this.nodes.values()].map((h) => h.remote.control({ kind: 'custom', name: 'set_quorum', args })));
    }
    if (this.config.strategy === 'single_leader' && this.leaderId === nodeId) await this.failover();
  }

  /** single_leader failover: promote the most up-to-date online follower (writes it never saw are orphaned). */
  async failover(): Promise<NodeId | undefined> {
    const candidates = [...this.nodes.values()].filter((n) => n.state === 'online');
    if (candidates.length === 0) {
      this.leaderId = undefined;
      return undefined;
    }
    const statuses = await Promise.all(candidates.map(async (n) => ({ n, s: await n.remote.status() })));
    statuses.sort((a, b) => b.s.last_applied - a.s.last_applied || nodeIndex(a.n.id) - nodeIndex(b.n.id));
    const chosen = (statuses[0] as { n: NodeHandle }).n.id;
    this.epoch++;
    this.leaderId = chosen;
    await Promise.all([...this.nodes.values()].map((n) => n.remote.control({ kind: 'set_leader', leader_id: chosen, epoch: this.epoch })));
    this.hooks.event(this.id, { type: 'leader_elected', node_id: chosen, data: { epoch: this.epoch, reason: 'failover' } });
    return chosen;
  }

  // ---- views ----

  async nodeStatus(nodeId: NodeId): Promise<NodeStatus | undefined> {
    const n = this.nodes.get(nodeId);
    if (!n) return undefined;
    const s = await n.remote.status();
    this.lastStatus.set(nodeId, s);
    return this.toNodeStatus(n, s, undefined);
  }

  private toNodeStatus(n: NodeHandle, s: CoreStatus, leader: CoreStatus | undefined): NodeStatus {
    const fromLeader = leader?.followers?.[n.id]?.lag_entries;
    return {
      id: n.id,
      cluster_id: this.id,
      strategy: this.config.strategy,
      role: s.role,
      state: n.state,
      commit_index: s.commit_index,
      last_applied: s.last_applied,
      leader_id: s.leader_id,
      peers: [...this.nodes.keys()].filter((p) => p !== n.id),
      lag: Math.max(s.lag, fromLeader ?? 0),
    };
  }

  async statuses(): Promise<Map<NodeId, CoreStatus>> {
    const entries = await Promise.all([...this.nodes.values()].map(async (n) => [n.id, await n.remote.status()] as const));
    const m = new Map(entries);
    this.lastStatus = m;
    return m;
  }

  async state(): Promise<ClusterState> {
    const st = await this.statuses();
    let leaderId = this.leaderId;
    if (this.config.strategy === 'raft') {
      leaderId = undefined;
      let bestTerm = -1;
      for (const [id, s] of st) if (s.role === 'leader' && (s.term ?? 0) > bestTerm && this.nodes.get(id)?.state === 'online') {
        bestTerm = s.term ?? 0;
        leaderId = id;
      }
      this.leaderId = leaderId;
    }
    const leaderStatus = leaderId ? st.get(leaderId) : undefined;
    const nodes: Record<string, NodeStatus> = {};
    for (const [id, s] of st) nodes[id] = this.toNodeStatus(this.nodes.get(id) as NodeHandle, s, leaderStatus);
    const partitions: Record<string, Partition> = {};
    for (const [pid, p] of this.fabric.partitions()) {
      partitions[pid] = { id: pid, group_a: Object.fromEntries(p.groupA.map((x) => [x, true])), group_b: Object.fromEntries(p.groupB.map((x) => [x, true])) };
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
    return {
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
  }
}
