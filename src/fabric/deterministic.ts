/**
 * The deterministic runtime: every node core of a cluster in one thread, under a virtual clock and a
 * seeded fabric, so one seed replays a whole run, faults included (TigerBeetle's simulator idea).
 * It is what seeded swarm tests, fuzzing and the detsim demo drive; it is not the live mode (worker
 * threads, real clock) and holds no protocol logic of its own.
 *
 * Usage:
 *   const c = new DetCluster({ factory, nodeIds: ['n1','n2','n3'], config, seed: 42 });
 *   c.runFor(1000);                                   // elections, heartbeats, ...
 *   const id = c.client('n1', { op: 'write', key: 'k', value: 'v' });
 *   const reply = c.runUntilReply(id, 2000);          // undefined if none within 2 s of virtual time
 *   c.fabric.partition(['n1'], ['n2','n3']); c.crash('n2'); c.restart('n2'); ...
 *   c.traceHash();                                    // equal for equal seeds and equal driving code
 *
 * Timings default to protocol/timings.ts and are checked like etcd's Config.validate(): a cluster
 * with heartbeat >= election timeout min, or min > max, is refused at construction (RangeError).
 *
 * Rules: the runtime's rng (seeded) forks the fabric's rng first, then one rng per initial node in
 * nodeIds order, then one per later restart/addNode; `rng` is left for the test's own fault choices.
 * Each step jumps the clock to the next event (fabric delivery or core deadline), delivers what is
 * due (destinations in fabric slot order), then ticks every due running core in node order. After
 * every input a core is drained at once: its messages are submitted at the current virtual time,
 * its replies recorded, its events collected.
 *
 * Durable state (protocol/core.ts, etcd raft's Ready): with `durableFold`, each node's drained durable
 * records are folded as they come, before that step's messages go out, and crash() keeps that fold
 * (what storage outside the node would hold) instead of asking the dying core. The fold must equal
 * the core's persistentState() at every crash: a record the core forgot to emit fails the run there.
 */
import { isDeepStrictEqual } from 'node:util';
import { pack, unpack } from 'msgpackr';
import {
  emptyOutput,
  type ClientOp,
  type ClientReply,
  type ClusterConfig,
  type ControlCommand,
  type ControlResult,
  type CoreEvent,
  type CoreFactory,
  type CoreOutput,
  type CoreTimings,
  type DurableFold,
  type NodeCore,
  type NodeId,
} from '../../protocol/core.js';
import { coreTimingsDefault, validateTimings } from '../../protocol/timings.js';
import { SeededRng, type Rng } from '../util/rng.js';
import { AssertionFailure, invariant } from '../util/assert.js';
import { Fabric } from './fabric.js';
import { hasOwnProperty } from '../util/own.js';
import { emptyKeepingStorage } from '../util/out-list.js';
import { summarizeInto, TraceLog } from './trace-log.js';

export const defaultStartTimeMs = 1_700_000_000_000;
/** Steps allowed at one virtual instant before the runtime calls it a livelock (a core bug). */
export const stepsPerInstantMax = 200_000;
/** Trace lines kept in memory; later lines still feed traceHash and are counted in traceDropped. */
export const traceLinesMax = 500_000;
/** Collected events kept; later ones are counted in eventsDropped. */
export const eventsMax = 200_000;

