/**
 * The page's live state: the one `/ws` socket, the ClusterBook (model.ts) it feeds, and the
 * fetches the book asks for (a cluster's snapshot after lost events or an incomplete event, the
 * whole list on every connect). Changes reach the views as signals, at most once per flush
 * interval however many events arrive. It draws nothing and decides nothing about the model.
 */
import { batch, signal, type Signal } from '@preact/signals';
import { api } from '../shared/api.js';
import { EventSocket } from '../shared/ws.js';
import {
  ClusterBook,
  type BookAction,
  type ClusterModel,
  type ClusterStateWire,
  type FrameWire,
  type SnapshotWire,
} from './model.js';
import { LiveRecorder } from './timeline.js';

/**
 * Signals are refreshed at most this often after a change the page must show soon (a role, a
 * state, a partition); the refresh itself waits for the next animation frame, so the views redraw
 * right before a frame is painted and never in the middle of one.
 */
export const flushIntervalMs = 50;
/**
 * After activity only (replicated entries, lag, client operations: thousands a second under load,
 * each moving every node's indexes), the signals are refreshed at most this often.
 */
export const progressFlushMs = 200;
/** An event that says less than happened (an election) is followed by a state fetch this much later. */
export const refreshDelayMs = 300;
/** After a failed list fetch, the next try waits this long. */
export const resyncRetryMs = 1_000;
/**
 * The cluster on screen is also fetched this often: some changes come with no event (a raft
 * follower turning candidate when its leader goes quiet). A fetch that changes nothing changes no
 * signal, so nothing is redrawn; only the cluster shown is asked, and only while the page is visible.
 */
export const watchedRefreshMs = 1_000;

/** Notable events kept for the page's event list (the newest last), over every cluster. */
export const recentEventsMax = 200;
/** Event types too frequent to list (one per client operation or replicated entry). */
const unlisted = new Set(['write_received', 'read_received', 'entry_replicated', 'follower_lag', 'link_stats']);

/**
 * The page asks the server to batch its /ws events (`?batch_ms=`): at 64 nodes and thousands of
 * messages/s the server sends 1,500-2,000 events a second, and Chromium's cost per WebSocket
 * message (receive, task, parse) took about half the page's main thread; one frame per 50 ms
 * carries them all, well inside the contract's 2 s for an update to show.
 */
export const wsBatchMs = 50;

export class ReplicationStore {
  readonly book = new ClusterBook();
  readonly clusters: Signal<ReadonlyMap<string, ClusterModel>> = signal(new Map());
  readonly socket = new EventSocket(`/ws?batch_ms=${wsBatchMs}`);
  /** The last fetch that failed, shown in the header. */
  readonly fetchError: Signal<string | null> = signal(null);
  /** The last recentEventsMax notable events (elections, faults, membership), oldest first. */
  readonly recent: Signal<readonly FrameWire[]> = signal([]);
  private recentPending: FrameWire[] = [];
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the pending flush timer fires (performance.now() ms); Infinity when none is pending. */
  private flushDueAt = Infinity;
  private frameRequested = false;
  private flushedVersion = -1;
  private refreshTimers = new Map<string, ReturnType<typeof setTimeout>>();
  /** Time travel: the bounded record of the cluster on screen (timeline.ts), fed below. */
  readonly recorder = new LiveRecorder();
  /** The recorder's version as of the last flush (the time-travel panel redraws when it moves). */
  readonly recorderVersion: Signal<number> = signal(0);

  /**
   * Frame listeners besides the model (message flow, charts, narration): every frame, link_stats
   * included. Called synchronously; they must be cheap (link_stats come 10 times a second).
   */
  readonly listeners = new Set<(f: FrameWire) => void>();
  private watchedId: string | null = null;

  /** The cluster on screen (refreshed every watchedRefreshMs; its link_stats asked for); set by the page. */
  get watched(): string | null {
    return this.watchedId;
  }
  set watched(id: string | null) {
    if (id === this.watchedId) return;
    this.watchedId = id;
    this.recorder.watch(id);
    // The record starts with the cluster as the page shows it now.
    if (id !== null) this.recorder.onModel(Date.now(), this.book.get(id));
    this.watchLinks();
  }

  /** Asks the server for link_stats frames of the cluster on screen only (none when there is none). */
  private watchLinks(): void {
    this.socket.send(
      JSON.stringify({ type: 'watch_links', cluster_ids: this.watchedId === null ? [] : [this.watchedId] }),
    );
  }

