/**
 * What every replication route module shares: the clusters by id, the Prometheus metrics (and the
 * collection that refreshes them), the /ws event stream, the memory budgets, and the cluster
 * lifecycle (provision, delete) that several modules and the server's close() use. Built once per
 * server by createRouteContext; it registers no route itself.
 */
import os from 'node:os';
import { HttpError, type HttpApp, type HttpRequest, type HttpResult } from '../../http/index.js';
import type { ClusterConfigBody, ClusterState } from '../../../protocol/replication.js';
import type { Logger } from '../../util/logger.js';
import { inSpan } from '../../tracing/tracing.js';
import { Cluster } from '../cluster.js';
import { effectiveConfig } from '../config.js';
import type { CoreEvent, CoreTimings } from '../core.js';
import { isImplemented } from '../cores/index.js';
import {
  clusterIdCharsMax,
  lagRefreshIdleMs,
  lagRefreshMs,
  lagRefreshTickMs,
  lagStatusAgeMsMax,
  maxNodesFromEnv,
  nodeMemoryMbFromEnv,
} from '../limits.js';
import { createSimMetrics, DeferredCounts, type SimMetrics } from '../metrics.js';
import type { ExitInfo } from '../node-handle.js';
import { EventStream } from './ws-hub.js';

export interface RouteContext {
  app: HttpApp;
  log: Logger;
  timings: CoreTimings;
  clusters: Map<string, Cluster>;
  /** Most clusters at once (ReplSimOptions.clustersMax, else limits.ts clustersMaxDefault). */
  clustersMax: number;
  metrics: SimMetrics;
  /** Successful writes and reads per (cluster, node), handed to the counters when /metrics is read. */
  writeCounts: DeferredCounts;
  readCounts: DeferredCounts;
  events: EventStream;
  /** A cluster's event: counted (conflicts) and broadcast on /ws. */
  publish: (clusterId: string, e: CoreEvent) => void;
  /** The cluster of the `:id` path parameter, or a 404. */
  getCluster: (req: HttpRequest<unknown>) => Cluster;
  /** Memory budgets (limits.ts), read once per server. */
  nodeMemoryMb: number;
  storedBytesMax: number;
  maxNodes: number;
  /** Nodes whose worker runs, over every cluster. */
  liveNodes: () => number;
  /** REPLSIM_MAX_NODES: 409 naming the limit when `more` live nodes would pass it. */
  checkNodeRoom: (more: number) => void;
  /** Validates, starts the nodes, announces the cluster; shared by POST /clusters and the scenarios. */
  provision: (body: ClusterConfigBody) => Promise<{ cluster: Cluster; state: ClusterState }>;
  /** POST /clusters and POST /simulation/start: provision in a span, 201 with the state. */
  createCluster: (body: ClusterConfigBody) => Promise<HttpResult>;
  /** Stops a cluster and forgets its metric series and seq numbering; false when unknown. */
  deleteCluster: (id: string) => Promise<boolean>;
}

export interface RouteContextOptions {
  app: HttpApp;
  log: Logger;
  timings: CoreTimings;
  clustersMax: number;
  wsClientsMax: number;
}

