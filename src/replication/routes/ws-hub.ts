/**
 * The replication service's /ws event stream: the capped hub of clients, the per-cluster seq
 * numbering (one with op events, one without), events_dropped notices, and the link_stats frames
 * a client subscribes to (`?link_stats=1`, or a watch_links message), and the batches a client may
 * ask for (`?batch_ms=N`: every frame of an N ms window in one JSON array message, for pages that
 * would otherwise pay a browser's per-message cost thousands of times a second). It turns core
 * events into frames and decides who gets them; it does not count metrics (a callback does) nor own
 * clusters.
 */
import Type from 'typebox';
import { WsHub, type HttpApp, type WsClient } from '../../http/index.js';
import type { EventsDroppedFrame, SimEvent } from '../../../protocol/replication.js';
import type { Cluster } from '../cluster.js';
import type { CoreEvent } from '../core.js';
import { LinkStatsSampler, type LinkStatsData, type OpCounts } from '../link-stats.js';
import {
  clusterIdCharsMax,
  linkStatsIntervalMs,
  wsBatchFramesMax,
  wsBatchMsMax,
  wsClientQueueBytes,
} from '../limits.js';
import { flagQuery, intQuery } from './request-helpers.js';

/**
 * Per /ws client: the cluster it watches (null: all), whether it wants link_stats frames and op
 * events (write_received, read_received: one per client operation), and whether the hub took it.
 */
export interface WsData {
  clusterId: string | null;
  linkStats: boolean;
  /** Set by a watch_links message: the clusters whose link_stats it wants (null: all in scope). */
  linkClusters: Set<string> | null;
  opEvents: boolean;
  admitted?: boolean;
  /** `?batch_ms=`: the batching window, ms (0: one message per frame). */
  batchMs: number;
  /** The frames of the open window (event and link_stats texts, in order) and how many are events. */
  batch?: string[];
  batchEvents?: number;
  batchTimer?: NodeJS.Timeout | undefined;
}

/** A /ws frame of per-link aggregates (link-stats.ts); seq is the cluster's latest event seq. */
interface LinkStatsFrame {
  type: 'link_stats';
  cluster_id: string;
  timestamp: string;
  seq: number;
  data: LinkStatsData;
}

