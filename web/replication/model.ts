/**
 * The page's local model of the simulator's clusters, as pure data and pure functions: built from
 * `GET /api/v1/clusters/{id}/state` snapshots, advanced by `/ws` event frames, and told when it must
 * resynchronise (a gap in a cluster's `seq`, an `events_dropped` frame, an event it cannot apply in
 * full). It does no I/O and knows nothing of the DOM or signals: store.ts fetches, this decides.
 */

// ---- the wire (the subset of the API's shapes the page reads) ----

export interface NodeStatusWire {
  id: string;
  role: string;
  state: string;
  commit_index: number;
  last_applied: number;
  leader_id: string;
  lag: number;
  stale_leader?: boolean;
  /** Raft only: the node's term and its vote in that term ('' when none). */
  term?: number;
  voted_for?: string;
}

export interface PartitionWire {
  id: string;
  group_a: Record<string, boolean>;
  group_b: Record<string, boolean>;
}

export interface ClusterStateWire {
  id: string;
  config: { strategy: string } & Record<string, unknown>;
  node_ids: string[];
  nodes: Record<string, NodeStatusWire>;
  leader_id?: string;
  partitions: Record<string, PartitionWire>;
  created: string;
}

/** One directed link's settings and counters (the snapshot's `links`; only the settings are read). */
export interface LinkWire {
  from: string;
  to: string;
  latency_ms: number;
  drop_rate: number;
}

/** GET /api/v1/clusters/{id}/snapshot: the state with the event seq it is at and the links' settings. */
export interface SnapshotWire {
  cluster_id: string;
  seq: number;
  state: ClusterStateWire;
  links?: LinkWire[];
}

/** A `/ws` frame: an event, or `events_dropped`. */
export interface FrameWire {
  type: string;
  cluster_id?: string;
  node_id?: string;
  timestamp?: string;
  seq?: number;
  data?: Record<string, unknown>;
}

// ---- the model ----

export interface NodeView {
  readonly id: string;
  /** The API's role: leader, follower, candidate, primary, replica, unknown (not heard yet). */
  readonly role: string;
  /** online, paused, offline, crashed, unresponsive. */
  readonly state: string;
  /** Gone from the cluster (DELETE node, or a committed raft removal); kept to be drawn as such. */
  readonly removed: boolean;
  readonly commitIndex: number;
  readonly lastApplied: number;
  readonly lag: number;
  readonly leaderId: string;
  readonly staleLeader: boolean;
  /** Raft only (absent for the other strategies): current term and the vote cast in it. */
  readonly term?: number;
  readonly votedFor?: string;
}

/** Latency and drop rate set on one direction of a link (absent: neither). */
export interface LinkSetting {
  readonly latencyMs: number;
  readonly dropRate: number;
}

export const linkId = (from: string, to: string): string => `${from} ${to}`;

export interface PartitionView {
  readonly id: string;
  readonly groupA: readonly string[];
  readonly groupB: readonly string[];
}

export interface ClusterModel {
  readonly id: string;
  readonly strategy: string;
  readonly config: Readonly<Record<string, unknown>>;
  /** Every node the page knows of, in the cluster's order, removed ones last. */
  readonly nodeIds: readonly string[];
  readonly nodes: Readonly<Record<string, NodeView>>;
  readonly leaderId: string | null;
  readonly partitions: Readonly<Record<string, PartitionView>>;
  /** Directed links with a latency or drop rate set (linkId keys), as of the last snapshot. */
  readonly links: Readonly<Record<string, LinkSetting>>;
  readonly created: string;
  /** The last `seq` applied; null right after a snapshot (the snapshot carries none). */
  readonly lastSeq: number | null;
  /** Events applied since the model was built (activity, for the page). */
  readonly eventsApplied: number;
}

/** Why the page should fetch a cluster's state again. */
export type ResyncReason =
  /** Events were lost (a `seq` gap or an `events_dropped` frame): the model may be wrong. */
  | 'lost_events'
  /** The event says something changed that it does not describe in full (roles after an election). */
  | 'incomplete'
  /** An event of a cluster the page has not seen yet. */
  | 'unknown_cluster';

export interface Applied {
  model: ClusterModel;
  resync: ResyncReason | null;
}

/** The label a node carries (the page contract): `<id> <role>[ paused| crashed| removed]`. */
export function nodeLabel(n: NodeView): string {
  const suffix =
    n.removed || n.state === 'offline'
      ? ' removed'
      : n.state === 'paused' || n.state === 'crashed' || n.state === 'unresponsive'
        ? ` ${n.state}`
        : '';
  return `${n.id} ${n.role}${suffix}`;
}