export function createRouteContext(opts: RouteContextOptions): RouteContext {
  const { app, log, timings } = opts;
  const clusters = new Map<string, Cluster>();
  const droppedSeen = new Map<string, number>();
  const historySeen = new Map<string, number>();

  // ---- follower lag: the one figure of /metrics that lives in the workers (a leader's status
  // carries its followers' lag). A scrape used to ask every node of every cluster (1,000 round
  // trips and 1,000 threads woken at 200 clusters of 5 nodes: most of a 417 ms scrape) and read only
  // the leader's answer. Now only leaders are asked, and while /metrics is being read one shared
  // timer asks them ahead of the scrape, a slice per tick (limits.ts lagRefreshMs), so a scrape
  // is a registry serialisation; it asks a leader itself only when its answer is too old.
  /** Per cluster: the leader whose status was last received, and when (performance.now()). */
  const lagAnswered = new Map<string, { leaderId: string; at: number }>();
  let lagTimer: NodeJS.Timeout | undefined;
  let lastScrapeAt = 0;
  let lagRound: string[] = [];
  let lagRoundNext = 0;
  const askLeader = (c: Cluster): Promise<void> | undefined => {
    const leaderId = c.leaderId;
    const leader = leaderId === undefined ? undefined : c.nodes.get(leaderId);
    if (leaderId === undefined || leader === undefined || leader.isDown) return undefined;
    return c.probe(leader).then((p) => {
      if (p.ok) lagAnswered.set(c.id, { leaderId, at: performance.now() });
    });
  };
  const lagTick = (): void => {
    if (clusters.size === 0 || performance.now() - lastScrapeAt > lagRefreshIdleMs) {
      clearInterval(lagTimer);
      lagTimer = undefined;
      return;
    }
    if (lagRoundNext >= lagRound.length) {
      lagRound = [...clusters.keys()];
      lagRoundNext = 0;
    }
    const perTick = Math.ceil((lagRound.length * lagRefreshTickMs) / lagRefreshMs);
    for (let i = 0; i < perTick && lagRoundNext < lagRound.length; i++) {
      const c = clusters.get(lagRound[lagRoundNext++] as string);
      if (c !== undefined) void askLeader(c);
    }
  };

  // prom-client gathers every metric concurrently and runs this from the lag gauge's get(): the
  // synchronous updates (drop counters, partition gauges) must happen before the first await, or
  // the other metrics are read before they are refreshed. Everything but the lag is read from the
  // front's own counters.
  const collect = async (): Promise<void> => {
    const now = performance.now();
    lastScrapeAt = now;
    if (lagTimer === undefined) {
      lagTimer = setInterval(lagTick, lagRefreshTickMs);
      lagTimer.unref();
    }
    const asked: Array<Promise<void>> = [];
    for (const c of clusters.values()) {
      const dropped = c.fabric.stats().dropped_full;
      const seen = droppedSeen.get(c.id) ?? 0;
      metrics.dropped.inc({ cluster_id: c.id }, dropped > seen ? dropped - seen : 0);
      droppedSeen.set(c.id, dropped);
      const hd = c.historyDropped;
      const hdSeen = historySeen.get(c.id) ?? 0;
      metrics.historyDropped.inc({ cluster_id: c.id }, hd > hdSeen ? hd - hdSeen : 0);
      historySeen.set(c.id, hd);
      metrics.partitionActive.set({ cluster_id: c.id }, c.fabric.partitions().size > 0 ? 1 : 0);
      // A leader not heard from recently (or a new one) is asked now, within nodeCallDeadlineMs (a
      // silent leader keeps its last values).
      const answered = lagAnswered.get(c.id);
      if (answered === undefined || answered.leaderId !== c.leaderId || now - answered.at > lagStatusAgeMsMax) {
        const asking = askLeader(c);
        if (asking !== undefined) asked.push(asking);
      }
    }
    if (asked.length > 0) await Promise.all(asked);
    // Lag is recomputed whole each time: followers that left (or clusters without a leader) disappear.
    metrics.lag.reset();
    for (const c of clusters.values()) {
      const leader = c.leaderId ? c.lastStatus.get(c.leaderId) : undefined;
      if (leader?.followers) {
        for (const [f, p] of Object.entries(leader.followers))
          metrics.lag.set({ cluster_id: c.id, follower_id: f }, p.lag_ms);
      }
    }
  };
  const writeCounts = new DeferredCounts();
  const readCounts = new DeferredCounts();
  const metrics: SimMetrics = createSimMetrics(
    collect,
    () =>
      writeCounts.drain((cid, nid, n) => {
        const c = clusters.get(cid);
        if (c) metrics.writes.inc({ cluster_id: cid, node_id: nid, strategy: c.config.strategy }, n);
      }),
    () =>
      readCounts.drain((cid, nid, n) => {
        if (clusters.has(cid)) metrics.reads.inc({ cluster_id: cid, node_id: nid }, n);
      }),
  );
  const events = new EventStream(clusters, opts.wsClientsMax, (count) => metrics.wsDropped.inc(count));

  /** Per cluster, the resolvers its conflicts were counted under (its sim_conflicts_total series). */
  const conflictResolvers = new Map<string, Set<string>>();
  const publish = (clusterId: string, e: CoreEvent): void => {
    if (e.type === 'conflict_detected') {
      const resolver =
        typeof e.data?.['resolver'] === 'string'
          ? (e.data['resolver'] as string)
          : (clusters.get(clusterId)?.config.conflict_resolver ?? 'lww');
      metrics.conflicts.inc({ cluster_id: clusterId, resolver });
      // Noted even for a cluster being deleted: its nodes stop before its series are removed.
      let resolvers = conflictResolvers.get(clusterId);
      if (resolvers === undefined) conflictResolvers.set(clusterId, (resolvers = new Set()));
      resolvers.add(resolver);
    }
    events.broadcast(clusterId, e);
  };

  const getCluster = (req: HttpRequest<unknown>): Cluster => {
    const c = clusters.get(req.params['id'] ?? '');
    // Unknown ids are echoed at most at their length bound: a 100 KB path is not sent back whole.
    if (!c) throw new HttpError(404, `cluster ${(req.params['id'] ?? '').slice(0, clusterIdCharsMax)} not found`);
    return c;
  };

  // ---- memory budgets (limits.ts): read once per server
  const nodeMemoryMb = nodeMemoryMbFromEnv();
  const storedBytesMax = nodeMemoryMb * 1024 * 1024;
  const maxNodes = maxNodesFromEnv(os.totalmem());
  const liveNodes = (): number => {
    let n = 0;
    for (const c of clusters.values()) n += c.liveNodes;
    return n;
  };
  const checkNodeRoom = (more: number): void => {
    const live = liveNodes();
    if (live + more > maxNodes) {
      throw new HttpError(
        409,
        `too many live nodes: ${live} running, ${more} more would pass REPLSIM_MAX_NODES (${maxNodes}); delete ` +
          'clusters or nodes first',
      );
    }
  };
  /** A node's worker exited: logged, counted by reason, and (unless stopped on purpose) published. */
  const onNodeExit = (cid: string, nid: string, exit: ExitInfo): void => {
    metrics.workerExits.inc({ reason: exit.reason });
    if (exit.reason === 'stopped') return;
    log.error(
      { cluster: cid, node: nid, reason: exit.reason, code: exit.code, error: exit.error },
      'node worker exited',
    );
    const data: Record<string, unknown> = { reason: exit.reason, exit_code: exit.code };
    if (exit.error !== undefined) data['error'] = exit.error;
    publish(cid, { type: 'node_crashed', node_id: nid, data });
  };

  const provision = async (body: ClusterConfigBody): Promise<{ cluster: Cluster; state: ClusterState }> => {
    const eff = effectiveConfig(body);
    if (!eff.ok) throw new HttpError(400, eff.error);
    if (!isImplemented(eff.config.strategy))
      throw new HttpError(400, `strategy ${eff.config.strategy} is not implemented yet`);
    if (clusters.size >= opts.clustersMax)
      throw new HttpError(409, `too many clusters (${clusters.size}); delete some first`);
    checkNodeRoom(eff.config.node_count);
    const c = new Cluster(eff.config, timings, { event: publish, nodeExit: onNodeExit }, { storedBytesMax });
    clusters.set(c.id, c);
    try {
      await c.start();
    } catch (err) {
      clusters.delete(c.id);
      await c.close();
      log.error({ err }, 'cluster start failed');
      throw new HttpError(500, `cluster could not start: ${(err as Error).message}`);
    }
    events.clusterAdded(c);
    publish(c.id, { type: 'cluster_created', data: { strategy: c.config.strategy, node_ids: [...c.nodes.keys()] } });
    if (c.leaderId)
      publish(c.id, { type: 'leader_elected', node_id: c.leaderId, data: { epoch: 0, reason: 'initial' } });
    return { cluster: c, state: await c.state() };
  };
  const createCluster = async (body: ClusterConfigBody): Promise<HttpResult> => {
    const { state } = await inSpan('create_cluster', () => provision(body), { strategy: body.strategy });
    return { status: 201, body: state };
  };

  const deleteClusterInner = async (id: string): Promise<boolean> => {
    const c = clusters.get(id);
    if (!c) return false;
    clusters.delete(id);
    await c.close();
    // Drop every series of the deleted cluster. prom-client removes by the full label set; the label
    // values each cluster used are known here, so no series is listed: listing them (get()) also ran
    // the collectors, a whole scrape per deleted cluster, O(clusters^2) to delete them all.
    const cluster_id = id;
    for (const node_id of writeCounts.drainedNodes(id))
      metrics.writes.remove({ cluster_id, node_id, strategy: c.config.strategy });
    for (const node_id of readCounts.drainedNodes(id)) metrics.reads.remove({ cluster_id, node_id });
    for (const resolver of conflictResolvers.get(id) ?? []) metrics.conflicts.remove({ cluster_id, resolver });
    for (const m of [metrics.quorumFailures, metrics.dropped, metrics.historyDropped]) m.remove({ cluster_id });
    metrics.partitionActive.remove({ cluster_id });
    // The lag series go at the next scrape, which rebuilds them from the clusters that remain.
    conflictResolvers.delete(id);
    lagAnswered.delete(id);
    writeCounts.forget(id);
    readCounts.forget(id);
    droppedSeen.delete(id);
    historySeen.delete(id);
    events.forget(id);
    return true;
  };
  const deleteCluster = (id: string): Promise<boolean> =>
    inSpan('delete_cluster', () => deleteClusterInner(id), { cluster_id: id });

  return {
    app,
    log,
    timings,
    clusters,
    clustersMax: opts.clustersMax,
    metrics,
    writeCounts,
    readCounts,
    events,
    publish,
    getCluster,
    nodeMemoryMb,
    storedBytesMax,
    maxNodes,
    liveNodes,
    checkNodeRoom,
    provision,
    createCluster,
    deleteCluster,
  };
}