export interface DetClusterOptions {
  factory: CoreFactory;
  nodeIds: string[];
  config: ClusterConfig;
  timings?: Partial<CoreTimings>;
  seed: number;
  /** Virtual epoch in ms; default 1_700_000_000_000. */
  startTimeMs?: number;
  /** When true, payloads go through msgpackr pack/unpack like the live wire (default false). */
  encode?: boolean;
  fabric?: { linkQueueMax?: number; inboxMax?: number };
  clusterId?: string;
  regions?: Record<NodeId, number>;
  /** Trace lines kept in `trace` (default traceLinesMax); 0 keeps only the hash (long fuzz runs). */
  traceLinesMax?: number;
  /**
   * Events kept in `events` (default eventsMax); 0 keeps none (a swarm that watches them through
   * onEvent and never reads the list). Later ones are counted in eventsDropped.
   */
  eventsMax?: number;
  /**
   * The strategy's fold of durable records: crash() then keeps the fold (checked equal to
   * persistentState()); without it crash() keeps persistentState() itself.
   */
  durableFold?: DurableFold;
  /**
   * Called with every event as it is drained (before the eventsMax cap), inside a step: it may
   * record, never drive the cluster (queue the reaction and act between steps). The object is the
   * one `events` keeps: read it, do not change it.
   */
  onEvent?: (e: CoreEvent & { at: number }) => void;
  /**
   * The event types onEvent is called for (default: every type). A listener that watches two or
   * three types among the many a core emits saves a stamped copy of every other event.
   */
  onEventTypes?: readonly string[];
}

export type DetNodeState = 'online' | 'paused' | 'offline';

interface NodeEntry {
  id: NodeId;
  core: NodeCore | undefined;
  paused: boolean;
  /** What a restart is built from: the durable fold at the crash, or persistentState() without one. */
  persisted: unknown;
  /** The fold of every durable record this node drained, across incarnations (storage). */
  durable: unknown;
}

export class DetCluster {
  readonly fabric: Fabric<unknown>;
  readonly rng: Rng;
  readonly events: Array<CoreEvent & { at: number }> = [];
  eventsDropped = 0;
  /** Messages that reached a crashed node and were lost. */
  lostToCrashed = 0;

  private clock: number;
  private readonly opts: DetClusterOptions;
  private readonly timings: CoreTimings;
  private readonly nodes = new Map<NodeId, NodeEntry>();
  private order: NodeId[] = [];
  /** The entries of `order`, in the same order (the per-step loops walk this, not the map). */
  private ordered: NodeEntry[] = [];
  private readonly replies = new Map<number, ClientReply>();
  private reqSeq = 0;
  private readonly out: CoreOutput = emptyOutput();
  private readonly traceLog: TraceLog;
  private readonly eventsKeptMax: number;
  /** onEventTypes as a set; undefined for every type. */
  private readonly eventTypes: ReadonlySet<string> | undefined;
  private instant = -Infinity;
  private stepsAtInstant = 0;
  private readonly sink = (to: string, froms: readonly string[], payloads: readonly unknown[], count: number): void =>
    this.deliver(to, froms, payloads, count);

  constructor(opts: DetClusterOptions) {
    invariant(new Set(opts.nodeIds).size === opts.nodeIds.length, 'node ids must be unique');
    this.opts = opts;
    this.timings = { ...coreTimingsDefault, ...opts.timings };
    // etcd's newRaft panics on an invalid Config; a run with heartbeat >= election timeout would only
    // show up later as elections against a live leader, so refuse it here with the reason.
    const timingsCheck = validateTimings(this.timings);
    if (!timingsCheck.ok) throw new RangeError(`DetCluster: invalid timings: ${timingsCheck.error}`);
    this.clock = opts.startTimeMs ?? defaultStartTimeMs;
    this.traceLog = new TraceLog(opts.traceLinesMax ?? traceLinesMax);
    this.eventsKeptMax = opts.eventsMax ?? eventsMax;
    this.eventTypes = opts.onEventTypes ? new Set(opts.onEventTypes) : undefined;
    this.rng = new SeededRng(opts.seed);
    this.fabric = new Fabric<unknown>({ rng: this.rng.fork(), ...opts.fabric });
    // Through a local, not `this.fabric.onDrop = (...) => ...`: V8 allocates a function literal assigned straight
    // to a property in the old generation (it expects a method), and that old closure then holds this cluster's
    // context, so every scavenge until the next full GC copied the whole finished cluster (a swarm builds one
    // per seed).
    const onDrop = (from: string, to: string, outcome: string): void => {
      const t = this.begin();
      t.str(from);
      t.str('->');
      t.str(to);
      t.ch(32);
      t.str(outcome);
      t.end();
    };
    this.fabric.onDrop = onDrop;
    this.order = [...opts.nodeIds];
    for (const id of this.order) this.fabric.addNode(id);
    // Fork every core's rng before building any core, in node order, so construction order cannot matter.
    const rngs = this.order.map(() => this.rng.fork());
    for (const [i, id] of this.order.entries()) {
      const entry: NodeEntry = { id, core: undefined, paused: false, persisted: undefined, durable: undefined };
      this.nodes.set(id, entry);
      this.ordered.push(entry);
      entry.core = this.build(id, rngs[i] as Rng, undefined);
    }
    for (const id of this.order) this.flush(this.nodes.get(id) as NodeEntry);
  }

