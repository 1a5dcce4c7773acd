/**
 * Time travel for the replication page, as pure data and pure functions: a bounded record of how one
 * cluster changed (the step that changed it, with the whole state as a checkpoint every
 * checkpointEveryEntries entries and wherever a step alone does not explain the change, such as a
 * snapshot fetched after lost events), and replay to any recorded point. It also reads a swarm trace
 * file (src/replication/swarm/trace-file.ts) into such a record. No DOM, signals or I/O: store.ts
 * feeds the live record, timeline-panel.tsx draws the controls.
 */
import { applyEvent, linkId, sameCluster, type ClusterModel, type FrameWire, type NodeView } from './model.js';

/** Entries one record keeps; past it the oldest go, a checkpoint interval at a time. */
export const timelineEntriesMax = 5_000;
/** A whole state is kept at least once in this many entries (the cost of replaying to any point). */
export const checkpointEveryEntries = 64;
/** Largest trace file the page opens (bytes); the swarm's caps keep real ones far below. */
export const traceFileBytesMax = 32 * 1024 * 1024;
/** Points one opened trace keeps (a trace's state events are capped by its writer at 20,000). */
export const traceTimelineEntriesMax = 20_000;
/** Message lines kept per point of a trace (the latest ones before it). */
export const traceMessagesPerPointMax = 8;

/** What the topology shows at one point: the model, and each node's raft term where known. */
export interface ReplayState {
  readonly model: ClusterModel;
  readonly terms: Readonly<Record<string, number>>;
}

export interface TimelineEntry<S> {
  /** Wall-clock ms (live) or virtual ms since the run began (trace). */
  readonly at: number;
  /** What happened, in words (the event's type, or "snapshot"). */
  readonly label: string;
  /** The step that led here from the previous entry; null at a checkpoint that no step explains. */
  readonly step: S | null;
  /** The whole state here, every checkpointEveryEntries entries and where a step does not explain it. */
  readonly checkpoint: ReplayState | null;
}

export type Apply<S> = (state: ReplayState, step: S) => ReplayState;

/** Whether two states show the same thing (model as sameCluster compares it, and the terms). */
export function sameState(a: ReplayState, b: ReplayState): boolean {
  if (!sameCluster(a.model, b.model)) return false;
  const ka = Object.keys(a.terms);
  if (ka.length !== Object.keys(b.terms).length) return false;
  return ka.every((k) => a.terms[k] === b.terms[k]);
}

/**
 * A bounded record of one cluster's states. `record` keeps a point only when what is shown changed;
 * `stateAt(i)` rebuilds point i from the checkpoint before it and the steps since.
 */
export class Timeline<S> {
  private entries: Array<TimelineEntry<S>> = [];
  private last: ReplayState | null = null;
  private sinceCheckpoint = 0;
  /** Entries cut from the front to stay within the bound. */
  dropped = 0;

  constructor(
    private readonly apply: Apply<S>,
    readonly entriesMax = timelineEntriesMax,
    readonly checkpointEvery = checkpointEveryEntries,
  ) {
    if (checkpointEvery < 1 || entriesMax < checkpointEvery) throw new RangeError('need 1 <= checkpointEvery <= max');
  }

  get length(): number {
    return this.entries.length;
  }

  entry(i: number): TimelineEntry<S> | undefined {
    return this.entries[i];
  }

  /**
   * The state after `step` (null: a state no step explains, such as a fetched snapshot). Returns
   * false, keeping nothing, when nothing shown changed.
   */
  record(at: number, label: string, step: S | null, state: ReplayState): boolean {
    const prev = this.last;
    if (prev !== null && sameState(prev, state)) return false;
    const explained = prev !== null && step !== null && sameState(this.apply(prev, step), state);
    const checkpoint = !explained || this.sinceCheckpoint + 1 >= this.checkpointEvery;
    this.entries.push({ at, label, step: explained ? step : null, checkpoint: checkpoint ? state : null });
    this.sinceCheckpoint = checkpoint ? 0 : this.sinceCheckpoint + 1;
    this.last = state;
    if (this.entries.length > this.entriesMax) this.trim();
    return true;
  }

  /** Cuts the oldest entries, up to the first checkpoint that leaves at most entriesMax. */
  private trim(): void {
    let k = this.entries.length - this.entriesMax;
    while (k < this.entries.length && (this.entries[k] as TimelineEntry<S>).checkpoint === null) k++;
    this.entries.splice(0, k);
    this.dropped += k;
  }