  start(): void {
    setInterval(() => {
      if (this.watched === null || this.socket.status.value !== 'open' || document.visibilityState !== 'visible')
        return;
      if (this.book.get(this.watched)) void this.resync(this.watched);
    }, watchedRefreshMs);
    this.socket.subscribe((f) => this.onFrame(f));
    this.socket.opened.subscribe((n) => {
      if (n > 0) {
        this.watchLinks();
        void this.resyncAll();
      }
    });
    this.socket.start();
  }

  private onFrame(raw: unknown): void {
    if (raw === null || typeof raw !== 'object' || typeof (raw as { type?: unknown }).type !== 'string') return;
    const f = raw as FrameWire;
    for (const l of this.listeners) l(f);
    // Aggregates, not events: they carry the cluster's current seq, so the model must not see them.
    if (f.type === 'link_stats' || f.type === 'error') return;
    if (!unlisted.has(f.type)) this.recentPending.push(f);
    this.run(this.book.applyFrame(f));
    if (f.cluster_id !== undefined && f.cluster_id === this.watchedId)
      this.recorder.onFrame(Date.now(), f, this.book.get(f.cluster_id));
    this.scheduleFlush(!unlisted.has(f.type));
  }

  private run(actions: BookAction[]): void {
    for (const a of actions) {
      if (a.kind === 'resync_all') void this.resyncAll();
      else if (a.reason === 'incomplete') this.refreshSoon(a.clusterId);
      else void this.resync(a.clusterId);
    }
  }

  /** A state fetch of one cluster shortly (coalesced: one per cluster per delay). */
  refreshSoon(clusterId: string, delayMs = refreshDelayMs): void {
    if (this.refreshTimers.has(clusterId)) return;
    this.refreshTimers.set(
      clusterId,
      setTimeout(() => {
        this.refreshTimers.delete(clusterId);
        void this.resync(clusterId);
      }, delayMs),
    );
  }

  async resync(clusterId: string): Promise<void> {
    if (this.book.isResyncing(clusterId)) return;
    this.book.beginResync(clusterId);
    // The snapshot: the state, the event seq it is at, and the links' latency and drop rates.
    const r = await api.get<SnapshotWire>(`/api/v1/clusters/${encodeURIComponent(clusterId)}/snapshot`);
    if (r.ok) {
      this.run(this.book.finishResync(clusterId, r.body));
      this.recorder.onModel(Date.now(), this.book.get(clusterId));
    } else if (r.status === 404) this.run(this.book.finishResync(clusterId, null));
    else {
      this.book.abandonResync(clusterId);
      this.fetchError.value = `cluster ${clusterId}: ${r.error}`;
    }
    this.scheduleFlush();
  }

  async resyncAll(): Promise<void> {
    this.book.beginResyncAll();
    const r = await api.get<ClusterStateWire[]>('/api/v1/clusters');
    if (r.ok && Array.isArray(r.body)) {
      this.book.finishResyncAll(r.body);
      if (this.watched !== null) this.recorder.onModel(Date.now(), this.book.get(this.watched));
      this.fetchError.value = null;
      // The list has no seq nor link settings: the cluster on screen gets its snapshot at once.
      if (this.watched !== null && this.book.get(this.watched)) void this.resync(this.watched);
    } else {
      this.book.abandonResyncAll();
      this.fetchError.value = `cluster list: ${r.ok ? 'not a list' : r.error}`;
      setTimeout(() => {
        if (this.socket.status.value === 'open') void this.resyncAll();
      }, resyncRetryMs);
    }
    this.scheduleFlush();
  }

  /** A refresh of the signals within flushIntervalMs (`soon`) or progressFlushMs, whichever is pending first. */
  private scheduleFlush(soon = true): void {
    const delay = soon ? flushIntervalMs : progressFlushMs;
    const due = performance.now() + delay;
    if (this.flushTimer !== undefined) {
      if (due >= this.flushDueAt) return;
      clearTimeout(this.flushTimer);
    }
    this.flushDueAt = due;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.flushDueAt = Infinity;
      if (this.frameRequested) return;
      // A hidden page paints no frame (and runs no frame callback): its signals are refreshed at once.
      if (document.visibilityState !== 'visible') return this.flush();
      this.frameRequested = true;
      requestAnimationFrame(() => {
        this.frameRequested = false;
        this.flush();
      });
    }, delay);
  }

  /** Hands the batched changes to the signals (one redraw of the views that read them). */
  private flush(): void {
    batch(() => {
      if (this.recentPending.length > 0) {
        this.recent.value = [...this.recent.value, ...this.recentPending].slice(-recentEventsMax);
        this.recentPending = [];
      }
      if (this.recorderVersion.value !== this.recorder.version) this.recorderVersion.value = this.recorder.version;
      if (this.book.version === this.flushedVersion) return;
      this.flushedVersion = this.book.version;
      this.clusters.value = new Map(this.book.clusters());
    });
  }
}