  /** Current virtual time (ms). */
  get now(): number {
    return this.clock;
  }

  /**
   * The trace lines kept in memory (at most traceLinesMax), in order. One array, grown in place as
   * the run writes more and it is read again; its lines are built from the stored text on read.
   */
  get trace(): string[] {
    return this.traceLog.keptLines();
  }

  /**
   * A reader of the kept trace lines that holds the trace only, not the cluster: what a result that
   * outlives the run hands out (the lines are built when it is called).
   */
  traceReader(): () => string[] {
    const log = this.traceLog;
    return () => log.keptLines();
  }

  /** Trace lines written past the in-memory cap (they still feed traceHash). */
  get traceDropped(): number {
    return this.traceLog.dropped;
  }

  /**
   * Called with each kept trace line (the ones `trace` holds) as it is written: a recorder such as
   * trace-file.ts's sees each line once without re-reading the list. It may read, never drive the cluster.
   */
  set onTraceLine(listener: ((line: string) => void) | undefined) {
    this.traceLog.listener = listener;
  }

  nodeIds(): NodeId[] {
    return [...this.order];
  }

  /** The running core; throws for an unknown or crashed node (a bug in the calling test). */
  core(id: NodeId): NodeCore {
    const core = this.nodes.get(id)?.core;
    invariant(core, () => `node ${id} is unknown or crashed`);
    return core;
  }

  state(id: NodeId): DetNodeState | undefined {
    const e = this.nodes.get(id);
    if (!e) return undefined;
    return e.core === undefined ? 'offline' : e.paused ? 'paused' : 'online';
  }

  /** A fresh request id, for control commands that answer through a reply (add_server, ...). */
  nextRequestId(): number {
    return ++this.reqSeq;
  }

  /**
   * Submits a client request to `nodeId` now and returns its request id. A paused or crashed node
   * refuses at once ('paused', as the live mode does); an unknown node answers 'not_found'.
   */
  client(nodeId: NodeId, op: ClientOp): number {
    const id = this.nextRequestId();
    const t = this.begin();
    t.str('client ');
    t.str(nodeId);
    t.str(' #');
    t.num(id);
    t.ch(32);
    t.str(op.op);
    if ('key' in op) {
      t.ch(32);
      t.str(`${op.key}`);
    } else {
      t.str(' [');
      t.num(op.entries.length);
      t.ch(93);
    }
    t.end();
    const e = this.nodes.get(nodeId);
    if (!e) {
      this.record(nodeId, { id, ok: false, code: 'not_found', error: `node ${nodeId} not found` });
    } else if (!e.core || e.paused) {
      const why = e.core ? 'paused' : 'down';
      this.record(nodeId, { id, ok: false, code: 'paused', error: `node ${nodeId} is ${why}` });
    } else {
      e.core.onClient({ id, op }, this.clock);
      this.flush(e);
    }
    return id;
  }

  reply(reqId: number): ClientReply | undefined {
    return this.replies.get(reqId);
  }

