/**
 * The replication simulator service: HTTP routes (thin: decode, call the cluster, map outcome codes
 * to statuses with statusOf from errors.ts, the one table), the /ws event stream, and /metrics.
 * Clusters and their node actors live in cluster.ts; protocol logic lives in the cores.
 */
import os from 'node:os';
import type { Logger } from '../util/logger.js';
import {
  HttpApp,
  HttpError,
  WsHub,
  healthRoutes,
  type HttpRequest,
  type HttpResult,
  type WsClient,
} from '../http/index.js';
import {
  BatchWriteRequest,
  ClockSkewRequest,
  ClusterConfigBody,
  ClusterConfigPatch,
  DropRequest,
  LatencyRequest,
  PartitionRequest,
  ResolveConflictRequest,
  StallRequest,
  WriteRequest,
  type ClusterState,
  type KVEntry,
  type SimEvent,
} from '../../protocol/replication.js';
import type { EventsDroppedFrame } from '../../protocol/replication.js';
import {
  clientIdCharsMax,
  clusterIdCharsMax,
  clustersMaxDefault,
  keyCharsMax,
  nodeCountMax,
  nodeIdCharsMax,
  validateTimings,
  wsClientQueueBytes,
  wsClientsMaxFromEnv,
} from './limits.js';
import { Cluster, preciseNowMs, toKVEntry, withinMs } from './cluster.js';
import { LinkStatsSampler, linkTotals, type LinkStatsData, type OpCounts } from './link-stats.js';
import { toHistoryRecord, type FaultInterval, type HistoryRecord } from './history.js';
import { historyPageOpsDefault, historyPageOpsMax, linkStatsIntervalMs } from './limits.js';
import { actorPool, NodeDownError, type NodeHandle } from './node-handle.js';
import { maxNodesFromEnv, nodeCallDeadlineMs, nodeMemoryMbFromEnv, nodeStallMsMax, workerHeapMb } from './limits.js';
import { placementReplicasDefault } from './limits.js';
import { effectiveConfig } from './config.js';
import {
  defaultTimings,
  type ClientOp,
  type ClientReply,
  type CoreEvent,
  type CoreTimings,
  type NodeId,
  type Version,
} from './core.js';
import { isImplemented } from './cores/index.js';
import { ReplicationError, statusOf, type OpKind } from './errors.js';
import { createSimMetrics, DeferredCounts, type SimMetrics } from './metrics.js';
import { preferenceList } from './dynamo/ring.js';
import { registerCheckerRoutes } from './checkers/routes.js';
import { registerDemoRoutes } from './demos/routes.js';
import { registerScenarioRoutes } from './scenarios/routes.js';
import { inSpan, tracing } from '../tracing/tracing.js';
import { builtPageDir, serveBuiltPage } from '../http/static.js';

export interface ReplSimOptions {
  port: number;
  host?: string;
  logger: Logger;
  timings?: Partial<CoreTimings>;
  /** Max clusters at once (each node is a worker thread). */
  clustersMax?: number;
  /** Max /ws clients at once (default REPLSIM_WS_CLIENTS_MAX, else limits.ts wsClientsMaxDefault). */
  wsClientsMax?: number;
  /** The built page served at `/` (default dist/web/replication of this checkout; scripts/build-web.mjs). */
  webDir?: string;
}