  /** The state at point i (0 <= i < length). */
  stateAt(i: number): ReplayState {
    if (i < 0 || i >= this.entries.length) throw new RangeError(`no point ${i} in ${this.entries.length}`);
    let k = i;
    while ((this.entries[k] as TimelineEntry<S>).checkpoint === null) k--;
    let s = (this.entries[k] as TimelineEntry<S>).checkpoint as ReplayState;
    for (let j = k + 1; j <= i; j++) s = this.apply(s, (this.entries[j] as TimelineEntry<S>).step as S);
    return s;
  }
}

// ---- the live record: /ws frames ----

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** A live frame applied as the page's model applies it; a frame naming a term records it. */
export const applyFrame: Apply<FrameWire> = (s, f) => {
  const model = applyEvent(s.model, f).model;
  const term = num(f.data?.['term']);
  const node = f.node_id;
  const terms =
    term !== undefined && node !== undefined && s.terms[node] !== term ? { ...s.terms, [node]: term } : s.terms;
  return { model, terms };
};

export const liveTimeline = (): Timeline<FrameWire> => new Timeline(applyFrame);

// ---- a swarm trace file ----

export type TraceNodeEvent = {
  t: number;
  kind: 'node';
  node: string;
  role: string;
  term?: number;
  state: string;
  commit_index: number;
  leader_id: string;
};
/** The trace events the topology replays (traffic events are counted, not replayed). */
export type TraceStep =
  | TraceNodeEvent
  | { t: number; kind: 'partition'; partition_id: string; group_a: string[]; group_b: string[] }
  | { t: number; kind: 'heal'; partition_id: string }
  | { t: number; kind: 'latency'; from: string; to: string; ms: number }
  | { t: number; kind: 'drop_rate'; from: string; to: string; rate: number }
  | { t: number; kind: 'clear' };

export interface TraceInfo {
  seed: number;
  strategy: string;
  replay: string;
  ok: boolean;
  nodes: string[];
  /** Events in the file, replayed or not, and how many the writer left out. */
  events: number;
  dropped: number;
  /** What the run's checks found (empty when it passed). */
  violations: string[];
}

/** The traffic between the previous point and this one. */
export interface PointTraffic {
  delivered: number;
  dropped: number;
  /** The latest message lines ("t n1→n2 summary"), at most traceMessagesPerPointMax. */
  latest: string[];
}

export interface LoadedTrace {
  info: TraceInfo;
  /** One point per virtual instant at which something shown changed. */
  timeline: Timeline<TraceStep[]>;
  /** traffic[i]: the messages delivered and dropped on the way to point i. */
  traffic: PointTraffic[];
}

/** A traffic event of a trace file as counts and a line, or null when it is not one. */
function trafficOf(v: unknown): { t: number; dropped: boolean; line: string } | null {
  if (v === null || typeof v !== 'object') return null;
  const e = v as Record<string, unknown>;
  const t = num(e['t']);
  if (t === undefined || (e['kind'] !== 'message' && e['kind'] !== 'dropped')) return null;
  const dropped = e['kind'] === 'dropped';
  const what = [dropped ? String(e['cause']) : '', String(e['summary'] ?? '')].filter((x) => x !== '').join(' ');
  return { t, dropped, line: `${t} ms ${String(e['from'])}→${String(e['to'])} ${what}` };
}

const str = (v: unknown): v is string => typeof v === 'string';
const strs = (v: unknown): v is string[] => Array.isArray(v) && v.every(str);

/** One trace event as a replay step, or null (traffic, or a shape the page does not know). */
function traceStep(v: unknown): TraceStep | null {
  if (v === null || typeof v !== 'object') return null;
  const e = v as Record<string, unknown>;
  const t = num(e['t']);
  if (t === undefined) return null;
  switch (e['kind']) {
    case 'node':
      if (!str(e['node']) || !str(e['role']) || !str(e['state'])) return null;
      return {
        t,
        kind: 'node',
        node: e['node'],
        role: e['role'],
        ...(num(e['term']) !== undefined ? { term: e['term'] as number } : {}),
        state: e['state'],
        commit_index: num(e['commit_index']) ?? 0,
        leader_id: str(e['leader_id']) ? e['leader_id'] : '',
      };
    case 'partition':
      if (!str(e['partition_id']) || !strs(e['group_a']) || !strs(e['group_b'])) return null;
      return { t, kind: 'partition', partition_id: e['partition_id'], group_a: e['group_a'], group_b: e['group_b'] };
    case 'heal':
      return str(e['partition_id']) ? { t, kind: 'heal', partition_id: e['partition_id'] } : null;
    case 'latency': {
      const ms = num(e['ms']);
      return str(e['from']) && str(e['to']) && ms !== undefined
        ? { t, kind: 'latency', from: e['from'], to: e['to'], ms }
        : null;
    }
    case 'drop_rate': {
      const rate = num(e['rate']);
      return str(e['from']) && str(e['to']) && rate !== undefined
        ? { t, kind: 'drop_rate', from: e['from'], to: e['to'], rate }
        : null;
    }
    case 'clear':
      return { t, kind: 'clear' };
    default:
      return null;
  }
}