  control(id: NodeId, cmd: ControlCommand): ControlResult {
    const e = this.nodes.get(id);
    this.line(`control ${id} ${cmd.kind}`);
    if (!e) return { ok: false, code: 'not_found', error: `node ${id} not found` };
    if (!e.core) return { ok: false, code: 'node_crashed', error: `node ${id} is down` };
    const result = e.core.control(cmd, this.clock);
    this.flush(e);
    return result;
  }

  /** Earliest time anything happens: a fabric delivery or a running core's deadline. */
  nextEventAt(): number {
    let at = this.fabric.nextDueAt();
    const ordered = this.ordered;
    for (let i = 0; i < ordered.length; i++) {
      const e = ordered[i] as NodeEntry;
      if (!e.core || e.paused) continue;
      const d = e.core.nextDeadline();
      if (d < at) at = d;
    }
    return at;
  }

  /** Advances to the next event and processes everything due then; false when nothing is pending. */
  step(): boolean {
    return this.stepAt(this.nextEventAt());
  }

  /**
   * step() when the caller has just asked nextEventAt() and changed nothing since: `at` must be
   * what it returned (it saves asking every core for its deadline again).
   */
  stepAt(at: number): boolean {
    if (at === Infinity) return false;
    if (at > this.clock) this.clock = at;
    if (this.clock !== this.instant) {
      this.instant = this.clock;
      this.stepsAtInstant = 0;
    }
    if (++this.stepsAtInstant > stepsPerInstantMax) {
      throw new AssertionFailure(
        `livelock: ${stepsPerInstantMax} steps at virtual time ${this.clock} (seed ${this.opts.seed})`,
      );
    }
    this.fabric.deliverDueLists(this.clock, this.sink);
    // Nodes are added and removed between steps only (a core or an onEvent listener cannot).
    const ordered = this.ordered;
    for (let i = 0; i < ordered.length; i++) {
      const e = ordered[i] as NodeEntry;
      if (!e.core || e.paused || e.core.nextDeadline() > this.clock) continue;
      e.core.onTick(this.clock);
      this.flush(e, 'tick');
    }
    return true;
  }

  /** Processes every event up to and including `timeMs`, then sets the clock to it. */
  runUntil(timeMs: number): void {
    for (let at = this.nextEventAt(); at <= timeMs; at = this.nextEventAt()) this.stepAt(at);
    if (timeMs > this.clock) this.clock = timeMs;
  }

  runFor(ms: number): void {
    this.runUntil(this.clock + ms);
  }

  /** Runs until the reply arrives (clock left at its arrival) or `maxMs` pass (undefined). */
  runUntilReply(reqId: number, maxMs: number): ClientReply | undefined {
    const deadline = this.clock + maxMs;
    while (!this.replies.has(reqId)) {
      const at = this.nextEventAt();
      if (at > deadline) break;
      this.stepAt(at);
    }
    const r = this.replies.get(reqId);
    if (!r && deadline > this.clock) this.clock = deadline;
    return r;
  }

  /** Paused: no ticks, no client requests; the fabric holds its due messages (up to inboxMax). */
  pause(id: NodeId): void {
    const e = this.nodes.get(id);
    if (!e?.core) return;
    e.paused = true;
    this.fabric.setDeliverable(id, false);
    this.line(`pause ${id}`);
  }

  resume(id: NodeId): void {
    const e = this.nodes.get(id);
    if (!e?.core || !e.paused) return;
    e.paused = false;
    this.fabric.setDeliverable(id, true);
    this.line(`resume ${id}`);
  }

