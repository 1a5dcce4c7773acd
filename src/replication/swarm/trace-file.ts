/**
 * The swarm's trace file (`cli.js --trace-out <file>`): one deterministic run written as JSON that the
 * replication page opens and plays (web/replication/timeline.ts). It watches a DetCluster from the
 * outside (its trace lines, its fabric's fault changes, each node's status after every step) and
 * never drives it, so a run with a recorder has the same trace hash as one without.
 *
 * Format (version 1), every time `t` in virtual ms since the run began, events in time order:
 *   { "format": "simlab-swarm-trace", "version": 1, "seed": 42, "strategy": "raft",
 *     "replay": "<the command that replays the seed>", "config": {...}, "nodes": ["n1", ...],
 *     "start_ms": 1700000000000, "ok": true, "verdicts": {...}, "violations": [], "trace_hash": "<sha256>",
 *     "events": [...], "state_events_dropped": 0, "message_events_dropped": 0 }
 * State events (what the page replays; at most traceFileStateEventsMax, later ones counted):
 *   {t, kind: "node", node, role, term?, state: online|paused|crashed|removed, commit_index, leader_id}
 *   {t, kind: "partition", partition_id, group_a, group_b}   {t, kind: "heal", partition_id}
 *   {t, kind: "latency", from, to, ms}   {t, kind: "drop_rate", from, to, rate}   {t, kind: "clear"}
 *   {t, kind: "control", node, action: pause|resume|crash|restart|add|remove|<core command>}
 * Traffic (at most traceFileMessageEventsMax, later ones counted):
 *   {t, kind: "message", from, to, summary}   {t, kind: "dropped", from, to, cause, summary}
 *   {t, kind: "client", node, request, op}    {t, kind: "reply", node, request, outcome}
 */
import type { DetCluster } from '../../fabric/deterministic.js';
import type { FabricFaultChange } from '../../fabric/fabric.js';
import { kvReplayCommand, kvSwarmProfile, runKvSwarm, type KvSwarmResult } from './kv-swarm.js';
import { replayCommand, runRaftSwarm, swarmProfile, type SwarmResult } from './raft-swarm.js';

/** Node, fault and control events kept in one trace file; later ones are counted in state_events_dropped. */
export const traceFileStateEventsMax = 20_000;
/** Message, drop, client and reply events kept; later ones are counted in message_events_dropped. */
export const traceFileMessageEventsMax = 60_000;

export type TraceNodeState = 'online' | 'paused' | 'crashed' | 'removed';

export type TraceStateEvent =
  | {
      t: number;
      kind: 'node';
      node: string;
      role: string;
      term?: number;
      state: TraceNodeState;
      commit_index: number;
      leader_id: string;
    }
  | { t: number; kind: 'partition'; partition_id: string; group_a: string[]; group_b: string[] }
  | { t: number; kind: 'heal'; partition_id: string }
  | { t: number; kind: 'latency'; from: string; to: string; ms: number }
  | { t: number; kind: 'drop_rate'; from: string; to: string; rate: number }
  | { t: number; kind: 'clear' }
  | { t: number; kind: 'control'; node: string; action: string };

export type TraceTrafficEvent =
  | { t: number; kind: 'message'; from: string; to: string; summary: string }
  | { t: number; kind: 'dropped'; from: string; to: string; cause: string; summary: string }
  | { t: number; kind: 'client'; node: string; request: number; op: string }
  | { t: number; kind: 'reply'; node: string; request: number; outcome: string };

export type TraceEvent = TraceStateEvent | TraceTrafficEvent;

export interface TraceFile {
  format: 'simlab-swarm-trace';
  version: 1;
  seed: number;
  strategy: string;
  replay: string;
  config: unknown;
  nodes: string[];
  start_ms: number;
  ok: boolean;
  verdicts: Record<string, boolean>;
  /** What the run's checks found, in words (empty when it passed). */
  violations: string[];
  trace_hash: string;
  events: TraceEvent[];
  state_events_dropped: number;
  message_events_dropped: number;
}