function withLink(
  m: ClusterModel,
  from: string,
  to: string,
  patch: { latencyMs?: number; dropRate?: number },
): ClusterModel {
  const k = linkId(from, to);
  const old = m.links[k] ?? { latencyMs: 0, dropRate: 0 };
  const next = { ...old, ...patch };
  const links = { ...m.links };
  if (next.latencyMs > 0 || next.dropRate > 0) links[k] = next;
  else delete links[k];
  return { ...m, links };
}

/** A trace step applied to the shown state: the model's own shapes, so the same topology draws it. */
export const applyTraceStep: Apply<TraceStep> = (s, e) => {
  const m = s.model;
  switch (e.kind) {
    case 'node': {
      const removed = e.state === 'removed';
      const node: NodeView = {
        ...(m.nodes[e.node] ?? blankNodeView(e.node)),
        role: e.role,
        // The page says "crashed"; "removed" shows as such through `removed` (model.ts nodeLabel).
        state: removed ? 'offline' : e.state,
        removed,
        commitIndex: e.commit_index,
        leaderId: e.leader_id,
      };
      const nodeIds = m.nodes[e.node] ? m.nodeIds : [...m.nodeIds, e.node];
      let leaderId = m.leaderId;
      if (e.role === 'leader' && e.state === 'online') leaderId = e.node;
      else if (leaderId === e.node) leaderId = null;
      const terms = e.term !== undefined && s.terms[e.node] !== e.term ? { ...s.terms, [e.node]: e.term } : s.terms;
      return { model: { ...m, nodeIds, nodes: { ...m.nodes, [e.node]: node }, leaderId }, terms };
    }
    case 'partition':
      return {
        model: {
          ...m,
          partitions: {
            ...m.partitions,
            [e.partition_id]: { id: e.partition_id, groupA: e.group_a, groupB: e.group_b },
          },
        },
        terms: s.terms,
      };
    case 'heal': {
      const partitions = { ...m.partitions };
      delete partitions[e.partition_id];
      return { model: { ...m, partitions }, terms: s.terms };
    }
    case 'latency':
      return { model: withLink(m, e.from, e.to, { latencyMs: e.ms }), terms: s.terms };
    case 'drop_rate':
      return { model: withLink(m, e.from, e.to, { dropRate: e.rate }), terms: s.terms };
    case 'clear':
      return { model: { ...m, partitions: {}, links: {} }, terms: s.terms };
  }
};

/** What happened at one instant, in order. */
export const applyTraceSteps: Apply<TraceStep[]> = (s, steps) => steps.reduce(applyTraceStep, s);