  /**
   * Drops the core, keeping its durable state (the fold of its records, or persistentState());
   * messages reaching it while down are lost and counted.
   */
  crash(id: NodeId): void {
    const e = this.nodes.get(id);
    if (!e?.core) return;
    const fold = this.opts.durableFold;
    if (fold) {
      const expected = e.core.persistentState?.();
      invariant(
        isDeepStrictEqual(e.durable, expected),
        () =>
          `${id}: the fold of its durable records differs from persistentState() at the crash (a record is missing)`,
      );
      e.persisted = e.durable;
    } else {
      e.persisted = e.core.persistentState?.();
    }
    e.core = undefined;
    e.paused = false;
    // Deliverable, so what arrives is handed over and lost rather than held for a later incarnation.
    this.fabric.setDeliverable(id, true);
    this.line(`crash ${id}`);
  }

  /** Builds a new core for a crashed node from what it persisted; no-op when it is running. */
  restart(id: NodeId): void {
    const e = this.nodes.get(id);
    if (!e || e.core) return;
    this.line(`restart ${id}`);
    e.core = this.build(id, this.rng.fork(), e.persisted);
    this.flush(e);
  }

  /**
   * Adds a node (empty state) and, unless notifyPeers is false, tells every running core the new
   * member list with a 'peers' control command (raft tests pass false and use add_server instead).
   */
  addNode(id: NodeId, opts: { notifyPeers?: boolean } = {}): void {
    if (this.nodes.has(id)) return;
    this.line(`add ${id}`);
    this.order.push(id);
    this.fabric.addNode(id);
    const entry: NodeEntry = { id, core: undefined, paused: false, persisted: undefined, durable: undefined };
    this.nodes.set(id, entry);
    this.ordered.push(entry);
    entry.core = this.build(id, this.rng.fork(), undefined);
    this.flush(entry);
    if (opts.notifyPeers !== false) this.notifyPeers(id);
  }

  removeNode(id: NodeId, opts: { notifyPeers?: boolean } = {}): void {
    if (!this.nodes.has(id)) return;
    this.line(`remove ${id}`);
    this.nodes.delete(id);
    this.order = this.order.filter((x) => x !== id);
    this.ordered = this.ordered.filter((x) => x.id !== id);
    this.fabric.removeNode(id);
    if (opts.notifyPeers !== false) this.notifyPeers(id);
  }

  /** sha256 (hex) of every trace line, each followed by a newline, including lines past the cap. */
  traceHash(): string {
    return this.traceLog.digest();
  }

  private notifyPeers(except: NodeId): void {
    const peers = [...this.order];
    for (const pid of this.order) {
      const e = this.nodes.get(pid) as NodeEntry;
      if (pid === except || !e.core) continue;
      e.core.control({ kind: 'peers', peers }, this.clock);
      this.flush(e);
    }
  }

  private build(id: NodeId, rng: Rng, persisted: unknown): NodeCore {
    return this.opts.factory({
      id,
      cluster_id: this.opts.clusterId ?? 'det',
      peers: [...this.order],
      config: this.opts.config,
      timings: this.timings,
      rng,
      now: this.clock,
      ...(this.opts.regions ? { regions: this.opts.regions } : {}),
      ...(persisted !== undefined ? { persisted } : {}),
    });
  }

  private deliver(to: NodeId, froms: readonly string[], payloads: readonly unknown[], count: number): void {
    const e = this.nodes.get(to);
    for (let i = 0; i < count; i++) {
      const from = froms[i] as string;
      const msg = this.opts.encode ? unpack(payloads[i] as Uint8Array) : payloads[i];
      if (!e?.core) {
        this.lostToCrashed++;
        this.deliveryLine(from, to, ' lost_down ', msg);
        continue;
      }
      this.deliveryLine(from, to, ' ', msg);
      e.core.onMessage(from, msg, this.clock);
      this.flush(e);
    }
  }

  /** The durable fold of a node (what its storage holds), for tests; undefined without durableFold. */
  durableState(id: NodeId): unknown {
    return this.nodes.get(id)?.durable;
  }