/** What the run itself reports, added to the file once it has finished. */
export interface TraceRunOutcome {
  seed: number;
  strategy: string;
  replay: string;
  config: unknown;
  ok: boolean;
  verdicts: Record<string, boolean>;
  violations: string[];
  traceHash: string;
}

const dropCauses = new Set(['dropped_rate', 'dropped_partition', 'dropped_full', 'dropped_unknown_node', 'lost_down']);
const nodeControls = new Set(['pause', 'resume', 'crash', 'restart', 'add', 'remove']);

/** One DetCluster trace line as a trace event, or null for lines the file leaves out (ticks). */
export function parseTraceLine(line: string, startMs: number): TraceEvent | null {
  const sp = line.indexOf(' ');
  if (sp < 0) return null;
  const t = Number(line.slice(0, sp)) - startMs;
  if (!Number.isFinite(t)) return null;
  const rest = line.slice(sp + 1);
  const words = rest.split(' ');
  const head = words[0] ?? '';
  const arrow = head.indexOf('->');
  if (arrow > 0) {
    const from = head.slice(0, arrow);
    const to = head.slice(arrow + 2);
    const second = words[1] ?? '';
    if (dropCauses.has(second))
      return { t, kind: 'dropped', from, to, cause: second, summary: words.slice(2).join(' ') };
    return { t, kind: 'message', from, to, summary: words.slice(1).join(' ') };
  }
  const node = words[1] ?? '';
  if (head === 'client') {
    return { t, kind: 'client', node, request: Number((words[2] ?? '#0').slice(1)), op: words.slice(3).join(' ') };
  }
  if (head === 'reply') {
    return { t, kind: 'reply', node, request: Number((words[2] ?? '#0').slice(1)), outcome: words[3] ?? '' };
  }
  if (nodeControls.has(head)) return { t, kind: 'control', node, action: head };
  if (head === 'control') return { t, kind: 'control', node, action: words[2] ?? '' };
  return null;
}

interface NodeSample {
  role: string;
  term: number | undefined;
  state: TraceNodeState;
  commitIndex: number;
  leaderId: string;
}

/**
 * Watches one DetCluster (pass `recorder.observe` as the swarm's `observe` option), then builds the
 * file with `finish()`. Reads only: trace lines already written, statuses, the fabric's fault changes.
 */
export class TraceRecorder {
  private c: DetCluster | undefined;
  private startMs = 0;
  private nodes: string[] = [];
  private readonly events: TraceEvent[] = [];
  private stateEvents = 0;
  private trafficEvents = 0;
  private stateDropped = 0;
  private trafficDropped = 0;
  private readonly last = new Map<string, NodeSample>();

  constructor(
    private readonly stateMax = traceFileStateEventsMax,
    private readonly trafficMax = traceFileMessageEventsMax,
  ) {}

  readonly observe = (c: DetCluster): void => {
    this.c = c;
    this.startMs = c.now;
    this.nodes = c.nodeIds();
    // Each kept line as it is written; lines before this point are not part of the file.
    c.onTraceLine = (line) => {
      const e = parseTraceLine(line, this.startMs);
      if (e) this.push(e);
    };
    c.fabric.onFaultChange = (change) => {
      this.catchUp();
      this.fault(change);
    };
    // Sample after every step, on this instance only: the runtime has no per-step hook, and a
    // recorder must not change the class every other run uses.
    const step = c.step.bind(c);
    c.step = (): boolean => {
      this.catchUp();
      const more = step();
      this.catchUp();
      return more;
    };
    this.sample();
  };

  private push(e: TraceEvent): void {
    const state = e.kind !== 'message' && e.kind !== 'dropped' && e.kind !== 'client' && e.kind !== 'reply';
    if (state) {
      if (this.stateEvents >= this.stateMax) {
        this.stateDropped++;
        return;
      }
      this.stateEvents++;
    } else {
      if (this.trafficEvents >= this.trafficMax) {
        this.trafficDropped++;
        return;
      }
      this.trafficEvents++;
    }
    this.events.push(e);
  }