export interface ReplSimHandle {
  port: number;
  app: HttpApp;
  clusters: Map<string, Cluster>;
  close(): Promise<void>;
}

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export async function startReplicationSim(opts: ReplSimOptions): Promise<ReplSimHandle> {
  const log = opts.logger;
  const timings: CoreTimings = { ...defaultTimings, ...(opts.timings ?? {}) };
  const timingsOk = validateTimings(timings);
  if (!timingsOk.ok) throw new Error(`invalid replication timings: ${timingsOk.error}`);
  const clusters = new Map<string, Cluster>();
  /** Per-cluster /ws sequence numbers: +1 for each event of the cluster broadcast (gaps = drops). */
  const eventSeq = new Map<string, number>();
  /**
   * The same without the op events (write_received, read_received): the seq that clients which
   * asked for no op events (`op_events=0`) see, so that their stream has no gaps either.
   */
  const stateSeq = new Map<string, number>();
  const seqOf = (client: WsClient<WsData>, clusterId: string): number =>
    (client.data.opEvents ? eventSeq : stateSeq).get(clusterId) ?? 0;
  /** /ws clients that receive op events, and those that do not (counted on open and close). */
  let opEventClients = 0;
  let opFreeClients = 0;
  const wsClientsMax = opts.wsClientsMax ?? wsClientsMaxFromEnv();
  const hub = new WsHub<WsData>({
    clientsMax: wsClientsMax,
    dropNotice: (client, count) => {
      const timestamp = new Date().toISOString();
      const frame: EventsDroppedFrame = { type: 'events_dropped', timestamp, data: { count } };
      const cid = client.data.clusterId;
      if (cid !== null) {
        frame.cluster_id = cid;
        frame.seq = seqOf(client, cid);
      } else {
        frame.data.last_seq = Object.fromEntries(client.data.opEvents ? eventSeq : stateSeq);
      }
      return JSON.stringify(frame);
    },
  });
  const droppedSeen = new Map<string, number>();
  const historySeen = new Map<string, number>();

  // prom-client gathers every metric concurrently and runs this from the lag gauge's get(): the
  // synchronous updates (drop counters, partition gauges) must happen before the first await, or
  // the other metrics are read before they are refreshed.
  const collect = async (): Promise<void> => {
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
    }
    const lag: Array<[string, string, number]> = [];
    // Every cluster at once, each node bounded by nodeCallDeadlineMs (a silent node keeps its last values).
    await Promise.all([...clusters.values()].map((c) => c.statuses().catch(() => undefined)));
    for (const c of clusters.values()) {
      const leader = c.leaderId ? c.lastStatus.get(c.leaderId) : undefined;
      if (leader?.followers) for (const [f, p] of Object.entries(leader.followers)) lag.push([c.id, f, p.lag_ms]);
    }
    // Lag is recomputed whole each time: followers that left (or clusters without a leader) disappear.
    metrics.lag.reset();
    for (const [cid, f, ms] of lag) metrics.lag.set({ cluster_id: cid, follower_id: f }, ms);
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

  // ---- /ws link_stats (link-stats.ts): per watched cluster, every linkStatsIntervalMs, one frame
  // with each link's traffic over the interval. Not events: they do not advance the cluster's seq
  // (they carry its current one), and a frame a client's full queue cannot take is skipped, not
  // counted in events_dropped (the next frame covers the next interval).
  const samplers = new Map<string, LinkStatsSampler>();
  let linkStatsTimer: NodeJS.Timeout | undefined;
  const watchesLinks = (client: WsClient<WsData>, clusterId: string): boolean =>
    client.data.linkStats &&
    (client.data.clusterId === null || client.data.clusterId === clusterId) &&
    (client.data.linkClusters === null || client.data.linkClusters.has(clusterId));
  /** After a /ws client or a cluster came or went: which clusters' links are watched, and the timer. */
  const refreshLinkWatch = (): void => {
    let all = false;
    const watched = new Set<string>();
    for (const client of hub.clients) {
      const d = client.data;
      if (!d.linkStats) continue;
      if (d.linkClusters !== null) {
        for (const id of d.linkClusters) if (d.clusterId === null || d.clusterId === id) watched.add(id);
      } else if (d.clusterId === null) all = true;
      else watched.add(d.clusterId);
    }
    for (const c of clusters.values()) {
      const on = all || watched.has(c.id);
      c.countMessageKinds(on);
      if (on && !samplers.has(c.id)) {
        const ops = (): OpCounts => ({ writes: c.writes, reads: c.reads, write_failures: c.writeFailures });
        samplers.set(c.id, new LinkStatsSampler(c.fabric, performance.now(), ops));
      }
      if (!on) samplers.delete(c.id);
    }
    for (const id of samplers.keys()) if (!clusters.has(id)) samplers.delete(id);
    if (samplers.size > 0 && linkStatsTimer === undefined) {
      linkStatsTimer = setInterval(sendLinkStats, linkStatsIntervalMs);
      linkStatsTimer.unref();
    } else if (samplers.size === 0 && linkStatsTimer !== undefined) {
      clearInterval(linkStatsTimer);
      linkStatsTimer = undefined;
    }
  };
  const sendLinkStats = (): void => {
    const now = performance.now();
    for (const [clusterId, sampler] of samplers) {
      const data = sampler.sample(now);
      if (data === undefined) continue;
      const timestamp = new Date().toISOString();
      const frame: LinkStatsFrame = { type: 'link_stats', cluster_id: clusterId, timestamp, seq: 0, data };
      // One text per seq numbering (with and without op events), built when a client needs it.
      const texts: [string | undefined, string | undefined] = [undefined, undefined];
      for (const client of hub.clients) {
        if (!watchesLinks(client, clusterId)) continue;
        const v = client.data.opEvents ? 0 : 1;
        let text = texts[v];
        if (text === undefined) {
          frame.seq = seqOf(client, clusterId);
          text = texts[v] = JSON.stringify(frame);
        }
        client.sendNotice(text);
      }
    }
  };

  const publish = (clusterId: string, e: CoreEvent): void => {
    if (e.type === 'conflict_detected') {
      const resolver =
        typeof e.data?.['resolver'] === 'string'
          ? (e.data['resolver'] as string)
          : (clusters.get(clusterId)?.config.conflict_resolver ?? 'lww');
      metrics.conflicts.inc({ cluster_id: clusterId, resolver });
    }
    if (hub.size === 0) return;
    // An op event nobody receives is not sent and takes no seq.
    const opEvent = e.type === 'write_received' || e.type === 'read_received';
    if (opEvent && opEventClients === 0) return;
    const known = clusters.has(clusterId);
    const seq = (eventSeq.get(clusterId) ?? 0) + 1;
    if (known) eventSeq.set(clusterId, seq);
    const env: SimEvent = { type: e.type, cluster_id: clusterId, timestamp: new Date().toISOString(), seq };
    if (e.node_id) env.node_id = e.node_id;
    if (e.data) env.data = e.data;
    const before = hub.droppedTotal;
    const watches = (c: WsClient<WsData>): boolean => c.data.clusterId === null || c.data.clusterId === clusterId;
    if (opEventClients > 0) hub.publish(JSON.stringify(env), (c) => c.data.opEvents && watches(c));
    if (!opEvent) {
      const stateSeqNext = (stateSeq.get(clusterId) ?? 0) + 1;
      if (known) stateSeq.set(clusterId, stateSeqNext);
      if (opFreeClients > 0) {
        env.seq = stateSeqNext;
        hub.publish(JSON.stringify(env), (c) => !c.data.opEvents && watches(c));
      }
    }
    if (hub.droppedTotal > before) metrics.wsDropped.inc(hub.droppedTotal - before);
  };

  const app = new HttpApp({ name: 'replsim', logger: log, cors: { origins: '*' } });
  healthRoutes(app, metrics.registry, () => true);
  // The web page at GET / (src/http/static.ts; 503 naming `make build` until it is built).
  serveBuiltPage(app, { dir: opts.webDir ?? builtPageDir('replication'), page: 'replication' });

  // ---- helpers ----
  const getCluster = (req: HttpRequest<unknown>): Cluster => {
    const c = clusters.get(req.params['id'] ?? '');
    // Unknown ids are echoed at most at their length bound: a 100 KB path is not sent back whole.
    if (!c) throw new HttpError(404, `cluster ${(req.params['id'] ?? '').slice(0, clusterIdCharsMax)} not found`);
    return c;
  };
  const getNode = (c: Cluster, nodeId: string | undefined | null): NodeId => {
    if (!nodeId || !c.nodes.has(nodeId)) {
      throw new HttpError(404, `node ${String(nodeId).slice(0, nodeIdCharsMax)} not found in cluster ${c.id}`);
    }
    return nodeId;
  };
  /**
   * Strings a node will store must be well-formed UTF-16: a lone surrogate (valid in JSON) cannot be
   * sent back in a query (encodeURIComponent throws) nor survive the base64 of a value, so it is a 400.
   */
  const wellFormed = (field: string, s: string | undefined): void => {
    if (s === undefined || !loneSurrogate.test(s)) return;
    throw new HttpError(400, `${field}: must be well-formed Unicode (it contains a lone surrogate)`);
  };
  /** A query parameter bounded like a body field (limits.ts): null when absent, 400 past `charsMax`. */
  const boundedQuery = (req: HttpRequest<unknown>, name: string, charsMax: number): string | null => {
    const v = req.query.get(name);
    if (v !== null && v.length > charsMax) {
      throw new HttpError(400, `${name}: must not have more than ${charsMax} characters`);
    }
    return v;
  };
  /** A failed client operation: the status comes from the one table (errors.ts statusOf). */
  const replyError = (r: Extract<ClientReply, { ok: false }>, op: OpKind): HttpResult => ({
    status: statusOf(r.code, op),
    body: { error: r.error },
  });

  // ---- memory budgets (limits.ts): read once per server
  const nodeMemoryMb = nodeMemoryMbFromEnv();
  const storedBytesMax = nodeMemoryMb * 1024 * 1024;
  const maxNodes = maxNodesFromEnv(os.totalmem());
  const liveNodes = (): number => {
    let n = 0;
    for (const c of clusters.values()) n += c.liveNodes;
    return n;
  };
  /** REPLSIM_MAX_NODES: 409 naming the limit when `more` live nodes would pass it. */
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
  const onNodeExit = (cid: string, nid: string, exit: { reason: string; code: number; error?: string }): void => {
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
  /**
   * One node's answer within nodeCallDeadlineMs: a crashed node is a 409 at once, a silent one a
   * 409 after the deadline (both name what to do).
   */
  const callNode = async <T>(n: NodeHandle, call: (h: NodeHandle) => Promise<T>): Promise<T> => {
    if (n.isDown)
      throw new HttpError(
        409,
        `node ${n.id} has crashed (${n.exit?.reason ?? 'exited'}); restart it with POST .../nodes/${n.id}/restart`,
      );
    let err: unknown;
    const r = await withinMs(
      call(n).catch((e: unknown) => {
        err = e;
        throw e;
      }),
      nodeCallDeadlineMs,
    );
    if (r !== undefined) return r;
    if (err instanceof NodeDownError || n.isDown)
      throw new HttpError(409, `node ${n.id} crashed before answering; restart it with POST .../nodes/${n.id}/restart`);
    if (err !== undefined) throw err;
    throw new HttpError(409, `node ${n.id} did not answer within ${nodeCallDeadlineMs} ms (stalled or overloaded)`);
  };

  const createCluster = async (body: ClusterConfigBody): Promise<HttpResult> => {
    const { state } = await inSpan('create_cluster', () => provision(body), { strategy: body.strategy });
    return { status: 201, body: state };
  };
  /** Validates, starts the nodes, announces the cluster; shared by POST /clusters and the scenarios. */
  const provision = async (body: ClusterConfigBody): Promise<{ cluster: Cluster; state: ClusterState }> => {
    const eff = effectiveConfig(body);
    if (!eff.ok) throw new HttpError(400, eff.error);
    if (!isImplemented(eff.config.strategy))
      throw new HttpError(400, `strategy ${eff.config.strategy} is not implemented yet`);
    if (clusters.size >= (opts.clustersMax ?? clustersMaxDefault))
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
    refreshLinkWatch();
    publish(c.id, { type: 'cluster_created', data: { strategy: c.config.strategy, node_ids: [...c.nodes.keys()] } });
    if (c.leaderId)
      publish(c.id, { type: 'leader_elected', node_id: c.leaderId, data: { epoch: 0, reason: 'initial' } });
    return { cluster: c, state: await c.state() };
  };

  const deleteCluster = (id: string): Promise<boolean> =>
    inSpan('delete_cluster', () => deleteClusterInner(id), { cluster_id: id });
  const deleteClusterInner = async (id: string): Promise<boolean> => {
    const c = clusters.get(id);
    if (!c) return false;
    clusters.delete(id);
    await c.close();
    // Drop every series of the deleted cluster (prom-client removes by the full label set).
    for (const m of [
      metrics.writes,
      metrics.reads,
      metrics.lag,
      metrics.conflicts,
      metrics.quorumFailures,
      metrics.dropped,
      metrics.partitionActive,
      metrics.historyDropped,
    ] as unknown as Array<{
      get(): Promise<{ values: Array<{ labels: Record<string, string | number> }> }>;
      remove(l: Record<string, string | number>): void;
    }>) {
      for (const v of (await m.get()).values) if (v.labels['cluster_id'] === id) m.remove(v.labels);
    }
    writeCounts.forget(id);
    readCounts.forget(id);
    droppedSeen.delete(id);
    historySeen.delete(id);
    eventSeq.delete(id);
    stateSeq.delete(id);
    refreshLinkWatch();
    return true;
  };

  const countWrite = (c: Cluster, nodeId: string): void => writeCounts.add(c.id, nodeId);

  type WriteOutcome = { ok: true; entry: KVEntry; node_id: string } | { ok: false; status: number; error: string };
  const doWrite = (c: Cluster, op: ClientOp, target: string | undefined): Promise<WriteOutcome> =>
    new Promise((resolve) => submitWrite(c, op, target, resolve));
  /** A write (or delete) answered through `done`: the hot path, with no promise per layer. */
  const submitWrite = (c: Cluster, op: ClientOp, target: string | undefined, done: (o: WriteOutcome) => void): void => {
    if (tracing.on) {
      // The span stays open until the outcome is known; the actor request is queued inside it.
      void inSpan(
        'write',
        () =>
          new Promise<void>((spanDone) =>
            submitWriteInner(c, op, target, (o) => {
              spanDone();
              done(o);
            }),
          ),
        { cluster_id: c.id, op: op.op },
      );
      return;
    }
    submitWriteInner(c, op, target, done);
  };
  const submitWriteInner = (
    c: Cluster,
    op: ClientOp,
    target: string | undefined,
    done: (o: WriteOutcome) => void,
  ): void => {
    const nodeId = target ?? c.defaultTarget();
    if (!nodeId || !c.nodes.has(nodeId)) {
      done({ ok: false, status: statusOf('not_found', op.op), error: `node ${nodeId} not found in cluster ${c.id}` });
      return;
    }
    if (opEventClients > 0) {
      const data = { key: 'key' in op ? op.key : undefined, op: op.op };
      publish(c.id, { type: 'write_received', node_id: nodeId, data });
    }
    c.submit(nodeId, op, (r) => {
      if (!r.ok) {
        if (r.code === 'quorum_not_met') metrics.quorumFailures.inc({ cluster_id: c.id });
        done({ ok: false, status: statusOf(r.code, op.op), error: r.error });
        return;
      }
      countWrite(c, nodeId);
      const result = r.result;
      if (result.kind !== 'entry') done({ ok: false, status: 500, error: 'unexpected batch result' });
      else done({ ok: true, entry: toKVEntry(result.entry), node_id: result.node_id });
    });
  };

  // ---- simulation ----
  app.post('/api/v1/simulation/start', (req) => createCluster(req.body as ClusterConfigBody), {
    body: ClusterConfigBody,
  });
  app.post('/api/v1/simulation/reset', async () => {
    await Promise.all([...clusters.keys()].map((id) => deleteCluster(id)));
    return { status: 200, body: { status: 'reset' } };
  });
  app.get('/api/v1/simulation/state', async () => ({
    status: 200,
    body: {
      clusters: await Promise.all([...clusters.values()].map((c) => c.state())),
      // Memory budgets (README "Memory budgets"): per-node stored bytes and worker heap, live-node cap.
      limits: {
        node_memory_mb: nodeMemoryMb,
        node_stored_bytes_max: storedBytesMax,
        worker_heap_mb: workerHeapMb(nodeMemoryMb),
        max_nodes: maxNodes,
        live_nodes: liveNodes(),
        node_call_deadline_ms: nodeCallDeadlineMs,
      },
    },
  }));
  app.get('/api/v1/simulation/metrics', async () => {
    const out: Record<string, unknown> = {};
    const all = [...clusters.values()];
    const st = await Promise.all(all.map((c) => c.statuses()));
    all.forEach((c, i) => {
      out[c.id] = c.metrics(st[i]);
    });
    return { status: 200, body: out };
  });

  // ---- clusters ----
  app.post('/api/v1/clusters', (req) => createCluster(req.body as ClusterConfigBody), { body: ClusterConfigBody });
  app.get('/api/v1/clusters', async () => ({
    status: 200,
    body: await Promise.all([...clusters.values()].map((c) => c.state())),
  }));
  app.delete('/api/v1/clusters/:id', async (req) => {
    if (!(await deleteCluster(req.params['id'] ?? '')))
      throw new HttpError(404, `cluster ${req.params['id']} not found`);
    return { status: 204 };
  });
  app.get('/api/v1/clusters/:id/state', async (req) => ({ status: 200, body: await getCluster(req).state() }));
  app.patch(
    '/api/v1/clusters/:id/config',
    async (req) => {
      const c = getCluster(req);
      const body = req.body as ClusterConfigPatch;
      if (body.replication_mode !== undefined && c.config.strategy === 'single_leader') {
        c.config.replication_mode = body.replication_mode;
        // Crashed nodes take the new mode from the config when they restart.
        await Promise.allSettled(
          [...c.nodes.values()]
            .filter((n) => !n.isDown)
            .map((n) => n.remote.control({ kind: 'replication_mode', mode: body.replication_mode as 'async' })),
        );
      }
      return { status: 200, body: await c.state() };
    },
    { body: ClusterConfigPatch },
  );

  // ---- data ----
  app.post(
    '/api/v1/clusters/:id/write',
    (req) => {
      const c = getCluster(req);
      const b = req.body as WriteRequest;
      wellFormed('key', b.key);
      wellFormed('value', b.value);
      wellFormed('client_id', b.client_id);
      const op: ClientOp = { op: 'write', key: b.key, value: b.value ?? '' };
      if (b.client_id !== undefined) op.client_id = b.client_id;
      return new Promise<HttpResult>((resolve) =>
        submitWrite(c, op, b.target_node_id, (r) => {
          resolve(
            r.ok
              ? { status: 200, body: { entry: r.entry, node_id: r.node_id } }
              : { status: r.status, body: { error: r.error } },
          );
        }),
      );
    },
    { body: WriteRequest },
  );

  app.get('/api/v1/clusters/:id/read', async (req) => {
    const c = getCluster(req);
    const key = boundedQuery(req, 'key', keyCharsMax);
    // 404, not 400: every read failure is a 404 (statusOf in errors.ts, ../shared/specs/DECISIONS.md).
    if (key === null || key === '') {
      throw new HttpError(statusOf('bad_request', 'read'), 'query parameter key is required');
    }
    const nodeId = boundedQuery(req, 'node_id', nodeIdCharsMax) ?? c.defaultTarget();
    getNode(c, nodeId);
    const op: ClientOp = { op: 'read', key };
    const clientId = boundedQuery(req, 'client_id', clientIdCharsMax);
    if (clientId) op.client_id = clientId;
    if (opEventClients > 0) publish(c.id, { type: 'read_received', node_id: nodeId as string, data: { key } });
    const r = tracing.on
      ? await inSpan('read', () => c.clientOp(nodeId as string, op), { cluster_id: c.id })
      : await c.clientOp(nodeId as string, op);
    if (!r.ok) return replyError(r, 'read');
    readCounts.add(c.id, nodeId as string);
    if (r.result.kind !== 'entry') throw new HttpError(500, 'unexpected read result');
    return { status: 200, body: { entry: toKVEntry(r.result.entry), node_id: r.result.node_id } };
  });

  app.delete('/api/v1/clusters/:id/kv', async (req) => {
    const c = getCluster(req);
    const key = boundedQuery(req, 'key', keyCharsMax);
    // 400 here but 404 on read: the spec's table (statusOf in errors.ts).
    if (key === null || key === '') {
      throw new HttpError(statusOf('bad_request', 'delete'), 'query parameter key is required');
    }
    const nodeId = boundedQuery(req, 'node_id', nodeIdCharsMax) ?? undefined;
    if (nodeId !== undefined) getNode(c, nodeId);
    const op: ClientOp = { op: 'delete', key };
    const clientId = boundedQuery(req, 'client_id', clientIdCharsMax);
    if (clientId) op.client_id = clientId;
    const r = await doWrite(c, op, nodeId);
    if (!r.ok) return { status: r.status, body: { error: r.error } };
    return { status: 200, body: { status: 'deleted', key } };
  });

  app.post(
    '/api/v1/clusters/:id/write-batch',
    async (req) => {
      const c = getCluster(req);
      const b = req.body as BatchWriteRequest;
      wellFormed('client_id', b.client_id);
      b.entries.forEach((e, i) => {
        wellFormed(`entries[${i}].key`, e.key);
        wellFormed(`entries[${i}].value`, e.value);
        wellFormed(`entries[${i}].client_id`, e.client_id);
      });
      if (b.atomic) {
        if (c.config.strategy !== 'single_leader')
          throw new HttpError(
            400,
            `atomic batches are supported on single_leader clusters only (this cluster is ${c.config.strategy})`,
          );
        const leader = c.defaultTarget();
        for (const e of b.entries) {
          if (e.target_node_id !== undefined && e.target_node_id !== leader) {
            if (!c.nodes.has(e.target_node_id))
              throw new HttpError(404, `node ${e.target_node_id} not found in cluster ${c.id}`);
            throw new HttpError(
              409,
              `an atomic batch is applied by the leader (${leader}); entry for key ${JSON.stringify(e.key)} targets ` +
                `${e.target_node_id}`,
            );
          }
        }
        const op: ClientOp = { op: 'batch', entries: b.entries.map((e) => ({ key: e.key, value: e.value ?? '' })) };
        if (b.client_id !== undefined) op.client_id = b.client_id;
        const r = await c.clientOp(leader as string, op);
        if (!r.ok) return replyError(r, 'batch');
        if (r.result.kind !== 'batch') throw new HttpError(500, 'unexpected batch result');
        countWrite(c, leader as string);
        return { status: 200, body: { atomic: true, entries: r.result.entries.map((v: Version) => toKVEntry(v)) } };
      }
      const results = await Promise.all(
        b.entries.map(async (e) => {
          const op: ClientOp = { op: 'write', key: e.key, value: e.value ?? '' };
          const cid = e.client_id ?? b.client_id;
          if (cid !== undefined) op.client_id = cid;
          const r = await doWrite(c, op, e.target_node_id);
          return r.ok ? { entry: r.entry, node_id: r.node_id } : { key: e.key, error: r.error };
        }),
      );
      return { status: 200, body: { results } };
    },
    { body: BatchWriteRequest },
  );

  // ---- strategy-specific views ----
  const firstOnline = (c: Cluster): string => {
    for (const n of c.nodes.values()) if (n.state === 'online') return n.id;
    throw new HttpError(409, `no node of cluster ${c.id} is online`);
  };
  app.get('/api/v1/clusters/:id/placement', async (req) => {
    const c = getCluster(req);
    const key = boundedQuery(req, 'key', keyCharsMax) ?? '';
    const nRaw = req.query.get('n');
    const n = nRaw === null ? placementReplicasDefault : Number(nRaw);
    if (!Number.isInteger(n) || n < 1)
      throw new HttpError(400, `n must be a positive integer (got ${JSON.stringify(nRaw)})`);
    if (n > c.nodes.size) throw new HttpError(400, `n must be at most the number of nodes (${c.nodes.size})`);
    return { status: 200, body: { key, preference_list: preferenceList(key, n, [...c.nodes.keys()]) } };
  });
  app.get('/api/v1/clusters/:id/suspicion', async (req) => {
    const c = getCluster(req);
    if (c.config.strategy !== 'leaderless')
      throw new HttpError(
        400,
        `failure suspicion (phi accrual) is tracked by leaderless clusters; this cluster is ${c.config.strategy}`,
      );
    const r = await callNode(c.nodes.get(firstOnline(c)) as NodeHandle, (h) =>
      h.remote.control({ kind: 'custom', name: 'suspicion' }),
    );
    if (!r.ok) throw new HttpError(statusOf(r.code, 'control'), r.error);
    return { status: 200, body: r.data };
  });
  app.get('/api/v1/clusters/:id/conflicts', async (req) => {
    const c = getCluster(req);
    if (c.config.strategy !== 'multi_leader') return { status: 200, body: { conflicts: [] } };
    const all = await Promise.all(
      [...c.nodes.values()].map(async (n) => {
        const r = n.isDown
          ? undefined
          : await withinMs(n.remote.control({ kind: 'custom', name: 'conflicts' }), nodeCallDeadlineMs);
        return r?.ok && Array.isArray(r.data) ? (r.data as unknown[]) : [];
      }),
    );
    return { status: 200, body: { conflicts: all.flat() } };
  });
  app.post(
    '/api/v1/clusters/:id/conflicts/resolve',
    async (req) => {
      const c = getCluster(req);
      const b = req.body as ResolveConflictRequest;
      wellFormed('key', b.key);
      if (c.config.strategy !== 'multi_leader')
        throw new HttpError(
          400,
          `manual conflict resolution applies to multi_leader clusters; this cluster is ${c.config.strategy}`,
        );
      const node = getNode(c, b.node_id);
      const r = await callNode(c.nodes.get(node) as NodeHandle, (h) =>
        h.remote.control({ kind: 'custom', name: 'resolve', args: { key: b.key, choice: b.choice } }),
      );
      if (!r.ok) throw new HttpError(statusOf(r.code, 'control'), r.error);
      c.kick();
      return { status: 200, body: r.data ?? { status: 'resolved', key: b.key, choice: b.choice } };
    },
    { body: ResolveConflictRequest },
  );

  // ---- nodes ----
  /** A refused node control (cluster.ts ReplicationError) becomes its table status; anything else is a bug. */
  const controlFailed = (err: unknown): never => {
    throw new HttpError(err instanceof ReplicationError ? statusOf(err.code, 'control') : 500, (err as Error).message);
  };
  app.post('/api/v1/clusters/:id/nodes', async (req) => {
    const c = getCluster(req);
    if (c.nodes.size >= nodeCountMax) throw new HttpError(409, `a cluster has at most ${nodeCountMax} nodes`);
    checkNodeRoom(1);
    const h = await c.addNode().catch(controlFailed);
    publish(c.id, { type: 'node_state_changed', node_id: h.id, data: { state: 'online', reason: 'added' } });
    return { status: 201, body: await c.nodeStatus(h.id) };
  });
  app.delete('/api/v1/clusters/:id/nodes/:nodeId', async (req) => {
    const c = getCluster(req);
    const nodeId = getNode(c, req.params['nodeId']);
    await c.removeNode(nodeId).catch(controlFailed);
    publish(c.id, { type: 'node_state_changed', node_id: nodeId, data: { state: 'offline', reason: 'removed' } });
    return { status: 204 };
  });
  app.post('/api/v1/clusters/:id/nodes/:nodeId/pause', async (req) => {
    const c = getCluster(req);
    const nodeId = getNode(c, req.params['nodeId']);
    await c.pause(nodeId).catch(controlFailed);
    publish(c.id, { type: 'node_state_changed', node_id: nodeId, data: { state: 'paused' } });
    return { status: 200, body: { status: 'paused', node: nodeId } };
  });
  app.post('/api/v1/clusters/:id/nodes/:nodeId/resume', async (req) => {
    const c = getCluster(req);
    const nodeId = getNode(c, req.params['nodeId']);
    await c.resume(nodeId).catch(controlFailed);
    publish(c.id, { type: 'node_state_changed', node_id: nodeId, data: { state: 'online' } });
    return { status: 200, body: { status: 'resumed', node: nodeId } };
  });
  app.post(
    '/api/v1/clusters/:id/nodes/:nodeId/clock-skew',
    async (req) => {
      const c = getCluster(req);
      const nodeId = getNode(c, req.params['nodeId']);
      const ms = (req.body as ClockSkewRequest).ms;
      await callNode(c.nodes.get(nodeId) as NodeHandle, (h) => h.remote.control({ kind: 'clock_skew', ms }));
      if (ms === 0) c.faults.close(`clock_skew ${nodeId}`, preciseNowMs());
      else c.faults.open(`clock_skew ${nodeId}`, { kind: 'clock_skew', node: nodeId, value: ms }, preciseNowMs());
      publish(c.id, { type: 'clock_skew_set', node_id: nodeId, data: { skew_ms: ms } });
      return { status: 200, body: { status: 'skewed', node: nodeId, skew_ms: ms } };
    },
    { body: ClockSkewRequest },
  );
  app.get('/api/v1/clusters/:id/nodes/:nodeId/log', async (req) => {
    const c = getCluster(req);
    const nodeId = getNode(c, req.params['nodeId']);
    return { status: 200, body: await callNode(c.nodes.get(nodeId) as NodeHandle, (h) => h.remote.log()) };
  });
  app.get('/api/v1/clusters/:id/nodes/:nodeId/store', async (req) => {
    const c = getCluster(req);
    const nodeId = getNode(c, req.params['nodeId']);
    const store = await callNode(c.nodes.get(nodeId) as NodeHandle, (h) => h.remote.store());
    const out: Record<string, KVEntry> = {};
    for (const [k, v] of Object.entries(store)) out[k] = toKVEntry(v);
    return { status: 200, body: out };
  });

  // Crash and restart (README "Node crashes"): the worker is killed with no goodbye; a restart
  // builds a new one from the node's durable storage, and it catches up by its strategy's repair.
  app.post('/api/v1/clusters/:id/nodes/:nodeId/crash', async (req) => {
    const c = getCluster(req);
    const nodeId = getNode(c, req.params['nodeId']);
    await c.crash(nodeId).catch(controlFailed);
    return { status: 200, body: { status: 'crashed', node: nodeId } };
  });
  app.post('/api/v1/clusters/:id/nodes/:nodeId/restart', async (req) => {
    const c = getCluster(req);
    const nodeId = getNode(c, req.params['nodeId']);
    if (c.nodes.get(nodeId)?.isDown) checkNodeRoom(1);
    await c.restart(nodeId).catch(controlFailed);
    publish(c.id, { type: 'node_state_changed', node_id: nodeId, data: { state: 'online', reason: 'restarted' } });
    return { status: 200, body: await c.nodeStatus(nodeId) };
  });
  app.post(
    '/api/v1/clusters/:id/nodes/:nodeId/stall',
    (req) => {
      const c = getCluster(req);
      const nodeId = getNode(c, req.params['nodeId']);
      const ms = (req.body as StallRequest).ms;
      if (ms > nodeStallMsMax) throw new HttpError(400, `ms: must be at most ${nodeStallMsMax} (nodeStallMsMax)`);
      const n = c.nodes.get(nodeId) as NodeHandle;
      if (n.isDown) throw new HttpError(409, `node ${nodeId} has crashed; restart it first`);
      // Not awaited: the node answers nothing until the stall ends.
      const stallKey = `stall ${nodeId}`;
      c.faults.open(stallKey, { kind: 'stall', node: nodeId, value: ms }, preciseNowMs());
      n.remote
        .stall(ms)
        .catch(() => {
          // crashed meanwhile
        })
        .finally(() => c.faults.close(stallKey, preciseNowMs()));
      return { status: 202, body: { status: 'stalled', node: nodeId, ms } };
    },
    { body: StallRequest },
  );

  // ---- network faults ----
  const checkNodes = (c: Cluster, ids: string[]): void => {
    for (const id of ids) if (!c.nodes.has(id)) throw new HttpError(400, `node ${id} is not in cluster ${c.id}`);
  };
  app.post(
    '/api/v1/clusters/:id/network/partition',
    (req) => {
      const c = getCluster(req);
      const b = req.body as PartitionRequest;
      checkNodes(c, [...b.group_a, ...b.group_b]);
      const a = new Set(b.group_a);
      const overlap = b.group_b.filter((x) => a.has(x));
      if (overlap.length > 0)
        throw new HttpError(400, `group_a and group_b must be disjoint (both contain ${overlap.join(', ')})`);
      if (new Set(b.group_a).size !== b.group_a.length || new Set(b.group_b).size !== b.group_b.length)
        throw new HttpError(400, 'a group lists the same node twice');
      const pid = c.fabric.partition(b.group_a, b.group_b);
      metrics.partitionActive.set({ cluster_id: c.id }, 1);
      publish(c.id, { type: 'partition_created', data: { partition_id: pid, group_a: b.group_a, group_b: b.group_b } });
      return { status: 201, body: { partition_id: pid } };
    },
    { body: PartitionRequest },
  );
  app.delete('/api/v1/clusters/:id/network/partition/:partId', (req) => {
    const c = getCluster(req);
    const pid = req.params['partId'] ?? '';
    if (!c.fabric.heal(pid)) throw new HttpError(404, `partition ${pid} not found in cluster ${c.id}`);
    metrics.partitionActive.set({ cluster_id: c.id }, c.fabric.partitions().size > 0 ? 1 : 0);
    publish(c.id, { type: 'partition_healed', data: { partition_id: pid } });
    c.kick();
    return { status: 204 };
  });
  app.post(
    '/api/v1/clusters/:id/network/latency',
    (req) => {
      const c = getCluster(req);
      const b = req.body as LatencyRequest;
      getNode(c, b.from);
      getNode(c, b.to);
      if (b.from === b.to) throw new HttpError(400, 'from and to must be different nodes');
      c.fabric.setLatency(b.from, b.to, b.ms);
      publish(c.id, { type: 'link_latency_set', data: { from: b.from, to: b.to, ms: b.ms } });
      return { status: 200, body: { status: 'latency set', from: b.from, to: b.to, ms: b.ms } };
    },
    { body: LatencyRequest },
  );
  app.post(
    '/api/v1/clusters/:id/network/drop',
    (req) => {
      const c = getCluster(req);
      const b = req.body as DropRequest;
      getNode(c, b.from);
      getNode(c, b.to);
      if (b.from === b.to) throw new HttpError(400, 'from and to must be different nodes');
      c.fabric.setDropRate(b.from, b.to, b.rate);
      publish(c.id, { type: 'link_drop_set', data: { from: b.from, to: b.to, rate: b.rate } });
      return { status: 200, body: { status: 'drop rate set', from: b.from, to: b.to, rate: b.rate } };
    },
    { body: DropRequest },
  );
  app.delete('/api/v1/clusters/:id/network/faults', (req) => {
    const c = getCluster(req);
    const healed = [...c.fabric.partitions().keys()];
    c.fabric.clearFaults();
    c.applyRegionLatency();
    metrics.partitionActive.set({ cluster_id: c.id }, 0);
    for (const pid of healed) publish(c.id, { type: 'partition_healed', data: { partition_id: pid } });
    // Latency and drop rates are back to their defaults too (inter-region latency stays).
    publish(c.id, { type: 'network_faults_cleared' });
    c.kick();
    return { status: 200, body: { status: 'faults cleared' } };
  });

  registerCheckerRoutes({ app, clusters, publish, checkNodeRoom });
  registerDemoRoutes(app);
  let boundPort = 0;
  registerScenarioRoutes({
    app,
    clusters,
    publish,
    createCluster: provision,
    selfBase: () => `http://127.0.0.1:${boundPort}`,
  });

  // ---- watching a cluster: its history and a snapshot to resynchronise from (README "Watching a cluster")

  /** GET .../history answers in these formats (`format=`); the interop issue adds `edn` here. */
  const historyFormats: Record<string, (page: HistoryPage) => HttpResult> = {
    json: (page) => ({ status: 200, body: page }),
  };
  app.get('/api/v1/clusters/:id/history', (req) => {
    const c = getCluster(req);
    const since = intQuery(req.query, 'since', 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = intQuery(req.query, 'limit', historyPageOpsDefault, 1, historyPageOpsMax);
    const format = req.query.get('format') ?? 'json';
    const render = Object.hasOwn(historyFormats, format) ? historyFormats[format] : undefined;
    if (render === undefined) {
      const known = Object.keys(historyFormats).join(', ');
      throw new HttpError(400, `format: must be one of ${known} (got ${JSON.stringify(format.slice(0, 32))})`);
    }
    const h = c.historyPage(since, limit);
    return render({
      cluster_id: c.id,
      time_unit: 'ms',
      from_index: h.first,
      next_since: h.first + h.ops.length,
      total: h.nextIndex,
      ops_dropped: h.firstIndex,
      ops: h.ops.map((op, i) => toHistoryRecord(op, h.first + i)),
      faults: c.faults.list(),
      faults_dropped: c.faults.dropped,
    });
  });
  app.get('/api/v1/clusters/:id/snapshot', async (req) => {
    const c = getCluster(req);
    // The seq in the numbering of the client's /ws stream (op_events as on /ws). Read before the
    // state is gathered: events after it may already show in the state; applying them again is
    // harmless (each event sets what it reports).
    const opEvents = flagQuery(req.query, 'op_events', true);
    if (!opEvents.ok) throw new HttpError(400, opEvents.error);
    const seq = (opEvents.value ? eventSeq : stateSeq).get(c.id) ?? 0;
    const timestamp = new Date().toISOString();
    const state = await c.state();
    const h = c.historyPage(Number.MAX_SAFE_INTEGER, 0);
    return {
      status: 200,
      body: {
        cluster_id: c.id,
        seq,
        timestamp,
        state,
        links: linkTotals(c.fabric),
        faults: c.faults.active(),
        history: {
          total: h.nextIndex,
          ops_dropped: h.firstIndex,
          faults_recorded: c.faults.list().length + c.faults.dropped,
        },
      },
    };
  });

  // ---- /ws ----
  // Capped in number (503 past REPLSIM_WS_CLIENTS_MAX); a client that lost events to its bounded
  // queue gets an events_dropped frame once it drains, so a page knows to resynchronise.
  // `?link_stats=1` adds link_stats frames (per-link aggregates) for the clusters watched.
  app.ws<WsData>('/ws', {
    upgrade: (info) => {
      const clusterId = info.query.get('cluster_id');
      if (clusterId !== null && clusterId.length > clusterIdCharsMax) {
        const error = `cluster_id: must not have more than ${clusterIdCharsMax} characters`;
        return { reject: { status: 400, error } };
      }
      const linkStats = flagQuery(info.query, 'link_stats', false);
      if (!linkStats.ok) return { reject: { status: 400, error: linkStats.error } };
      const opEvents = flagQuery(info.query, 'op_events', true);
      if (!opEvents.ok) return { reject: { status: 400, error: opEvents.error } };
      if (!hub.hasRoom()) {
        const error =
          `too many /ws clients (${hub.size} of ${wsClientsMax}); close one or raise ` + 'REPLSIM_WS_CLIENTS_MAX';
        return { reject: { status: 503, error } };
      }
      return { data: { clusterId, linkStats: linkStats.value, linkClusters: null, opEvents: opEvents.value } };
    },
    open: (c: WsClient<WsData>) => {
      if (!hub.add(c)) return;
      c.data.admitted = true;
      if (c.data.opEvents) opEventClients++;
      else opFreeClients++;
      if (c.data.linkStats) refreshLinkWatch();
    },
    // {"type":"watch_links","cluster_ids":[...] | null}: link_stats for these clusters only (within
    // the client's cluster_id scope), null for every cluster in scope, [] for none.
    message: (c, raw) => {
      const text = typeof raw === 'string' ? raw : raw.toString('utf8');
      const r = watchLinksRequest(text, opts.clustersMax ?? clustersMaxDefault);
      if (!r.ok) {
        c.sendNotice(JSON.stringify({ type: 'error', error: r.error }));
        return;
      }
      c.data.linkClusters = r.clusterIds === null ? null : new Set(r.clusterIds);
      c.data.linkStats = r.clusterIds === null || r.clusterIds.length > 0;
      refreshLinkWatch();
    },
    drain: (c) => hub.drained(c),
    close: (c) => {
      hub.remove(c);
      if (!c.data.admitted) return;
      if (c.data.opEvents) opEventClients--;
      else opFreeClients--;
      if (c.data.linkStats || c.data.linkClusters !== null) refreshLinkWatch();
    },
    maxQueueBytes: wsClientQueueBytes,
  });

  const port = await app.listen(opts.port, opts.host ?? '0.0.0.0');
  boundPort = port;
  actorPool.warm();
  return {
    port,
    app,
    clusters,
    close: async () => {
      if (linkStatsTimer !== undefined) clearInterval(linkStatsTimer);
      linkStatsTimer = undefined;
      app.close();
      await Promise.all([...clusters.keys()].map((id) => deleteCluster(id)));
      await actorPool.drain();
    },
  };
}

export type { ClusterState };

/**
 * Per /ws client: the cluster it watches (null: all), whether it wants link_stats frames and op
 * events (write_received, read_received: one per client operation), and whether the hub took it.
 */
interface WsData {
  clusterId: string | null;
  linkStats: boolean;
  /** Set by a watch_links message: the clusters whose link_stats it wants (null: all in scope). */
  linkClusters: Set<string> | null;
  opEvents: boolean;
  admitted?: boolean;
}

/** A /ws frame of per-link aggregates (link-stats.ts); seq is the cluster's latest event seq. */
interface LinkStatsFrame {
  type: 'link_stats';
  cluster_id: string;
  timestamp: string;
  seq: number;
  data: LinkStatsData;
}

/** The answer of GET .../history (format=json). */
interface HistoryPage {
  cluster_id: string;
  time_unit: 'ms';
  /** Index of ops[0]: since, or the oldest operation still held when since is older. */
  from_index: number;
  /** Pass as since to get the next page (== total when the page reached the newest). */
  next_since: number;
  /** Operations recorded since the cluster was created. */
  total: number;
  /** Operations that fell off the bounded history (indexes below this are gone). */
  ops_dropped: number;
  ops: HistoryRecord[];
  /** Every fault interval held, oldest first (open ones have end_ms null). */
  faults: FaultInterval[];
  faults_dropped: number;
}

/** An optional boolean query flag: absent -> `dflt`, 0/false, 1/true, anything else an error. */
function flagQuery(
  query: URLSearchParams,
  name: string,
  dflt: boolean,
): { ok: true; value: boolean } | { ok: false; error: string } {
  const v = query.get(name);
  if (v === null) return { ok: true, value: dflt };
  if (v === '0' || v === 'false') return { ok: true, value: false };
  if (v === '1' || v === 'true') return { ok: true, value: true };
  return { ok: false, error: `${name}: must be 1, true, 0 or false (got ${JSON.stringify(v.slice(0, 32))})` };
}

/** A watch_links message from a /ws client, decoded: the cluster ids (null: every cluster in scope) or why not. */
function watchLinksRequest(
  raw: string,
  idsMax: number,
): { ok: true; clusterIds: string[] | null } | { ok: false; error: string } {
  const usage = 'send {"type":"watch_links","cluster_ids":[<cluster id>, ...]} (null: every cluster, []: none)';
  let msg: unknown;
  try {
    msg = JSON.parse(raw);
  } catch {
    return { ok: false, error: `not JSON; ${usage}` };
  }
  if (typeof msg !== 'object' || msg === null || (msg as { type?: unknown }).type !== 'watch_links') {
    return { ok: false, error: `unknown message; ${usage}` };
  }
  const ids = (msg as { cluster_ids?: unknown }).cluster_ids;
  if (ids === null) return { ok: true, clusterIds: null };
  if (!Array.isArray(ids) || ids.length > idsMax) {
    return { ok: false, error: `cluster_ids: must be null or an array of at most ${idsMax} cluster ids; ${usage}` };
  }
  if (!ids.every((id): id is string => typeof id === 'string' && id.length <= clusterIdCharsMax)) {
    return { ok: false, error: `cluster_ids: each must be a string of at most ${clusterIdCharsMax} characters` };
  }
  return { ok: true, clusterIds: ids };
}

/** An optional integer query parameter in [min, max]; a 400 naming it otherwise. */
function intQuery(query: URLSearchParams, name: string, dflt: number, min: number, max: number): number {
  const raw = query.get(name);
  if (raw === null || raw === '') return dflt;
  const n = /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const got = JSON.stringify(raw.slice(0, 32));
    throw new HttpError(400, `${name}: must be an integer from ${min} to ${max} (got ${got})`);
  }
  return n;
}