function blankNodeView(id: string): NodeView {
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

/** A trace label: what the step did, in words. */
function traceLabel(e: TraceStep): string {
  switch (e.kind) {
    case 'node': {
      const term = e.term !== undefined ? ` term ${e.term}` : '';
      return `${e.node} ${e.role}${term}${e.state !== 'online' ? ` ${e.state}` : ''}`;
    }
    case 'partition':
      return `partition ${e.group_a.join(' ')} | ${e.group_b.join(' ')}`;
    case 'heal':
      return `heal ${e.partition_id}`;
    case 'latency':
      return `latency ${e.from}→${e.to} ${e.ms} ms`;
    case 'drop_rate':
      return `drop rate ${e.from}→${e.to} ${Math.round(e.rate * 100)}%`;
    case 'clear':
      return 'every link fault cleared';
  }
}

/**
 * A trace file's text as a replayable record, or why it cannot be read. The record keeps the whole
 * run when it fits in entriesMax (a trace's state events are capped by its writer), else its start.
 */
export function loadTrace(text: string, entriesMax = traceTimelineEntriesMax): LoadedTrace | { error: string } {
  if (text.length > traceFileBytesMax) return { error: `the file is over ${traceFileBytesMax} bytes` };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { error: 'not JSON: open a file written by cli.js --trace-out' };
  }
  if (raw === null || typeof raw !== 'object') return { error: 'not a trace file' };
  const f = raw as Record<string, unknown>;
  if (f['format'] !== 'simlab-swarm-trace') return { error: 'not a simlab swarm trace (format)' };
  if (f['version'] !== 1) return { error: `trace version ${String(f['version'])} is not supported (1 is)` };
  const seed = num(f['seed']);
  if (seed === undefined || !str(f['strategy']) || !strs(f['nodes']) || !Array.isArray(f['events']))
    return { error: 'a trace file needs seed, strategy, nodes and events' };
  const nodes = f['nodes'];
  const events = f['events'] as unknown[];
  const model: ClusterModel = {
    id: `trace seed ${seed}`,
    strategy: f['strategy'],
    config: { strategy: f['strategy'] },
    nodeIds: [],
    nodes: {},
    leaderId: null,
    partitions: {},
    links: {},
    created: '',
    lastSeq: null,
    eventsApplied: 0,
  };
  // Nodes appear with their first node event (the writer samples every node at t = 0). One point
  // per instant: what happened at one virtual time is one step, so every point is a real state.
  let state: ReplayState = { model, terms: {} };
  const timeline = new Timeline<TraceStep[]>(applyTraceSteps, Math.max(entriesMax, checkpointEveryEntries));
  let batch: TraceStep[] = [];
  const traffic: PointTraffic[] = [];
  let pending: PointTraffic = { delivered: 0, dropped: 0, latest: [] };
  const flush = (): void => {
    if (batch.length === 0) return;
    const labels = batch.map(traceLabel);
    const label =
      labels.length > 3 ? `${labels.slice(0, 3).join('; ')}; +${labels.length - 3} more` : labels.join('; ');
    // A point that changes nothing shown is not kept: its traffic counts towards the next one.
    if (timeline.record((batch[0] as TraceStep).t, label, batch, state)) {
      traffic.push(pending);
      pending = { delivered: 0, dropped: 0, latest: [] };
    }
    batch = [];
  };
  for (const v of events) {
    if (timeline.length >= entriesMax) break;
    const step = traceStep(v);
    const moved = trafficOf(v);
    const t = step?.t ?? moved?.t;
    if (t === undefined) continue;
    if (batch.length > 0 && (batch[0] as TraceStep).t !== t) flush();
    if (step !== null) {
      state = applyTraceStep(state, step);
      batch.push(step);
    } else if (moved !== null) {
      if (moved.dropped) pending.dropped++;
      else pending.delivered++;
      pending.latest.push(moved.line);
      if (pending.latest.length > traceMessagesPerPointMax) pending.latest.shift();
    }
  }
  if (timeline.length < entriesMax) flush();
  const dropped = (num(f['state_events_dropped']) ?? 0) + (num(f['message_events_dropped']) ?? 0);
  return {
    info: {
      seed,
      strategy: f['strategy'],
      replay: str(f['replay']) ? f['replay'] : '',
      ok: f['ok'] === true,
      nodes,
      events: events.length,
      dropped,
      violations: strs(f['violations']) ? f['violations'] : [],
    },
    timeline,
    traffic,
  };
}

// ---- the page's live record of the cluster on screen ----

/**
 * What store.ts keeps for time travel: the record of the cluster on screen (a new one when the page
 * shows another cluster), fed with every frame and every fetched state of that cluster.
 */
export class LiveRecorder {
  clusterId: string | null = null;
  timeline: Timeline<FrameWire> = liveTimeline();
  /** +1 on every change (a point kept, or a new record). */
  version = 0;
  private terms: Readonly<Record<string, number>> = {};

  /** The cluster on screen; another one starts a new record. */
  watch(id: string | null): void {
    if (id === this.clusterId) return;
    this.clusterId = id;
    this.timeline = liveTimeline();
    this.terms = {};
    this.version++;
  }

  /** A frame, and the cluster's model once the page applied it (undefined: none yet). */
  onFrame(at: number, f: FrameWire, model: ClusterModel | undefined): void {
    if (f.cluster_id !== this.clusterId || model === undefined) return;
    const term = num(f.data?.['term']);
    if (term !== undefined && f.node_id !== undefined && this.terms[f.node_id] !== term)
      this.terms = { ...this.terms, [f.node_id]: term };
    if (this.timeline.record(at, f.type, f, { model, terms: this.terms })) this.version++;
  }

  /** A state fetched for the cluster (a snapshot): kept as a checkpoint when it changed anything. */
  onModel(at: number, model: ClusterModel | undefined): void {
    if (model === undefined || model.id !== this.clusterId) return;
    if (this.timeline.record(at, 'snapshot', null, { model, terms: this.terms })) this.version++;
  }
}