function nodeFromWire(w: NodeStatusWire): NodeView {
  return {
    id: w.id,
    role: w.role,
    state: w.state,
    removed: w.state === 'offline',
    commitIndex: w.commit_index,
    lastApplied: w.last_applied,
    lag: w.lag,
    leaderId: w.leader_id,
    staleLeader: w.stale_leader === true,
    ...(typeof w.term === 'number' ? { term: w.term } : {}),
    ...(typeof w.voted_for === 'string' ? { votedFor: w.voted_for } : {}),
  };
}

function blankNode(id: string): NodeView {
  return {
    id,
    role: 'unknown',
    state: 'online',
    removed: false,
    commitIndex: 0,
    lastApplied: 0,
    lag: 0,
    leaderId: '',
    staleLeader: false,
  };
}

function members(group: Record<string, boolean>): string[] {
  return Object.keys(group).filter((k) => group[k]);
}

/**
 * A model from a state snapshot. Nodes the previous model knew and the snapshot no longer lists
 * are kept as removed, so the page can still draw them crossed out.
 */
export function fromState(s: ClusterStateWire, previous?: ClusterModel): ClusterModel {
  const nodes: Record<string, NodeView> = {};
  const nodeIds: string[] = [];
  for (const id of s.node_ids) {
    const w = s.nodes[id];
    nodes[id] = w ? nodeFromWire(w) : blankNode(id);
    nodeIds.push(id);
  }
  if (previous) {
    for (const id of previous.nodeIds) {
      if (nodes[id]) continue;
      const old = previous.nodes[id] as NodeView;
      nodes[id] = { ...old, removed: true, state: 'offline' };
      nodeIds.push(id);
    }
  }
  const fresh: Record<string, PartitionView> = {};
  for (const [pid, p] of Object.entries(s.partitions)) {
    fresh[pid] = { id: p.id, groupA: members(p.group_a), groupB: members(p.group_b) };
  }
  // The same partitions keep the same object: the views redraw the links only when it changes.
  const partitions = previous && samePartitions(previous.partitions, fresh) ? previous.partitions : fresh;
  return {
    id: s.id,
    strategy: s.config.strategy,
    config: s.config,
    nodeIds,
    nodes,
    leaderId: s.leader_id ?? null,
    partitions,
    links: previous?.links ?? {},
    created: s.created,
    lastSeq: null,
    eventsApplied: 0,
  };
}

/** A model from a snapshot: the state, the links' settings, and the seq the snapshot is at. */
export function fromSnapshot(snap: SnapshotWire, previous?: ClusterModel): ClusterModel {
  const fresh: Record<string, LinkSetting> = {};
  for (const l of snap.links ?? []) {
    if (l.latency_ms > 0 || l.drop_rate > 0)
      fresh[linkId(l.from, l.to)] = { latencyMs: l.latency_ms, dropRate: l.drop_rate };
  }
  const links = previous && sameLinks(previous.links, fresh) ? previous.links : fresh;
  return { ...fromState(snap.state, previous), links, lastSeq: snap.seq };
}

function samePartitions(
  a: Readonly<Record<string, PartitionView>>,
  b: Readonly<Record<string, PartitionView>>,
): boolean {
  if (a === b) return true;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const pid of ka) {
    const x = a[pid] as PartitionView;
    const y = b[pid];
    if (!y || x.groupA.join() !== y.groupA.join() || x.groupB.join() !== y.groupB.join()) return false;
  }
  return true;
}

function sameLinks(a: Readonly<Record<string, LinkSetting>>, b: Readonly<Record<string, LinkSetting>>): boolean {
  if (a === b) return true;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    const x = a[k] as LinkSetting;
    const y = b[k];
    if (!y || x.latencyMs !== y.latencyMs || x.dropRate !== y.dropRate) return false;
  }
  return true;
}

/** A placeholder for a cluster announced by `cluster_created`, until its state arrives. */
export function fromCreated(f: FrameWire): ClusterModel | null {
  if (f.cluster_id === undefined) return null;
  const strategy = typeof f.data?.['strategy'] === 'string' ? (f.data['strategy'] as string) : 'unknown';
  const ids = Array.isArray(f.data?.['node_ids'])
    ? (f.data['node_ids'] as unknown[]).filter((x): x is string => typeof x === 'string')
    : [];
  const nodes: Record<string, NodeView> = {};
  for (const id of ids) nodes[id] = blankNode(id);
  return {
    id: f.cluster_id,
    strategy,
    config: { strategy },
    nodeIds: ids,
    nodes,
    leaderId: null,
    partitions: {},
    links: {},
    created: f.timestamp ?? '',
    lastSeq: f.seq ?? null,
    eventsApplied: 0,
  };
}