  /**
   * Drains one core: durable records folded first (storage), then messages into the fabric now,
   * replies recorded, events collected.
   */
  private flush(e: NodeEntry, cause?: 'tick'): void {
    const core = e.core;
    if (!core) return;
    const out = this.out;
    core.drain(out);
    const durable = out.durable;
    if (durable && durable.length > 0) {
      const fold = this.opts.durableFold;
      if (fold) {
        for (const r of durable) e.durable = fold.fold(e.durable, this.opts.encode ? unpack(pack(r)) : r);
      }
      emptyKeepingStorage(durable);
    }
    if (cause === 'tick' && out.messages.length + out.replies.length + out.events.length > 0) {
      const t = this.begin();
      t.str('tick ');
      t.str(e.id);
      t.str(' msgs=');
      t.num(out.messages.length);
      t.str(' replies=');
      t.num(out.replies.length);
      t.str(' events=');
      t.num(out.events.length);
      t.end();
    }
    for (const m of out.messages) {
      this.fabric.submit(e.id, m.to, this.opts.encode ? pack(m.msg) : m.msg, this.clock);
    }
    for (const r of out.replies) this.record(e.id, r);
    const onEvent = this.opts.onEvent;
    const types = this.eventTypes;
    for (const ev of out.events) {
      const keep = this.events.length < this.eventsKeptMax;
      if (!keep) this.eventsDropped++;
      const watched = onEvent !== undefined && (types === undefined || types.has(ev.type));
      if (!keep && !watched) continue;
      const stamped = { ...ev, node_id: ev.node_id ?? e.id, at: this.clock };
      if (watched) onEvent(stamped);
      if (keep) this.events.push(stamped);
    }
    emptyKeepingStorage(out.messages);
    emptyKeepingStorage(out.replies);
    emptyKeepingStorage(out.events);
  }

  private record(nodeId: NodeId, r: ClientReply): void {
    this.replies.set(r.id, r);
    const t = this.begin();
    t.str('reply ');
    t.str(nodeId);
    t.str(' #');
    t.num(r.id);
    t.ch(32);
    t.str(r.ok ? 'ok' : `${r.code}`);
    t.end();
  }

  /** One whole trace line: the virtual time, a space, then `text`. */
  private line(text: string): void {
    const t = this.begin();
    t.str(text);
    t.end();
  }

  /** Starts a trace line with the virtual time and a space; the caller writes the rest and ends it. */
  private begin(): TraceLog {
    const t = this.traceLog;
    t.stamp(this.clock);
    return t;
  }

  /** `<from>-><to><sep><summary of msg>`, the line of a message handed to a node. */
  private deliveryLine(from: string, to: string, sep: string, msg: unknown): void {
    const t = this.begin();
    t.str(from);
    t.str('->');
    t.str(to);
    t.str(sep);
    summarizeInto(t, msg);
    t.end();
  }
}

/**
 * A short, deterministic rendering of a message for the trace: top-level fields in insertion order,
 * primitives shown (strings cut to 24 chars), arrays by length, objects as {..}. Cheap on large
 * raft appends, where a full JSON dump would dominate the run.
 */
export function summarize(msg: unknown): string {
  if (msg === null || typeof msg !== 'object') return String(msg);
  if (Array.isArray(msg)) return `[${msg.length}]`;
  if (msg instanceof Uint8Array) return `bytes(${msg.length})`;
  const rec = msg as Record<string, unknown>;
  // Joined once: a few flat strings instead of a long chain of concatenations for the hash to walk.
  const parts: string[] = [];
  for (const k in rec) {
    if (!hasOwnProperty.call(rec, k)) continue;
    const v = rec[k];
    if (v === undefined) continue;
    if (typeof v === 'string') parts.push(`${k}=${v.length > 24 ? `${v.slice(0, 24)}…` : v}`);
    else if (v === null || typeof v !== 'object') parts.push(`${k}=${String(v)}`);
    else if (Array.isArray(v)) parts.push(`${k}=[${v.length}]`);
    else parts.push(`${k}={..}`);
  }
  return parts.join(' ');
}