export class EventStream {
  readonly hub: WsHub<WsData>;
  /** Per-cluster /ws sequence numbers: +1 for each event of the cluster broadcast (gaps = drops). */
  private readonly eventSeq = new Map<string, number>();
  /**
   * The same without the op events (write_received, read_received): the seq that clients which
   * asked for no op events (`op_events=0`) see, so that their stream has no gaps either.
   */
  private readonly stateSeq = new Map<string, number>();
  /** /ws clients that receive op events, and those that do not (counted on open and close). */
  private opEventClients = 0;
  private opFreeClients = 0;
  /** /ws clients that asked for batches (`batch_ms` > 0). */
  private batchClients = 0;
  // ---- link_stats (link-stats.ts): per watched cluster, every linkStatsIntervalMs, one frame
  // with each link's traffic over the interval. Not events: they do not advance the cluster's seq
  // (they carry its current one), and a frame a client's full queue cannot take is skipped, not
  // counted in events_dropped (the next frame covers the next interval).
  private readonly samplers = new Map<string, LinkStatsSampler>();
  private linkStatsTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly clusters: ReadonlyMap<string, Cluster>,
    readonly clientsMax: number,
    /** Events a slow client's full queue lost, at each broadcast (for sim_ws_events_dropped_total). */
    private readonly onDropped: (count: number) => void,
  ) {
    this.hub = new WsHub<WsData>({
      clientsMax,
      dropNotice: (client, count) => {
        const timestamp = new Date().toISOString();
        const frame: EventsDroppedFrame = { type: 'events_dropped', timestamp, data: { count } };
        const cid = client.data.clusterId;
        if (cid !== null) {
          frame.cluster_id = cid;
          frame.seq = this.seqOf(client, cid);
        } else {
          frame.data.last_seq = Object.fromEntries(client.data.opEvents ? this.eventSeq : this.stateSeq);
        }
        return JSON.stringify(frame);
      },
    });
  }

  /** True while some client receives op events: without one, they are neither built nor numbered. */
  get opEventsWanted(): boolean {
    return this.opEventClients > 0;
  }

  /** The cluster's latest seq in the numbering with (`opEvents`) or without op events. */
  seq(clusterId: string, opEvents: boolean): number {
    return (opEvents ? this.eventSeq : this.stateSeq).get(clusterId) ?? 0;
  }

  private seqOf(client: WsClient<WsData>, clusterId: string): number {
    return this.seq(clusterId, client.data.opEvents);
  }

  /** Sends one core event of a cluster to the clients that watch it, numbered in both sequences. */
  broadcast(clusterId: string, e: CoreEvent): void {
    const hub = this.hub;
    if (hub.size === 0) return;
    // An op event nobody receives is not sent and takes no seq.
    const opEvent = e.type === 'write_received' || e.type === 'read_received';
    if (opEvent && this.opEventClients === 0) return;
    const known = this.clusters.has(clusterId);
    const seq = (this.eventSeq.get(clusterId) ?? 0) + 1;
    if (known) this.eventSeq.set(clusterId, seq);
    const env: SimEvent = { type: e.type, cluster_id: clusterId, timestamp: new Date().toISOString(), seq };
    if (e.node_id) env.node_id = e.node_id;
    if (e.data) env.data = e.data;
    const before = hub.droppedTotal;
    const watches = (c: WsClient<WsData>): boolean => c.data.clusterId === null || c.data.clusterId === clusterId;
    if (this.opEventClients > 0) this.publish(JSON.stringify(env), (c) => c.data.opEvents && watches(c));
    if (!opEvent) {
      const stateSeqNext = (this.stateSeq.get(clusterId) ?? 0) + 1;
      if (known) this.stateSeq.set(clusterId, stateSeqNext);
      if (this.opFreeClients > 0) {
        env.seq = stateSeqNext;
        this.publish(JSON.stringify(env), (c) => !c.data.opEvents && watches(c));
      }
    }
    if (hub.droppedTotal > before) this.onDropped(hub.droppedTotal - before);
  }

  /** One event's text to the clients `filter` admits: sent now, or added to a batching client's window. */
  private publish(text: string, filter: (c: WsClient<WsData>) => boolean): void {
    if (this.batchClients === 0) {
      this.hub.publish(text, filter);
      return;
    }
    for (const c of this.hub.clients) {
      if (!filter(c)) continue;
      if (c.data.batchMs > 0) this.addToBatch(c, text, true);
      else this.hub.sendTo(c, text);
    }
  }

  /** Adds a frame to the client's open window (opening one, with its timer); a full window is sent at once. */
  private addToBatch(c: WsClient<WsData>, text: string, isEvent: boolean): void {
    const d = c.data;
    const batch = (d.batch ??= []);
    batch.push(text);
    if (isEvent) d.batchEvents = (d.batchEvents ?? 0) + 1;
    if (batch.length >= wsBatchFramesMax) this.sendBatch(c);
    else if (d.batchTimer === undefined) d.batchTimer = setTimeout(() => this.sendBatch(c), d.batchMs);
  }

  /**
   * Sends the client's open window as one JSON array. Lost to a full queue, it counts as the events
   * it held (link_stats frames in it are not events: skipped, not counted, as when sent alone).
   */
  private sendBatch(c: WsClient<WsData>): void {
    const d = c.data;
    clearTimeout(d.batchTimer);
    d.batchTimer = undefined;
    const batch = d.batch;
    if (batch === undefined || batch.length === 0) return;
    const events = d.batchEvents ?? 0;
    d.batch = [];
    d.batchEvents = 0;
    const text = `[${batch.join(',')}]`;
    if (events === 0) {
      c.sendNotice(text);
      return;
    }
    const before = this.hub.droppedTotal;
    this.hub.sendTo(c, text, events);
    if (this.hub.droppedTotal > before) this.onDropped(this.hub.droppedTotal - before);
  }

  /** A closing client's open window goes with it. */
  private dropBatch(c: WsClient<WsData>): void {
    clearTimeout(c.data.batchTimer);
    c.data.batchTimer = undefined;
    c.data.batch = undefined;
  }

  /** A deleted cluster: its numbering goes, and so does its link sampler (no walk over the other clusters). */
  forget(clusterId: string): void {
    this.eventSeq.delete(clusterId);
    this.stateSeq.delete(clusterId);
    if (this.samplers.delete(clusterId)) this.setLinkStatsTimer();
  }

  /**
   * A new cluster: sampled at once when a client watches its links. It asks the clients (at most
   * REPLSIM_WS_CLIENTS_MAX), not every cluster as refreshLinkWatch does, so creating N clusters
   * costs O(N), not O(N^2).
   */
  clusterAdded(c: Cluster): void {
    let on = false;
    for (const client of this.hub.clients) {
      if (this.watchesLinks(client, c.id)) {
        on = true;
        break;
      }
    }
    if (!on || this.samplers.has(c.id)) return;
    this.startSampling(c);
    this.setLinkStatsTimer();
  }

  private startSampling(c: Cluster): void {
    c.countMessageKinds(true);
    const ops = (): OpCounts => ({ writes: c.writes, reads: c.reads, write_failures: c.writeFailures });
    this.samplers.set(c.id, new LinkStatsSampler(c.fabric, performance.now(), ops));
  }

  /** One shared timer for every sampled cluster's link_stats, running while at least one is sampled. */
  private setLinkStatsTimer(): void {
    if (this.samplers.size > 0 && this.linkStatsTimer === undefined) {
      this.linkStatsTimer = setInterval(() => this.sendLinkStats(), linkStatsIntervalMs);
      this.linkStatsTimer.unref();
    } else if (this.samplers.size === 0 && this.linkStatsTimer !== undefined) {
      clearInterval(this.linkStatsTimer);
      this.linkStatsTimer = undefined;
    }
  }

  private watchesLinks(client: WsClient<WsData>, clusterId: string): boolean {
    return (
      client.data.linkStats &&
      (client.data.clusterId === null || client.data.clusterId === clusterId) &&
      (client.data.linkClusters === null || client.data.linkClusters.has(clusterId))
    );
  }

  /** After a /ws client came, went or changed its watch: which clusters' links are watched, and the timer. */
  refreshLinkWatch(): void {
    let all = false;
    const watched = new Set<string>();
    for (const client of this.hub.clients) {
      const d = client.data;
      if (!d.linkStats) continue;
      if (d.linkClusters !== null) {
        for (const id of d.linkClusters) if (d.clusterId === null || d.clusterId === id) watched.add(id);
      } else if (d.clusterId === null) all = true;
      else watched.add(d.clusterId);
    }
    const samplers = this.samplers;
    for (const c of this.clusters.values()) {
      const on = all || watched.has(c.id);
      c.countMessageKinds(on);
      if (on && !samplers.has(c.id)) this.startSampling(c);
      if (!on) samplers.delete(c.id);
    }
    for (const id of samplers.keys()) if (!this.clusters.has(id)) samplers.delete(id);
    this.setLinkStatsTimer();
  }

  private sendLinkStats(): void {
    const now = performance.now();
    // The clients that want link_stats at all, found once per tick rather than once per cluster.
    const watchers: Array<WsClient<WsData>> = [];
    for (const client of this.hub.clients) if (client.data.linkStats) watchers.push(client);
    const timestamp = new Date().toISOString();
    for (const [clusterId, sampler] of this.samplers) {
      const data = sampler.sample(now);
      if (data === undefined) continue;
      const frame: LinkStatsFrame = { type: 'link_stats', cluster_id: clusterId, timestamp, seq: 0, data };
      // One text per seq numbering (with and without op events), built when a client needs it.
      const texts: [string | undefined, string | undefined] = [undefined, undefined];
      for (const client of watchers) {
        if (!this.watchesLinks(client, clusterId)) continue;
        const v = client.data.opEvents ? 0 : 1;
        let text = texts[v];
        if (text === undefined) {
          frame.seq = this.seqOf(client, clusterId);
          text = texts[v] = JSON.stringify(frame);
        }
        if (client.data.batchMs > 0) this.addToBatch(client, text, false);
        else client.sendNotice(text);
      }
    }
  }

  /**
   * GET /ws. Capped in number (503 past REPLSIM_WS_CLIENTS_MAX); a client that lost events to its
   * bounded queue gets an events_dropped frame once it drains, so a page knows to resynchronise.
   * `?link_stats=1` adds link_stats frames (per-link aggregates) for the clusters watched.
   */
  register(app: HttpApp, clustersMax: number): void {
    const hub = this.hub;
    app.ws<WsData>(
      '/ws',
      {
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
          const batchMs = intQuery(info.query, 'batch_ms', 0, 0, wsBatchMsMax);
          if (!hub.hasRoom()) {
            const error =
              `too many /ws clients (${hub.size} of ${this.clientsMax}); close one or raise ` +
              'REPLSIM_WS_CLIENTS_MAX';
            return { reject: { status: 503, error } };
          }
          return {
            data: { clusterId, linkStats: linkStats.value, linkClusters: null, opEvents: opEvents.value, batchMs },
          };
        },
        open: (c: WsClient<WsData>) => {
          if (!hub.add(c)) return;
          c.data.admitted = true;
          if (c.data.opEvents) this.opEventClients++;
          else this.opFreeClients++;
          if (c.data.batchMs > 0) this.batchClients++;
          if (c.data.linkStats) this.refreshLinkWatch();
        },
        // {"type":"watch_links","cluster_ids":[...] | null}: link_stats for these clusters only (within
        // the client's cluster_id scope), null for every cluster in scope, [] for none.
        message: (c, raw) => {
          const text = typeof raw === 'string' ? raw : raw.toString('utf8');
          const r = watchLinksRequest(text, clustersMax);
          if (!r.ok) {
            c.sendNotice(JSON.stringify({ type: 'error', error: r.error }));
            return;
          }
          c.data.linkClusters = r.clusterIds === null ? null : new Set(r.clusterIds);
          c.data.linkStats = r.clusterIds === null || r.clusterIds.length > 0;
          this.refreshLinkWatch();
        },
        drain: (c) => hub.drained(c),
        close: (c) => {
          hub.remove(c);
          if (!c.data.admitted) return;
          if (c.data.opEvents) this.opEventClients--;
          else this.opFreeClients--;
          if (c.data.batchMs > 0) {
            this.batchClients--;
            this.dropBatch(c);
          }
          if (c.data.linkStats || c.data.linkClusters !== null) this.refreshLinkWatch();
        },
        maxQueueBytes: wsClientQueueBytes,
      },
      {
        summary: 'Live cluster events (WebSocket; cluster_id, link_stats, op_events, batch_ms)',
        query: Type.Object({
          cluster_id: Type.Optional(Type.String()),
          link_stats: Type.Optional(
            Type.Union([Type.Literal('1'), Type.Literal('true'), Type.Literal('0'), Type.Literal('false')]),
          ),
          op_events: Type.Optional(
            Type.Union([Type.Literal('1'), Type.Literal('true'), Type.Literal('0'), Type.Literal('false')]),
          ),
          batch_ms: Type.Optional(
            Type.String({
              pattern: '^[0-9]{1,4}$',
              description: `0 to ${wsBatchMsMax}: frames of each window of that many ms in one JSON array message`,
            }),
          ),
        }),
      },
    );
  }

  /** Stops the link_stats timer (the server is closing). */
  close(): void {
    if (this.linkStatsTimer !== undefined) clearInterval(this.linkStatsTimer);
    this.linkStatsTimer = undefined;
    for (const c of this.hub.clients) this.dropBatch(c);
  }
}

/** A watch_links message from a /ws client, decoded: the cluster ids (null: every cluster in scope) or why not. */
export function watchLinksRequest(
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