function withNode(m: ClusterModel, id: string, patch: Partial<NodeView>): ClusterModel {
  const old = m.nodes[id];
  const node: NodeView = { ...(old ?? blankNode(id)), ...patch };
  const nodeIds = old ? m.nodeIds : [...m.nodeIds, id];
  return { ...m, nodeIds, nodes: { ...m.nodes, [id]: node } };
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/**
 * Applies one event frame of this cluster. A frame whose `seq` is not the next one means events
 * were lost: the event is still applied (it is true), and a resync is asked for.
 */
export function applyEvent(m: ClusterModel, f: FrameWire): Applied {
  let resync: ResyncReason | null = null;
  let lastSeq = m.lastSeq;
  if (typeof f.seq === 'number') {
    if (lastSeq !== null && f.seq !== lastSeq + 1) resync = 'lost_events';
    lastSeq = f.seq;
  }
  const applied = applyBody(m, f);
  if (resync === null) resync = applied.resync;
  return { model: { ...applied.model, lastSeq, eventsApplied: m.eventsApplied + 1 }, resync };
}

function applyBody(m: ClusterModel, f: FrameWire): Applied {
  const node = f.node_id;
  const d = f.data ?? {};
  switch (f.type) {
    case 'node_state_changed': {
      if (node === undefined) return { model: m, resync: 'incomplete' };
      const state = typeof d['state'] === 'string' ? (d['state'] as string) : 'online';
      const reason = d['reason'];
      if (reason === 'removed' || state === 'offline') {
        return {
          model: withNode(m, node, { state: 'offline', removed: true, role: m.nodes[node]?.role ?? 'unknown' }),
          resync: null,
        };
      }
      // An added or restarted node's role, indexes and leader are not in the event.
      const partial = reason === 'added' || reason === 'restarted' || !m.nodes[node];
      return { model: withNode(m, node, { state, removed: false }), resync: partial ? 'incomplete' : null };
    }
    case 'node_crashed':
      if (node === undefined) return { model: m, resync: 'incomplete' };
      // A crashed single_leader leader is failed over: a leader_elected event follows.
      return { model: withNode(m, node, { state: 'crashed' }), resync: null };
    case 'leader_elected': {
      if (node === undefined) return { model: m, resync: 'incomplete' };
      let next = m;
      for (const id of m.nodeIds) {
        const n = m.nodes[id] as NodeView;
        if (id !== node && n.role === 'leader') {
          // single_leader demotes the old leader; a raft one keeps saying leader until it hears the new term.
          next = withNode(next, id, m.strategy === 'raft' ? { staleLeader: true } : { role: 'follower' });
        }
      }
      next = withNode(next, node, { role: 'leader', staleLeader: false, leaderId: node });
      // Followers learn the leader with the next heartbeat; their roles (candidates) are not in the event.
      return { model: { ...next, leaderId: node }, resync: m.strategy === 'raft' ? 'incomplete' : null };
    }
    case 'partition_created': {
      const pid = typeof d['partition_id'] === 'string' ? (d['partition_id'] as string) : undefined;
      if (pid === undefined) return { model: m, resync: 'incomplete' };
      const p: PartitionView = { id: pid, groupA: strings(d['group_a']), groupB: strings(d['group_b']) };
      return { model: { ...m, partitions: { ...m.partitions, [pid]: p } }, resync: null };
    }
    case 'partition_healed': {
      const pid = typeof d['partition_id'] === 'string' ? (d['partition_id'] as string) : undefined;
      if (pid === undefined || !m.partitions[pid]) return { model: m, resync: pid === undefined ? 'incomplete' : null };
      const partitions = { ...m.partitions };
      delete partitions[pid];
      return { model: { ...m, partitions }, resync: null };
    }
    case 'entry_replicated': {
      const index = num(d['index']);
      if (node === undefined || index === undefined || !m.nodes[node]) return { model: m, resync: null };
      const n = m.nodes[node] as NodeView;
      if (index <= n.lastApplied && index <= n.commitIndex) return { model: m, resync: null };
      return {
        model: withNode(m, node, {
          lastApplied: Math.max(n.lastApplied, index),
          commitIndex: Math.max(n.commitIndex, index),
        }),
        resync: null,
      };
    }
    case 'follower_lag': {
      const lag = num(d['lag_entries']);
      if (node === undefined || lag === undefined || !m.nodes[node]) return { model: m, resync: null };
      if (m.nodes[node]?.lag === lag) return { model: m, resync: null };
      return { model: withNode(m, node, { lag }), resync: null };
    }
    case 'membership_changed':
      // Voters changed: who is in and out is settled by the state (removed nodes also get node_state_changed).
      return { model: m, resync: 'incomplete' };
    default:
      // write_received, read_received, conflict_detected, ...: activity only.
      return { model: m, resync: null };
  }
}

/**
 * Whether two models show the same cluster (nodes, roles, states, indexes, leader, partitions): a
 * snapshot that changes nothing then leaves the model, and so the page, untouched.
 */
export function sameCluster(a: ClusterModel, b: ClusterModel): boolean {
  // Called on every event the page records (timeline.ts): parts an event leaves alone are shared
  // by reference between the two models, and compared as such first.
  if (a === b) return true;
  if (a.id !== b.id || a.strategy !== b.strategy || a.leaderId !== b.leaderId) return false;
  if (
    a.nodeIds !== b.nodeIds &&
    (a.nodeIds.length !== b.nodeIds.length || a.nodeIds.some((id, i) => b.nodeIds[i] !== id))
  )
    return false;
  for (const id of a.nodeIds) {
    const x = a.nodes[id] as NodeView;
    const y = b.nodes[id];
    if (x === y) continue;
    if (!y) return false;
    // Optional fields (a raft term) count too: a model without them differs from one with them.
    if (Object.keys(x).length !== Object.keys(y).length) return false;
    for (const k of Object.keys(x) as Array<keyof NodeView>) if (x[k] !== y[k]) return false;
  }
  return samePartitions(a.partitions, b.partitions) && sameLinks(a.links, b.links);
}

/** Where a link between two nodes stands with the cluster's partitions: cut when they are on opposite sides. */
export function linkCut(m: ClusterModel, a: string, b: string): boolean {
  for (const p of Object.values(m.partitions)) {
    const aInA = p.groupA.includes(a);
    const bInA = p.groupA.includes(b);
    const aInB = p.groupB.includes(a);
    const bInB = p.groupB.includes(b);
    if ((aInA && bInB) || (aInB && bInA)) return true;
  }
  return false;
}

/** The body of a partition isolating `selected` from the other live nodes, or why there is none. */
export function partitionRequest(
  m: ClusterModel,
  selected: readonly string[],
): { ok: true; body: { group_a: string[]; group_b: string[] } } | { ok: false; error: string } {
  const live = m.nodeIds.filter((id) => !(m.nodes[id] as NodeView).removed);
  const a = live.filter((id) => selected.includes(id));
  const b = live.filter((id) => !selected.includes(id));
  if (a.length === 0)
    return { ok: false, error: 'select the nodes to isolate first (click a node; shift-click adds one)' };
  if (b.length === 0) return { ok: false, error: 'every node is selected: leave at least one node on the other side' };
  return { ok: true, body: { group_a: a, group_b: b } };
}

// ---- every cluster: frames in, actions out ----

/** What the book asks its owner to do after a frame. */
export type BookAction = { kind: 'resync'; clusterId: string; reason: ResyncReason } | { kind: 'resync_all' };

/**
 * Every cluster's model, with the buffering a resync needs: while a cluster's state is being
 * fetched its events are kept and replayed on the snapshot, so nothing that happened after the
 * fetch began is lost and nothing before it is applied twice to any effect (events set values;
 * replaying the latest over a newer snapshot gives the same values).
 */
export class ClusterBook {
  private models = new Map<string, ClusterModel>();
  /** Clusters whose state is being fetched, with the frames that arrived meanwhile. */
  private pending = new Map<string, FrameWire[]>();
  /** Clusters whose buffer overflowed during the fetch: the snapshot may miss what was cut, so fetch again. */
  private overflowed = new Set<string>();
  /** The whole list is being fetched: every frame is kept. */
  private pendingAll: FrameWire[] | null = null;
  /** +1 on every change (the page re-reads `clusters()` when it moves). */
  version = 0;

  /** Frames kept per cluster while its state is fetched; past it they are cut and the fetch is repeated. */
  static readonly bufferedFramesMax = 20_000;

  clusters(): ReadonlyMap<string, ClusterModel> {
    return this.models;
  }

  get(id: string): ClusterModel | undefined {
    return this.models.get(id);
  }

  isResyncing(id: string): boolean {
    return this.pending.has(id) || this.pendingAll !== null;
  }

  /** One `/ws` frame; returns what should be fetched (deduplicated: nothing for a fetch already running). */
  applyFrame(f: FrameWire): BookAction[] {
    if (f.type === 'events_dropped') {
      if (f.cluster_id !== undefined) return this.ask(f.cluster_id, 'lost_events');
      return this.pendingAll === null ? [{ kind: 'resync_all' }] : [];
    }
    const cid = f.cluster_id;
    if (cid === undefined) return [];
    if (this.pendingAll !== null) {
      this.bufferAll(f);
      return [];
    }
    const buffered = this.pending.get(cid);
    if (buffered) {
      if (buffered.length >= ClusterBook.bufferedFramesMax) {
        buffered.length = 0;
        this.overflowed.add(cid);
      }
      buffered.push(f);
      return [];
    }
    const m = this.models.get(cid);
    if (!m) {
      if (f.type === 'cluster_created') {
        const created = fromCreated(f);
        if (created) {
          this.models.set(cid, created);
          this.version++;
        }
      }
      return this.ask(cid, 'unknown_cluster');
    }
    const r = applyEvent(m, f);
    if (r.model !== m) {
      this.models.set(cid, r.model);
      this.version++;
    }
    return r.resync ? this.ask(cid, r.resync) : [];
  }

  private bufferAll(f: FrameWire): void {
    const all = this.pendingAll as FrameWire[];
    if (all.length >= ClusterBook.bufferedFramesMax) all.length = 0;
    all.push(f);
  }

  private ask(cid: string, reason: ResyncReason): BookAction[] {
    if (this.pendingAll !== null || this.pending.has(cid)) return [];
    return [{ kind: 'resync', clusterId: cid, reason }];
  }

  /** A cluster's state fetch begins: its frames are kept from now on. */
  beginResync(id: string): void {
    if (!this.pending.has(id)) this.pending.set(id, []);
  }

  /**
   * A cluster's snapshot (or state) arrived, or null: it no longer exists. The frames kept
   * meanwhile are replayed on it (with a snapshot, only those past its seq); asks for another fetch
   * only when the buffer overflowed meanwhile.
   */
  finishResync(id: string, state: SnapshotWire | ClusterStateWire | null): BookAction[] {
    const buffered = this.pending.get(id) ?? [];
    this.pending.delete(id);
    const again = this.overflowed.delete(id);
    if (state === null) {
      this.models.delete(id);
      this.version++;
      return [];
    }
    const old = this.models.get(id);
    const next =
      'state' in state
        ? this.replay(
            fromSnapshot(state, old),
            buffered.filter((f) => (f.seq ?? Infinity) > state.seq),
          )
        : this.replay(fromState(state, old), buffered);
    if (old && sameCluster(old, next)) {
      // Nothing the page shows changed: keep the old model (its seq count is the newer one's).
      if (old.lastSeq !== next.lastSeq && next.lastSeq !== null) this.models.set(id, { ...old, lastSeq: next.lastSeq });
    } else {
      this.models.set(id, next);
      this.version++;
    }
    return again ? [{ kind: 'resync', clusterId: id, reason: 'lost_events' }] : [];
  }

  /** A fetch that failed (network): forget the buffering; the next frame or connect asks again. */
  abandonResync(id: string): void {
    this.pending.delete(id);
    this.overflowed.delete(id);
  }

  /** The whole list is being fetched (on connect, after a global `events_dropped`). */
  beginResyncAll(): void {
    this.pendingAll ??= [];
  }

  /** The list arrived: clusters it lacks are gone, the others rebuilt, the kept frames replayed. */
  finishResyncAll(states: ClusterStateWire[]): void {
    const frames = this.pendingAll ?? [];
    this.pendingAll = null;
    this.pending.clear();
    const next = new Map<string, ClusterModel>();
    for (const s of states) next.set(s.id, fromState(s, this.models.get(s.id)));
    this.models = next;
    for (const f of frames) {
      const cid = f.cluster_id;
      if (cid === undefined || f.type === 'events_dropped') continue;
      const m = this.models.get(cid);
      if (m) this.models.set(cid, applyEvent(m, f).model);
      else if (f.type === 'cluster_created') {
        const created = fromCreated(f);
        if (created) this.models.set(cid, created);
      }
    }
    this.version++;
  }

  abandonResyncAll(): void {
    this.pendingAll = null;
  }

  private replay(m: ClusterModel, frames: FrameWire[]): ClusterModel {
    let out = m;
    for (const f of frames) out = applyEvent(out, f).model;
    // The snapshot carries no seq: the replayed frames set it; none replayed leaves it open.
    return out;
  }
}