  private fault(change: FabricFaultChange): void {
    const t = (this.c as DetCluster).now - this.startMs;
    switch (change.kind) {
      case 'partition':
        this.push({
          t,
          kind: 'partition',
          partition_id: change.partitionId,
          group_a: change.groupA,
          group_b: change.groupB,
        });
        return;
      case 'heal':
        this.push({ t, kind: 'heal', partition_id: change.partitionId });
        return;
      case 'latency':
        this.push({ t, kind: 'latency', from: change.from, to: change.to, ms: change.ms });
        return;
      case 'drop':
        this.push({ t, kind: 'drop_rate', from: change.from, to: change.to, rate: change.rate });
        return;
      case 'clear':
        this.push({ t, kind: 'clear' });
        return;
    }
  }

  /** Every node's status where it changed (trace lines are taken as they are written). */
  private catchUp(): void {
    if (!this.c) return;
    this.sample();
  }

  private sample(): void {
    const c = this.c as DetCluster;
    const t = c.now - this.startMs;
    const ids = c.nodeIds();
    for (const id of ids) if (!this.nodes.includes(id)) this.nodes.push(id);
    for (const id of this.nodes) {
      const st = c.state(id);
      let s: NodeSample;
      if (st === undefined) s = { ...(this.last.get(id) ?? blankSample()), state: 'removed' };
      else if (st === 'offline') s = { ...(this.last.get(id) ?? blankSample()), state: 'crashed' };
      else {
        const status = c.core(id).status(c.now);
        s = {
          role: status.role,
          term: status.term,
          state: st,
          commitIndex: status.commit_index,
          leaderId: status.leader_id,
        };
      }
      const before = this.last.get(id);
      if (before && sameSample(before, s)) continue;
      this.last.set(id, s);
      this.push({
        t,
        kind: 'node',
        node: id,
        role: s.role,
        ...(s.term !== undefined ? { term: s.term } : {}),
        state: s.state,
        commit_index: s.commitIndex,
        leader_id: s.leaderId,
      });
    }
  }

  /** The file, once the run has finished. */
  finish(run: TraceRunOutcome): TraceFile {
    this.catchUp();
    return {
      format: 'simlab-swarm-trace',
      version: 1,
      seed: run.seed,
      strategy: run.strategy,
      replay: run.replay,
      config: run.config,
      nodes: [...this.nodes],
      start_ms: this.startMs,
      ok: run.ok,
      verdicts: run.verdicts,
      violations: run.violations,
      trace_hash: run.traceHash,
      events: this.events,
      state_events_dropped: this.stateDropped,
      message_events_dropped: this.trafficDropped,
    };
  }
}

function blankSample(): NodeSample {
  return { role: 'unknown', term: undefined, state: 'online', commitIndex: 0, leaderId: '' };
}

function sameSample(a: NodeSample, b: NodeSample): boolean {
  return (
    a.role === b.role &&
    a.term === b.term &&
    a.state === b.state &&
    a.commitIndex === b.commitIndex &&
    a.leaderId === b.leaderId
  );
}

/**
 * Runs one seed of a strategy's swarm with a recorder: the run's result and its trace file as text
 * (what `cli.js --trace-out` writes). Equal seeds give equal text.
 */
export function traceSwarmRun(
  strategy: 'raft' | 'single_leader' | 'multi_leader' | 'leaderless',
  seed: number,
): { result: SwarmResult | KvSwarmResult; file: TraceFile; text: string } {
  const rec = new TraceRecorder();
  const result =
    strategy === 'raft'
      ? runRaftSwarm(seed, { observe: rec.observe })
      : runKvSwarm(strategy, seed, { observe: rec.observe });
  const file = rec.finish({
    seed,
    strategy,
    replay: strategy === 'raft' ? replayCommand(seed) : kvReplayCommand(strategy, seed),
    config: strategy === 'raft' ? swarmProfile(seed) : kvSwarmProfile(strategy, seed),
    ok: result.ok,
    verdicts: result.verdicts,
    violations: result.violations,
    traceHash: result.traceHash,
  });
  return { result, file, text: `${JSON.stringify(file)}\n` };
}
