/**
 * The clock lab's simulation: processes with scalar, vector or matrix clocks exchanging messages
 * over the fabric (per-link FIFO, delay, partitions) with drop rate and reordering layered on top,
 * causal delivery through hold-back queues, Chandy–Lamport snapshots and the KV store. It is a pure
 * state machine driven by `advanceTo(virtualMs)` and a seeded Rng: it never reads the wall clock or
 * sets a timer, and it reports everything that happens through `emit` (the event bus is plumbing).
 */
import { Fabric, type Delivery, type SubmitOutcome } from '../fabric/fabric.js';
import { invariant, unreachable } from '../util/assert.js';
import type { Rng } from '../util/rng.js';
import { bssBlocker, bssOnDeliver, rstBlocker, rstOnDeliver, settle, type Blocker } from './causal.js';
import {
  compactVersionVector,
  copyMatrix,
  copyVector,
  lamportReceive,
  lamportTick,
  matrixKnownByAll,
  matrixMergeInto,
  matrixMergeVector,
  matrixToMap,
  vectorMergeInto,
  vectorTick,
  vectorToMap,
  type ClockType,
  type Matrix,
  type Vector,
  type VersionVector,
} from './clocks.js';
import type { EmitFn, EventData } from './events.js';
import { KvStore, type ConflictStrategy, type StoredVersion } from './kv.js';
import {
  channelDelayMsDefault,
  holdBackDepthMax,
  initialBalanceDefault,
  linkQueueMax,
  matrixSimulationProcessesMax,
  processCountMax,
  reorderDepthMax,
  reorderWindowMsDefault,
  snapshotChannelsKeptMax,
  snapshotsKeptMax,
  snapshotsRunningMax,
  undeliveredBytesMax,
} from './limits.js';
import { GlobalSnapshot, type RecordedMessage, type RecordedProcess, type VerifyReport } from './snapshot.js';

export type DeliveryMode = 'causal' | 'immediate';
export type ProcessStatus = 'alive' | 'killed';
export type DropReason = 'drop_rate' | 'partition' | 'queue_full' | 'receiver_killed' | 'holdback_full' | 'reorder_full' | 'unknown_node';

export type LabErrorCode = 'invalid' | 'not_found' | 'conflict';
export interface LabError {
  code: LabErrorCode;
  message: string;
}
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: LabError };

const ok = <T>(value: T): Outcome<T> => ({ ok: true, value });
const fail = <T>(code: LabErrorCode, message: string): Outcome<T> => ({ ok: false, error: { code, message } });

export interface InitialProcess {
  id: string;
  clock_type: ClockType;
}

export interface LabConfig {
  initialProcesses: InitialProcess[];
  conflictStrategy: ConflictStrategy;
  defaultDelayMs: number;
  initialBalance: number;
  deliveryMode: DeliveryMode;
  /** Estimated bytes undelivered messages may hold (VC_UNDELIVERED_BYTES_MAX; default undeliveredBytesMax). */
  undeliveredBytesMax: number;
}

export const defaultLabConfig: LabConfig = {
  initialProcesses: [],
  conflictStrategy: 'keep_all',
  defaultDelayMs: channelDelayMsDefault,
  initialBalance: initialBalanceDefault,
  deliveryMode: 'causal',
  undeliveredBytesMax,
};

/** An application message as it travels: the sender's timestamps plus the causal-delivery metadata. */
interface AppMessage {
  kind: 'app';
  id: string;
  from: number;
  to: number;
  payload: string;
  amount: number;
  cast: 'unicast' | 'broadcast';
  broadcastId: string | undefined;
  lamport: number;
  vector: Vector;
  /** Only when the sender keeps a matrix clock. */
  matrix: Matrix | undefined;
  /** Raynal–Schiper–Toueg: the sender's SENT matrix before this send (shared by a broadcast's copies). */
  stm: Matrix;
  /** Birman–Schiper–Stephenson timestamp, broadcasts only. */
  bss: Vector | undefined;
  /** Position on the channel from→to. */
  seq: number;
  sentAtMs: number;
  arrivedAtMs: number;
  /** Estimated bytes this message holds while undelivered (counted against undeliveredBytesMax). */
  cost: number;
}

interface MarkerPacket {
  kind: 'marker';
  snapshotId: string;
  from: number;
  to: number;
}

type Packet = AppMessage | MarkerPacket;

interface Proc {
  id: string;
  slot: number;
  clockType: ClockType;
  status: ProcessStatus;
  spawnedAtMs: number;
  lamport: number;
  /** Own vector clock; for a matrix process it is also row `slot` of `matrix` (same array). */
  vector: Vector;
  matrix: Matrix | undefined;
  /** RST: messages from k delivered here (or lost), as a settled prefix. */
  deliv: Vector;
  delivAhead: Array<Set<number> | undefined>;
  /** RST: SENT[k][l], messages k is known to have sent to l. */
  sent: Matrix;
  /** BSS timestamp vector: highest broadcast of k in this process's causal past; own entry counts own broadcasts. */
  bcast: Vector;
  /** BSS condition counter: broadcasts from k delivered here or known lost, as a settled prefix. */
  bcastSettled: Vector;
  bcastAhead: Array<Set<number> | undefined>;
  holdBack: AppMessage[];
  /** Application messages sent on the channel to each destination slot (channel seq). */
  chanSent: number[];
  /** Highest channel seq taken off the channel from each source slot. */
  chanArrived: number[];
  balance: number;
  sentCount: number;
  deliveredCount: number;
  eventCount: number;
}

interface ChannelFaults {
  delayMs: number;
  dropRate: number;
  reorder: boolean;
  reorderWindowMs: number;
}

interface Reordering {
  releaseAtMs: number;
  order: number;
  msg: AppMessage;
}

/** FIFO mirror of one fabric link, so a drop the fabric reports in flight can be named. */
class PacketQueue {
  private items: Packet[] = [];
  private head = 0;
  push(p: Packet): void {
    this.items.push(p);
  }
  peek(): Packet | undefined {
    return this.items[this.head];
  }
  shift(): Packet | undefined {
    const p = this.items[this.head];
    if (p === undefined) return undefined;
    this.items[this.head] = undefined as unknown as Packet;
    this.head++;
    if (this.head > 64 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return p;
  }
  get size(): number {
    return this.items.length - this.head;
  }
  list(): Packet[] {
    return this.items.slice(this.head);
  }
}

export interface ProcessView {
  id: string;
  clock_type: ClockType;
  status: ProcessStatus;
  /** The clock of the process's type: a number, a vector or a matrix. */
  clock: number | Record<string, number> | Record<string, Record<string, number>>;
  lamport: number;
  vector: Record<string, number>;
  matrix?: Record<string, Record<string, number>>;
  /** Matrix processes: per process l, how many of l's events every alive process is known to have seen. */
  known_by_all?: Record<string, number>;
  balance: number;
  held: string[];
  sent: number;
  delivered: number;
  events: number;
  spawned_at_ms: number;
}

export interface MessageView {
  id: string;
  from: string;
  to: string;
  payload: string;
  amount: number;
  cast: 'unicast' | 'broadcast';
  broadcast_id?: string;
  lamport: number;
  vector: Record<string, number>;
  seq: number;
}

export interface SendResult {
  id: string;
  from: string;
  to: string;
  /** The sender's clocks right after the send event. */
  clock: ProcessView['clock'];
  lamport: number;
  vector: Record<string, number>;
  status: 'in_flight' | 'dropped' | 'reordering';
  drop_reason?: DropReason;
}

export interface KvVersionView {
  value: string;
  version: VersionVector;
  writer: string;
  timestamp: number;
  dot: { replica: string; counter: number };
}

export interface KvReadView {
  key: string;
  versions: KvVersionView[];
  conflict: boolean;
}

export interface KvWriteView extends KvReadView {
  outcome: 'created' | 'replaced' | 'conflict';
  written: KvVersionView;
  resolved_by?: Exclude<ConflictStrategy, 'keep_all'>;
}

export interface FaultsInput {
  delay_ms?: number;
  drop_rate?: number;
  reorder?: boolean;
  reorder_window_ms?: number;
}

export interface LabOptions {
  rng: Rng;
  emit: EmitFn;
  config?: Partial<LabConfig>;
  startMs?: number;
}

export function versionView(v: StoredVersion): KvVersionView {
  return { value: v.value, version: v.vector, writer: v.writer, timestamp: v.lamport, dot: { replica: v.dot.replica, counter: v.dot.counter } };
}

export class Lab {
  readonly config: LabConfig;
  private readonly rng: Rng;
  private readonly out: EmitFn;
  private readonly taps = new Set<EmitFn>();
  private nowMs: number;
  private fabric!: Fabric<Packet>;
  private procs: Proc[] = [];
  private ids: string[] = [];
  private bySlot = new Map<string, number>();
  private faults = new Map<string, ChannelFaults>();
  private mirror: Array<Array<PacketQueue | undefined>> = [];
  private reordering: Reordering[] = [];
  private reorderSeq = 0;
  private snapshots = new Map<string, GlobalSnapshot>();
  private kv: KvStore;
  private mode: DeliveryMode;
  private messageSeq = 0;
  private broadcastSeq = 0;
  private snapshotSeq = 0;
  /** While deliverDue runs: drops the fabric reported in flight, per link, not yet matched to a packet. */
  private inFlightDrops = new Map<string, number>();
  private delivering = false;
  /** Estimated bytes held by application messages not yet delivered or dropped (in flight, reordering, held back). */
  private undeliveredBytes = 0;
  /** Cumulative over resets (what metrics and benchmarks read). */
  readonly totals = { snapshotsDiscarded: 0, snapshotsEvicted: 0 };

  constructor(opts: LabOptions) {
    this.rng = opts.rng;
    this.out = opts.emit;
    this.nowMs = opts.startMs ?? 0;
    this.config = { ...defaultLabConfig, ...(opts.config ?? {}) };
    this.kv = new KvStore(this.config.conflictStrategy);
    this.mode = this.config.deliveryMode;
    this.init();
    for (const p of this.config.initialProcesses) {
      const r = this.spawn(p.id, p.clock_type);
      invariant(r.ok, () => `initial process ${p.id}: ${r.ok ? '' : r.error.message}`);
    }
  }

  get now(): number {
    return this.nowMs;
  }

  /** Every event goes to the configured sink, then to each observer (scenarios watch what they cause). */
  private emit(type: Parameters<EmitFn>[0], data: EventData): void {
    this.out(type, data);
    for (const f of this.taps) f(type, data);
  }

  /** Adds an observer of every event; returns the function that removes it. */
  observe(f: EmitFn): () => void {
    this.taps.add(f);
    return () => this.taps.delete(f);
  }

  get deliveryMode(): DeliveryMode {
    return this.mode;
  }

  get conflictStrategy(): ConflictStrategy {
    return this.kv.strategy;
  }

  private init(): void {
    this.fabric = new Fabric<Packet>({ rng: this.rng.fork(), linkQueueMax });
    this.fabric.onDrop = (from, to, outcome) => {
      if (!this.delivering) return; // submit-time drops are handled from submit's return value
      const k = `${this.slotOf(from)}>${this.slotOf(to)}`;
      invariant(outcome === 'dropped_partition' || outcome === 'dropped_full', `unexpected in-flight drop ${outcome}`);
      this.inFlightDrops.set(k, (this.inFlightDrops.get(k) ?? 0) + 1);
    };
    this.procs = [];
    this.ids = [];
    this.bySlot = new Map();
    this.faults = new Map();
    this.mirror = [];
    this.reordering = [];
    this.snapshots = new Map();
    this.kv.clear();
    this.messageSeq = 0;
    this.broadcastSeq = 0;
    this.snapshotSeq = 0;
    this.undeliveredBytes = 0;
  }

  /**
   * Reinitialises the simulation: processes, channels, faults, snapshots (running ones are orphaned
   * and discarded), the KV store and the delivery mode. `withInitial` respawns the configured processes.
   */
  reset(withInitial = true): { discarded_snapshots: string[] } {
    const discarded = [...this.snapshots.values()].filter((s) => s.status !== 'complete').map((s) => s.id);
    this.totals.snapshotsDiscarded += discarded.length;
    this.init();
    this.kv.strategy = this.config.conflictStrategy;
    this.mode = this.config.deliveryMode;
    this.emit('simulation_reset', { discarded_snapshots: discarded, time_ms: this.nowMs });
    if (withInitial) {
      for (const p of this.config.initialProcesses) this.spawn(p.id, p.clock_type);
    }
    return { discarded_snapshots: discarded };
  }

  // ---------------------------------------------------------------- processes

  spawn(id: string, clockType: ClockType): Outcome<ProcessView> {
    const existing = this.bySlot.get(id);
    if (existing !== undefined) {
      const p = this.procs[existing] as Proc;
      return p.status === 'alive'
        ? fail('conflict', `process ${id} already exists`)
        : fail('conflict', `process ${id} was killed; its id stays reserved until the simulation is reset`);
    }
    if (this.procs.length >= processCountMax) return fail('conflict', `the simulation already has ${processCountMax} processes, its maximum`);
    // A matrix clock has n² entries, shown on each of its events and answers: simulations holding
    // one stay small (a 256-process matrix is a 9 MB answer per event, a broadcast's answer >1 GB).
    if (this.procs.length >= matrixSimulationProcessesMax && (clockType === 'matrix' || this.procs.some((q) => q.clockType === 'matrix'))) {
      return fail('conflict', `a simulation with a matrix clock holds at most ${matrixSimulationProcessesMax} processes (a matrix has n² entries); it has ${this.procs.length}`);
    }
    const slot = this.procs.length;
    // BSS: broadcasts made before joining were not addressed here: settled for the condition, but
    // not in this process's causal past (its own broadcasts must not make others wait for them).
    const bcastSettled: Vector = [];
    for (const q of this.procs) bcastSettled[q.slot] = q.bcast[q.slot] ?? 0;
    bcastSettled[slot] = 0;
    const bcast: Vector = bcastSettled.map(() => 0);
    const vector: Vector = [];
    for (let k = 0; k <= slot; k++) vector[k] = 0;
    const p: Proc = {
      id, slot, clockType, status: 'alive', spawnedAtMs: this.nowMs, lamport: 0, vector,
      matrix: undefined, deliv: [], delivAhead: [], sent: [], bcast, bcastSettled, bcastAhead: [], holdBack: [], chanSent: [], chanArrived: [],
      balance: this.config.initialBalance, sentCount: 0, deliveredCount: 0, eventCount: 0,
    };
    if (clockType === 'matrix') {
      p.matrix = [];
      p.matrix[slot] = p.vector;
    }
    this.procs.push(p);
    this.ids.push(id);
    this.bySlot.set(id, slot);
    this.fabric.addNode(id);
    for (const q of this.procs) {
      if (q === p) continue;
      this.fabric.setLatency(id, q.id, this.config.defaultDelayMs);
      this.fabric.setLatency(q.id, id, this.config.defaultDelayMs);
    }
    const view = this.view(p);
    this.emit('process_spawned', { process: id, clock_type: clockType, view });
    return ok(view);
  }

  /** Kills a process: it sends and delivers nothing more; its held-back messages are lost. */
  kill(id: string): Outcome<ProcessView> {
    const r = this.alive(id);
    if (!r.ok) return r;
    const p = r.value;
    p.status = 'killed';
    for (const m of p.holdBack) this.dropped(m, 'receiver_killed');
    p.holdBack = [];
    this.emit('process_killed', { process: id });
    for (const s of this.snapshots.values()) {
      if (s.status !== 'running' || !s.isParticipant(id)) continue;
      s.onKilled(id);
      const report = s.verify();
      this.emit('snapshot_incomplete', { snapshot: s.id, process: id, reasons: report.reasons });
    }
    return ok(this.view(p));
  }

  processes(): ProcessView[] {
    return this.procs.map((p) => this.view(p));
  }

  process(id: string): Outcome<ProcessView> {
    const r = this.find(id);
    return r.ok ? ok(this.view(r.value)) : r;
  }

  /** An internal event: every clock the process keeps ticks (IR1; vector rule 1; mt[i][i] += 1). */
  internalEvent(id: string, label = ''): Outcome<ProcessView> {
    const r = this.alive(id);
    if (!r.ok) return r;
    const p = r.value;
    this.tick(p);
    p.eventCount++;
    this.emit('internal_event', { process: id, label, lamport: p.lamport, vector: vectorToMap(p.vector, this.ids) });
    this.emitClock(p, 'internal');
    return ok(this.view(p));
  }

  // ---------------------------------------------------------------- messages

  send(fromId: string, toId: string, payload: string, amount = 0): Outcome<SendResult> {
    const rf = this.alive(fromId);
    if (!rf.ok) return rf;
    const rt = this.alive(toId);
    if (!rt.ok) return rt;
    const from = rf.value;
    const to = rt.value;
    if (from === to) return fail('invalid', 'a process cannot send a message to itself (there is no channel from a process to itself)');
    if (!Number.isInteger(amount) || amount < 0) return fail('invalid', 'amount must be a non-negative integer');
    if (amount > from.balance) return fail('conflict', `insufficient balance: ${fromId} holds ${from.balance}, cannot transfer ${amount}`);
    const cost = this.messageCost(from, payload, 1);
    const full = this.budgetProblem<SendResult>(cost);
    if (full) return full;
    this.tick(from);
    const seq = this.countSend(from, to);
    const msg = this.makeMessage(from, to, seq, payload, amount, 'unicast', undefined, copyMatrix(from.sent), undefined, cost);
    from.balance -= amount;
    this.emitClock(from, 'send');
    const status = this.transmit(msg);
    return ok(this.sendResult(from, msg, status));
  }

  /** Sends one copy to every other alive process, stamped for BSS and counted in RST's SENT matrix. */
  broadcast(fromId: string, payload: string): Outcome<{ broadcast_id: string; messages: SendResult[] }> {
    const rf = this.alive(fromId);
    if (!rf.ok) return rf;
    const from = rf.value;
    const copies = this.procs.filter((to) => to !== from && to.status === 'alive').length;
    const cost = this.messageCost(from, payload, copies);
    const full = this.budgetProblem<{ broadcast_id: string; messages: SendResult[] }>(cost * copies);
    if (full) return full;
    this.tick(from);
    // BSS: the sender counts its own broadcast (and delivers it to itself at once).
    from.bcast[from.slot] = (from.bcast[from.slot] ?? 0) + 1;
    from.bcastSettled[from.slot] = from.bcast[from.slot] as number;
    const ts = copyVector(from.bcast);
    const bid = `b${++this.broadcastSeq}`;
    const results: SendResult[] = [];
    const dests = this.procs.filter((to) => to !== from && to.status === 'alive');
    // RST: every copy is counted before ST is taken, so each receiver learns of its siblings.
    const seqs = dests.map((to) => this.countSend(from, to));
    const stm = copyMatrix(from.sent);
    const msgs = dests.map((to, i) => this.makeMessage(from, to, seqs[i] as number, payload, 0, 'broadcast', bid, stm, ts, cost));
    this.emitClock(from, 'send');
    for (const m of msgs) results.push(this.sendResult(from, m, this.transmit(m)));
    return ok({ broadcast_id: bid, messages: results });
  }

  /** RST's SENT[i][j] += 1; the same number is the message's position on the channel. */
  private countSend(from: Proc, to: Proc): number {
    const row = (from.sent[from.slot] ??= []);
    row[to.slot] = (row[to.slot] ?? 0) + 1;
    for (let l = 0; l < row.length; l++) if (row[l] === undefined) row[l] = 0;
    const seq = (from.chanSent[to.slot] = (from.chanSent[to.slot] ?? 0) + 1);
    invariant(seq === row[to.slot], 'channel seq and SENT[i][j] count the same sends');
    from.sentCount++;
    return seq;
  }

  /**
   * Estimated bytes one message holds until delivered: its payload, its vector, the sender's
   * matrix (copied per message) and its share of the RST SENT matrix (one copy per send, shared by
   * a broadcast's copies). Numbers count 8 bytes each.
   */
  private messageCost(from: Proc, payload: string, copies: number): number {
    let stmCells = 0;
    for (const row of from.sent) stmCells += row ? row.length : 0;
    let matrixCells = 0;
    if (from.matrix) for (const row of from.matrix) matrixCells += row ? row.length : 0;
    const n = this.procs.length;
    return 256 + 2 * payload.length + 8 * (n + matrixCells + Math.ceil((stmCells + n) / Math.max(1, copies)));
  }

  private budgetProblem<T>(cost: number): Outcome<T> | undefined {
    const max = this.config.undeliveredBytesMax;
    if (this.undeliveredBytes + cost <= max) return undefined;
    return fail('conflict', `undelivered messages (in flight, reordering or held back) already hold about ${Math.round(this.undeliveredBytes / 1024)} KiB, and this send needs ${Math.round(cost / 1024)} KiB more, past the maximum of ${max} bytes (VC_UNDELIVERED_BYTES_MAX); wait for deliveries, heal partitions or reset`);
  }

  private makeMessage(from: Proc, to: Proc, seq: number, payload: string, amount: number, cast: 'unicast' | 'broadcast', bid: string | undefined, stm: Matrix, bss: Vector | undefined, cost: number): AppMessage {
    const msg: AppMessage = {
      kind: 'app', id: `m${++this.messageSeq}`, from: from.slot, to: to.slot, payload, amount, cast, broadcastId: bid,
      lamport: from.lamport, vector: copyVector(from.vector), matrix: from.matrix ? copyMatrix(from.matrix) : undefined,
      stm, bss, seq, sentAtMs: this.nowMs, arrivedAtMs: -1, cost,
    };
    this.undeliveredBytes += cost;
    this.emit('message_sent', { ...this.messageView(msg) });
    return msg;
  }

  private sendResult(from: Proc, msg: AppMessage, status: 'in_flight' | 'reordering' | DropReason): SendResult {
    const base = {
      id: msg.id, from: from.id, to: this.ids[msg.to] as string, clock: this.clockOf(from), lamport: msg.lamport,
      vector: vectorToMap(msg.vector, this.ids),
    };
    if (status === 'in_flight' || status === 'reordering') return { ...base, status };
    return { ...base, status: 'dropped', drop_reason: status };
  }

  /** Drop rate and reordering apply to application messages only (markers are control traffic). */
  private transmit(msg: AppMessage): 'in_flight' | 'reordering' | DropReason {
    const f = this.faults.get(`${msg.from}>${msg.to}`);
    if (f && f.dropRate > 0 && this.rng.chance(f.dropRate)) {
      this.dropped(msg, 'drop_rate');
      return 'drop_rate';
    }
    if (f && f.reorder) {
      const extra = this.rng.range(0, f.reorderWindowMs);
      if (extra > 0) {
        if (this.reordering.length >= reorderDepthMax) {
          this.dropped(msg, 'reorder_full');
          return 'reorder_full';
        }
        this.insertReordering({ releaseAtMs: this.nowMs + extra, order: ++this.reorderSeq, msg });
        return 'reordering';
      }
    }
    const r = this.submit(msg);
    return r === undefined ? 'in_flight' : r;
  }

  private insertReordering(r: Reordering): void {
    const a = this.reordering;
    let lo = 0;
    let hi = a.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const x = a[mid] as Reordering;
      if (x.releaseAtMs < r.releaseAtMs || (x.releaseAtMs === r.releaseAtMs && x.order < r.order)) lo = mid + 1;
      else hi = mid;
    }
    a.splice(lo, 0, r);
  }

  /** Hands a packet to the fabric; returns the drop reason when it refused it. */
  private submit(pkt: Packet): DropReason | undefined {
    const outcome: SubmitOutcome = this.fabric.submit(this.ids[pkt.from] as string, this.ids[pkt.to] as string, pkt, this.nowMs);
    switch (outcome) {
      case 'queued': {
        const row = (this.mirror[pkt.from] ??= []);
        const q = (row[pkt.to] ??= new PacketQueue());
        q.push(pkt);
        return undefined;
      }
      case 'dropped_partition':
        return this.dropped(pkt, 'partition');
      case 'dropped_full':
        return this.dropped(pkt, 'queue_full');
      case 'dropped_rate':
        return this.dropped(pkt, 'drop_rate');
      case 'dropped_unknown_node':
        return this.dropped(pkt, 'unknown_node');
      default:
        return unreachable(outcome);
    }
  }

  private dropped(pkt: Packet, reason: DropReason): DropReason {
    const from = this.ids[pkt.from] as string;
    const to = this.ids[pkt.to] as string;
    if (pkt.kind === 'marker') {
      this.emit('message_dropped', { marker: true, snapshot: pkt.snapshotId, from, to, reason });
      const s = this.snapshots.get(pkt.snapshotId);
      if (s && s.onMarkerLost(from, to, reason)) this.emit('snapshot_incomplete', { snapshot: s.id, channel: { from, to }, reasons: s.verify().reasons });
      return reason;
    }
    this.undeliveredBytes -= pkt.cost;
    for (const s of this.snapshots.values()) s.onDropped(from, to, pkt.id);
    this.emit('message_dropped', { id: pkt.id, from, to, reason, amount: pkt.amount, cast: pkt.cast });
    // The lab is the oracle that knows the message is gone: it settles it at the receiver, so its
    // causal successors do not wait forever (a real system would retransmit instead).
    const q = this.procs[pkt.to] as Proc;
    if (q.status === 'alive') {
      settle(q.deliv, q.delivAhead, pkt.from, pkt.seq);
      if (pkt.bss) settle(q.bcastSettled, q.bcastAhead, pkt.from, pkt.bss[pkt.from] ?? 0);
      if (this.mode === 'causal' && q.holdBack.length > 0) this.drainHoldBack(q);
    }
    return reason;
  }

  // ---------------------------------------------------------------- time

  /** The earliest virtual time at which something is due (Infinity when the network is idle). */
  nextDueAt(): number {
    const r = this.reordering[0];
    const a = this.fabric.nextDueAt();
    return r && r.releaseAtMs < a ? r.releaseAtMs : a;
  }

  /** Moves virtual time to `t`, releasing reordered messages and delivering what falls due, in time order. */
  advanceTo(t: number): void {
    for (;;) {
      const next = this.nextDueAt();
      if (next > t) break;
      if (next > this.nowMs) this.nowMs = next;
      this.releaseReordering();
      this.deliverDue();
    }
    if (t > this.nowMs) this.nowMs = t;
  }

  advance(ms: number): void {
    this.advanceTo(this.nowMs + ms);
  }

  /** Advances until the network is idle or `maxMs` of virtual time passed; true when idle. */
  runUntilQuiet(maxMs: number): boolean {
    const end = this.nowMs + maxMs;
    for (;;) {
      const next = this.nextDueAt();
      if (next === Infinity) return true;
      if (next > end) {
        this.nowMs = end;
        return false;
      }
      this.advanceTo(next);
    }
  }

  private releaseReordering(): void {
    while (this.reordering.length > 0 && (this.reordering[0] as Reordering).releaseAtMs <= this.nowMs) {
      const r = this.reordering.shift() as Reordering;
      this.submit(r.msg);
    }
  }

  private deliverDue(): void {
    this.delivering = true;
    this.inFlightDrops.clear();
    try {
      this.fabric.deliverDue(this.nowMs, (to, batch) => this.onBatch(to, batch));
    } finally {
      this.delivering = false;
    }
    // Drops after the last delivered packet of a link in this round: the next packets of its mirror.
    for (const [k, n] of this.inFlightDrops) {
      const [f, t] = k.split('>').map(Number) as [number, number];
      const q = this.mirror[f]?.[t];
      for (let i = 0; i < n; i++) {
        const pkt = q?.shift();
        invariant(pkt, 'an in-flight drop matches a mirrored packet');
        this.dropped(pkt, 'partition');
      }
    }
    this.inFlightDrops.clear();
  }

  private onBatch(_to: string, batch: Array<Delivery<Packet>>): void {
    for (const d of batch) {
      const pkt = d.payload;
      const q = this.mirror[pkt.from]?.[pkt.to];
      invariant(q, 'every delivered packet was mirrored');
      // Everything ahead of it on the link was due earlier and did not arrive: dropped in flight.
      for (;;) {
        const head = q.shift();
        invariant(head, 'the delivered packet is in its link mirror');
        if (head === pkt) break;
        const k = `${pkt.from}>${pkt.to}`;
        const n = this.inFlightDrops.get(k) ?? 0;
        invariant(n > 0, 'a skipped mirror entry was reported dropped');
        this.inFlightDrops.set(k, n - 1);
        this.dropped(head, 'partition');
      }
      if (pkt.kind === 'app') this.onArrival(pkt);
      else this.onMarker(pkt);
    }
  }

  // ---------------------------------------------------------------- delivery

  private onArrival(m: AppMessage): void {
    const q = this.procs[m.to] as Proc;
    if (q.status !== 'alive') {
      this.dropped(m, 'receiver_killed');
      return;
    }
    m.arrivedAtMs = this.nowMs;
    if (m.seq > (q.chanArrived[m.from] ?? 0)) q.chanArrived[m.from] = m.seq;
    if (this.snapshots.size > 0) {
      const rec = this.recordedMessage(m);
      for (const s of this.snapshots.values()) s.onArrival(rec);
    }
    if (this.mode === 'immediate') {
      this.deliver(q, m);
      return;
    }
    const blocker = this.blocker(q, m);
    if (!blocker) {
      this.deliver(q, m);
      this.drainHoldBack(q);
      return;
    }
    if (q.holdBack.length >= holdBackDepthMax) {
      this.dropped(m, 'holdback_full');
      return;
    }
    q.holdBack.push(m);
    this.emit('message_held', {
      ...this.messageView(m),
      rule: blocker.rule,
      waiting_for: { process: this.ids[blocker.from], delivered: blocker.have, needed: blocker.need },
      held: q.holdBack.length,
    });
  }

  /** RST for every message, and BSS as well for a broadcast. */
  private blocker(q: Proc, m: AppMessage): Blocker | undefined {
    return rstBlocker(q.deliv, m.stm, q.slot, m.from) ?? (m.bss ? bssBlocker(q.bcastSettled, m.bss, m.from) : undefined);
  }

  private drainHoldBack(q: Proc): void {
    let progress = true;
    while (progress && q.holdBack.length > 0) {
      progress = false;
      for (let i = 0; i < q.holdBack.length; i++) {
        const m = q.holdBack[i] as AppMessage;
        if (this.blocker(q, m)) continue;
        q.holdBack.splice(i, 1);
        this.deliver(q, m);
        progress = true;
        break;
      }
    }
  }

  /**
   * Delivery is the receive event of the clock rules: Lamport IR2, vector merge-then-tick, matrix
   * knowledge update then tick. In immediate mode a message delivered before a causal predecessor
   * is reported as a causal violation (the hold-back queue exists to prevent exactly this).
   */
  private deliver(q: Proc, m: AppMessage): void {
    this.undeliveredBytes -= m.cost;
    const violation = this.mode === 'immediate' ? this.blocker(q, m) : undefined;
    rstOnDeliver(q.deliv, q.delivAhead, q.sent, m.stm, q.slot, m.from, m.seq);
    if (m.bss) bssOnDeliver(q.bcast, q.bcastSettled, q.bcastAhead, m.bss, m.from);
    q.lamport = lamportReceive(q.lamport, m.lamport);
    if (q.matrix) {
      if (m.matrix) matrixMergeInto(q.matrix, q.slot, m.from, m.matrix);
      else matrixMergeVector(q.matrix, q.slot, m.from, m.vector);
    } else {
      vectorMergeInto(q.vector, m.vector);
    }
    vectorTick(q.vector, q.slot);
    q.balance += m.amount;
    q.deliveredCount++;
    q.eventCount++;
    const view = this.messageView(m);
    this.emit('message_delivered', {
      ...view,
      held_ms: this.nowMs - m.arrivedAtMs,
      latency_ms: this.nowMs - m.sentAtMs,
      causal_violation: violation !== undefined,
    });
    if (violation) {
      this.emit('causal_violation', {
        ...view,
        missing: { process: this.ids[violation.from], delivered: violation.have, needed: violation.need, rule: violation.rule },
      });
    }
    this.emitClock(q, 'receive');
  }

  setDeliveryMode(mode: DeliveryMode): { mode: DeliveryMode; released: number } {
    const before = this.mode;
    this.mode = mode;
    let released = 0;
    if (mode === 'immediate') {
      // Nothing waits any more: everything held is delivered now, in arrival order.
      for (const q of this.procs) {
        const held = q.holdBack;
        q.holdBack = [];
        for (const m of held) this.deliver(q, m);
        released += held.length;
      }
    }
    if (before !== mode || released > 0) this.emit('delivery_mode_changed', { mode, previous: before, released });
    return { mode, released };
  }

  // ---------------------------------------------------------------- faults

  setChannelFaults(fromId: string, toId: string, input: FaultsInput): Outcome<{ from: string; to: string; delay_ms: number; drop_rate: number; reorder: boolean; reorder_window_ms: number }> {
    const rf = this.find(fromId);
    if (!rf.ok) return rf;
    const rt = this.find(toId);
    if (!rt.ok) return rt;
    if (rf.value === rt.value) return fail('invalid', 'a channel connects two different processes');
    const k = `${rf.value.slot}>${rt.value.slot}`;
    const f = this.faults.get(k) ?? { delayMs: this.fabric.latency(fromId, toId), dropRate: 0, reorder: false, reorderWindowMs: reorderWindowMsDefault };
    if (input.delay_ms !== undefined) {
      f.delayMs = input.delay_ms;
      this.fabric.setLatency(fromId, toId, input.delay_ms);
    }
    if (input.drop_rate !== undefined) f.dropRate = input.drop_rate;
    if (input.reorder !== undefined) f.reorder = input.reorder;
    if (input.reorder_window_ms !== undefined) f.reorderWindowMs = input.reorder_window_ms;
    this.faults.set(k, f);
    const out = { from: fromId, to: toId, delay_ms: f.delayMs, drop_rate: f.dropRate, reorder: f.reorder, reorder_window_ms: f.reorderWindowMs };
    this.emit('channel_faults_set', out);
    return ok(out);
  }

  partition(sideA: string[], sideB: string[]): Outcome<{ id: string; side_a: string[]; side_b: string[] }> {
    if (sideA.length === 0 || sideB.length === 0) return fail('invalid', 'side_a and side_b must each name at least one process');
    for (const id of [...sideA, ...sideB]) {
      const r = this.find(id);
      if (!r.ok) return r;
    }
    const a = new Set(sideA);
    const both = sideB.filter((x) => a.has(x));
    if (both.length > 0) return fail('invalid', `side_a and side_b must be disjoint; both name ${both.join(', ')}`);
    const id = this.fabric.partition(sideA, sideB);
    const out = { id, side_a: [...sideA], side_b: [...sideB] };
    this.emit('partition_created', out);
    return ok(out);
  }

  heal(partitionId: string): Outcome<{ id: string }> {
    if (!this.fabric.heal(partitionId)) return fail('not_found', `partition ${partitionId} not found`);
    this.emit('faults_cleared', { partition: partitionId });
    return ok({ id: partitionId });
  }

  /** Clears every delay, drop rate, reorder setting and partition; channels go back to the default delay. */
  clearFaults(): { cleared_channels: number; healed_partitions: number } {
    const healed = this.fabric.partitions().size;
    const cleared = this.faults.size;
    this.fabric.clearFaults();
    for (const p of this.procs) {
      for (const q of this.procs) if (p !== q) this.fabric.setLatency(p.id, q.id, this.config.defaultDelayMs);
    }
    this.faults.clear();
    const out = { cleared_channels: cleared, healed_partitions: healed };
    this.emit('faults_cleared', out);
    return out;
  }

  channels(): Array<{ from: string; to: string; delay_ms: number; drop_rate: number; reorder: boolean; reorder_window_ms: number; in_flight: number }> {
    const out: Array<{ from: string; to: string; delay_ms: number; drop_rate: number; reorder: boolean; reorder_window_ms: number; in_flight: number }> = [];
    for (const p of this.procs) {
      for (const q of this.procs) {
        if (p === q) continue;
        const f = this.faults.get(`${p.slot}>${q.slot}`);
        const inFlight = (this.mirror[p.slot]?.[q.slot]?.size ?? 0) + this.reordering.filter((r) => r.msg.from === p.slot && r.msg.to === q.slot).length;
        if (!f && inFlight === 0) continue;
        out.push({
          from: p.id, to: q.id, delay_ms: this.fabric.latency(p.id, q.id), drop_rate: f?.dropRate ?? 0,
          reorder: f?.reorder ?? false, reorder_window_ms: f?.reorderWindowMs ?? reorderWindowMsDefault, in_flight: inFlight,
        });
      }
    }
    return out;
  }

  // ---------------------------------------------------------------- snapshots

  /** Chandy–Lamport: the initiator records its state and sends a marker on every outgoing channel. */
  startSnapshot(initiatorId: string): Outcome<{ id: string; initiator: string; participants: string[] }> {
    const r = this.alive(initiatorId);
    if (!r.ok) return r;
    let running = 0;
    for (const s of this.snapshots.values()) if (s.status === 'running') running++;
    if (running >= snapshotsRunningMax) return fail('conflict', `${snapshotsRunningMax} snapshots are already running, the maximum; wait for one to complete`);
    const participants = this.procs.filter((p) => p.status === 'alive').map((p) => p.id);
    const channels = participants.length * (participants.length - 1);
    this.evictSnapshots(channels);
    const kept = this.snapshotChannelsKept();
    if (kept + channels > snapshotChannelsKeptMax) {
      return fail('conflict', `running snapshots already hold ${kept} channel records and this one needs ${channels}, past the ${snapshotChannelsKeptMax} maximum; wait for one to complete`);
    }
    const s = new GlobalSnapshot(`s${++this.snapshotSeq}`, initiatorId, this.nowMs, participants);
    this.snapshots.set(s.id, s);
    this.emit('snapshot_started', { snapshot: s.id, initiator: initiatorId, participants });
    this.recordAndForward(s, r.value, undefined);
    return ok({ id: s.id, initiator: initiatorId, participants });
  }

  /** Channel records (n(n−1) per snapshot) held by every kept snapshot. */
  private snapshotChannelsKept(): number {
    let n = 0;
    for (const s of this.snapshots.values()) n += s.channelCount;
    return n;
  }

  /** Makes room for one more snapshot of `channels` channels: the oldest finished ones go first, counted. */
  private evictSnapshots(channels: number): void {
    let kept = this.snapshotChannelsKept();
    const full = (): boolean => this.snapshots.size >= snapshotsKeptMax || kept + channels > snapshotChannelsKeptMax;
    if (!full()) return;
    for (const s of this.snapshots.values()) {
      if (s.status === 'running') continue;
      this.snapshots.delete(s.id);
      kept -= s.channelCount;
      if (s.status === 'incomplete') this.totals.snapshotsDiscarded++;
      this.totals.snapshotsEvicted++;
      this.emit('snapshot_evicted', { snapshot: s.id, status: s.status, kept_max: snapshotsKeptMax });
      if (!full()) return;
    }
  }

  private recordAndForward(s: GlobalSnapshot, p: Proc, markerFrom: string | undefined): void {
    s.record(this.recordedProcess(p), (to) => p.chanSent[this.slotOf(to)] ?? 0, (from) => p.chanArrived[this.slotOf(from)] ?? 0, markerFrom, this.nowMs);
    this.emit('snapshot_state_recorded', { snapshot: s.id, process: p.id, marker_from: markerFrom ?? null, balance: p.balance });
    // Marker sending rule: after recording, one marker on each outgoing channel before any further message.
    for (const qid of s.participants) {
      if (qid === p.id) continue;
      const pkt: MarkerPacket = { kind: 'marker', snapshotId: s.id, from: p.slot, to: this.slotOf(qid) };
      this.emit('marker_sent', { snapshot: s.id, from: p.id, to: qid });
      this.submit(pkt);
    }
    this.checkSnapshotDone(s);
  }

  /** Marker receiving rule: first marker → record state, channel empty, forward; later → close the channel. */
  private onMarker(pkt: MarkerPacket): void {
    const q = this.procs[pkt.to] as Proc;
    const fromId = this.ids[pkt.from] as string;
    if (q.status !== 'alive') {
      this.dropped(pkt, 'receiver_killed');
      return;
    }
    const s = this.snapshots.get(pkt.snapshotId);
    this.emit('marker_received', { snapshot: pkt.snapshotId, from: fromId, to: q.id });
    if (!s || s.status === 'incomplete') return;
    const r = s.onMarker(fromId, q.id, this.nowMs);
    if (r === 'ignored') return;
    this.findStragglers(s, pkt.from, pkt.to);
    if (r === 'record') this.recordAndForward(s, q, fromId);
    else this.checkSnapshotDone(s);
  }

  /** Messages sent before the sender's cut still waiting in the reorder stage will arrive behind the marker. */
  private findStragglers(s: GlobalSnapshot, from: number, to: number): void {
    if (this.reordering.length === 0) return;
    const ch = s.channel(this.ids[from] as string, this.ids[to] as string);
    if (!ch || ch.sentAtCut === undefined) return;
    const cut = ch.sentAtCut;
    const ids = this.reordering.filter((r) => r.msg.from === from && r.msg.to === to && r.msg.seq <= cut).map((r) => r.msg.id);
    if (ids.length > 0) s.addStragglers(ch.from, ch.to, ids);
  }

  private checkSnapshotDone(s: GlobalSnapshot): void {
    if (s.status !== 'complete' || s.completedAtMs !== this.nowMs) return;
    const v = s.verify();
    this.emit('snapshot_complete', {
      snapshot: s.id, initiator: s.initiator, duration_ms: this.nowMs - s.startedAtMs, consistent: v.consistent,
      in_transit: v.in_transit, total_balance: s.totalBalance(),
    });
  }

  snapshot(id: string): Outcome<ReturnType<Lab['snapshotView']>> {
    const s = this.snapshots.get(id);
    if (!s) return fail('not_found', `snapshot ${id} not found (snapshots are discarded when the simulation is reset)`);
    return ok(this.snapshotView(s));
  }

  snapshotList(): Array<{ id: string; initiator: string; status: string; started_at_ms: number }> {
    return [...this.snapshots.values()].map((s) => ({ id: s.id, initiator: s.initiator, status: s.status, started_at_ms: s.startedAtMs }));
  }

  verifySnapshot(id: string): Outcome<VerifyReport> {
    const s = this.snapshots.get(id);
    if (!s) return fail('not_found', `snapshot ${id} not found (snapshots are discarded when the simulation is reset)`);
    return ok(s.verify());
  }

  private snapshotView(s: GlobalSnapshot) {
    return {
      id: s.id,
      initiator: s.initiator,
      status: s.status,
      started_at_ms: s.startedAtMs,
      completed_at_ms: s.completedAtMs ?? null,
      participants: [...s.participants],
      processes: Object.fromEntries(s.processes),
      channels: s.channelList().map((c) => ({
        from: c.from, to: c.to, phase: c.phase, messages: c.messages, sent_at_cut: c.sentAtCut ?? null, received_at_cut: c.arrivedAtCut ?? null,
      })),
      total_balance: s.totalBalance(),
    };
  }

  // ---------------------------------------------------------------- KV store

  /**
   * The spec's write semantics: the write is an event of the writer (its own entry goes up by one,
   * IR1 for its Lamport clock), and the writer's vector clock after it is the new version's vector,
   * so "the writer's clock dominates the stored vector" is exactly "the writer has seen the stored
   * write". The dot (writer, own entry) names the write. With `version`, a write made earlier (a
   * replayed or late replica write) is applied with that vector instead and no clock moves.
   */
  kvWrite(key: string, value: string, writerId: string, version?: Record<string, number>): Outcome<KvWriteView> {
    const r = this.alive(writerId);
    if (!r.ok) return r;
    const w = r.value;
    let candidate: StoredVersion;
    if (version) {
      for (const id of Object.keys(version)) {
        if (!this.bySlot.has(id)) return fail('invalid', `version: names unknown process ${id.length > 80 ? `${id.slice(0, 80)}…` : id}`);
      }
      const own = version[writerId] ?? 0;
      if (own < 1) return fail('invalid', `version: must count the write itself in the writer's entry (${writerId} >= 1)`);
      candidate = { value, vector: compactVersionVector(version), lamport: w.lamport, writer: writerId, dot: { replica: writerId, counter: own } };
    } else {
      this.tick(w);
      w.eventCount++;
      candidate = {
        value, vector: compactVersionVector(vectorToMap(w.vector, this.ids)), lamport: w.lamport, writer: writerId,
        dot: { replica: writerId, counter: w.vector[w.slot] ?? 0 },
      };
      this.emitClock(w, 'kv_write');
    }
    const res = this.kv.write(key, candidate);
    switch (res.outcome) {
      case 'refused':
        return fail('conflict', res.reason);
      case 'stale':
        this.emit('kv_stale_write', { key, value, writer: writerId, version: candidate.vector, dominated_by: versionView(res.dominatedBy) });
        return fail('conflict', `stale write dropped: version ${JSON.stringify(candidate.vector)} is dominated by the stored version ${JSON.stringify(res.dominatedBy.vector)} written by ${res.dominatedBy.writer}`);
      case 'created':
      case 'replaced':
      case 'conflict': {
        const replaced = res.outcome === 'created' ? [] : res.replaced.map(versionView);
        this.emit('kv_write', { key, value, writer: writerId, version: candidate.vector, dot: candidate.dot, timestamp: candidate.lamport, outcome: res.outcome, replaced });
        let resolvedBy: Exclude<ConflictStrategy, 'keep_all'> | undefined;
        if (res.outcome === 'conflict') {
          const siblings = res.resolution ? res.resolution.siblings : res.versions;
          this.emit('kv_conflict', { key, strategy: this.kv.strategy, versions: siblings.map(versionView) });
          if (res.resolution) {
            resolvedBy = res.resolution.strategy;
            this.emit('kv_resolved', { key, strategy: res.resolution.strategy, result: versionView(res.resolution.result), siblings: siblings.map(versionView) });
          }
        }
        const versions = res.versions.map(versionView);
        const out: KvWriteView = { key, versions, conflict: versions.length > 1, outcome: res.outcome, written: versionView(candidate) };
        if (resolvedBy) out.resolved_by = resolvedBy;
        return ok(out);
      }
      default:
        return unreachable(res);
    }
  }

  /** Reads a key; with a reader, the read is a receive event of that process: its clocks absorb every version's. */
  kvRead(key: string, readerId?: string): Outcome<KvReadView> {
    let reader: Proc | undefined;
    if (readerId !== undefined) {
      const r = this.alive(readerId);
      if (!r.ok) return r;
      reader = r.value;
    }
    const versions = this.kv.read(key);
    if (!versions) return fail('not_found', `key ${key} not found`);
    if (reader) {
      let lamport = 0;
      for (const v of versions) {
        if (v.lamport > lamport) lamport = v.lamport;
        for (const [id, n] of Object.entries(v.vector)) {
          const slot = this.bySlot.get(id);
          if (slot !== undefined && n > (reader.vector[slot] ?? 0)) reader.vector[slot] = n;
        }
      }
      reader.lamport = lamportReceive(reader.lamport, lamport);
      vectorTick(reader.vector, reader.slot);
      reader.eventCount++;
      this.emit('kv_read', { key, reader: reader.id, versions: versions.length });
      this.emitClock(reader, 'kv_read');
    }
    const view = versions.map(versionView);
    return ok({ key, versions: view, conflict: view.length > 1 });
  }

  kvKeys(): string[] {
    return [...this.kv.entries()].map(([k]) => k);
  }

  // ---------------------------------------------------------------- views

  state() {
    return {
      time_ms: this.nowMs,
      delivery_mode: this.mode,
      conflict_strategy: this.kv.strategy,
      processes: this.processes(),
      channels: this.channels(),
      partitions: [...this.fabric.partitions()].map(([id, p]) => ({ id, side_a: p.groupA, side_b: p.groupB })),
      in_flight: this.fabric.stats().in_flight + this.reordering.length,
      undelivered_bytes: this.undeliveredBytes,
      snapshots: this.snapshotList(),
      kv_keys: this.kv.size,
    };
  }

  /** Cheap counts for the metrics gauges (a scrape must not build every view: at 256 processes that is megabytes). */
  counts(): { alive: number; killed: number; held: number; inFlight: number; snapshotsRunning: number; kvKeys: number } {
    let alive = 0;
    let held = 0;
    for (const p of this.procs) {
      if (p.status === 'alive') alive++;
      held += p.holdBack.length;
    }
    let snapshotsRunning = 0;
    for (const s of this.snapshots.values()) if (s.status === 'running') snapshotsRunning++;
    return { alive, killed: this.procs.length - alive, held, inFlight: this.fabric.stats().in_flight + this.reordering.length, snapshotsRunning, kvKeys: this.kv.size };
  }

  /** Messages currently held back at a process (for tests and the UI). */
  heldAt(id: string): MessageView[] {
    const r = this.find(id);
    return r.ok ? r.value.holdBack.map((m) => this.messageView(m)) : [];
  }

  /** Σ balances + held-back + in-flight amounts: constant unless messages carrying amounts were dropped. */
  totalBalance(): number {
    let sum = 0;
    for (const p of this.procs) {
      sum += p.balance;
      for (const m of p.holdBack) sum += m.amount;
    }
    for (const r of this.reordering) sum += r.msg.amount;
    return sum + this.inFlightAmount();
  }

  private inFlightAmount(): number {
    let sum = 0;
    for (const row of this.mirror) {
      if (!row) continue;
      for (const q of row) if (q) for (const p of q.list()) if (p.kind === 'app') sum += p.amount;
    }
    return sum;
  }

  private view(p: Proc): ProcessView {
    const v: ProcessView = {
      id: p.id, clock_type: p.clockType, status: p.status, clock: this.clockOf(p), lamport: p.lamport,
      vector: vectorToMap(p.vector, this.ids), balance: p.balance, held: p.holdBack.map((m) => m.id),
      sent: p.sentCount, delivered: p.deliveredCount, events: p.eventCount, spawned_at_ms: p.spawnedAtMs,
    };
    if (p.matrix) {
      v.matrix = matrixToMap(p.matrix, this.ids);
      const rows = this.procs.filter((q) => q.status === 'alive').map((q) => q.slot);
      const known: Record<string, number> = {};
      if (rows.length > 0) for (let l = 0; l < this.ids.length; l++) known[this.ids[l] as string] = matrixKnownByAll(p.matrix, l, rows);
      v.known_by_all = known;
    }
    return v;
  }

  private clockOf(p: Proc): ProcessView['clock'] {
    switch (p.clockType) {
      case 'scalar':
        return p.lamport;
      case 'vector':
        return vectorToMap(p.vector, this.ids);
      case 'matrix':
        return matrixToMap(p.matrix as Matrix, this.ids);
      default:
        return unreachable(p.clockType);
    }
  }

  private messageView(m: AppMessage): MessageView {
    const v: MessageView = {
      id: m.id, from: this.ids[m.from] as string, to: this.ids[m.to] as string, payload: m.payload, amount: m.amount,
      cast: m.cast, lamport: m.lamport, vector: vectorToMap(m.vector, this.ids), seq: m.seq,
    };
    if (m.broadcastId) v.broadcast_id = m.broadcastId;
    return v;
  }

  private recordedMessage(m: AppMessage): RecordedMessage {
    return { id: m.id, from: this.ids[m.from] as string, to: this.ids[m.to] as string, payload: m.payload, amount: m.amount, seq: m.seq };
  }

  private recordedProcess(p: Proc): RecordedProcess {
    const r: RecordedProcess = {
      id: p.id, clock_type: p.clockType, lamport: p.lamport, vector: vectorToMap(p.vector, this.ids), balance: p.balance,
      held: p.holdBack.map((m) => this.recordedMessage(m)), delivered: p.deliveredCount, recorded_at_ms: this.nowMs,
    };
    if (p.matrix) r.matrix = matrixToMap(p.matrix, this.ids);
    return r;
  }

  private tick(p: Proc): void {
    p.lamport = lamportTick(p.lamport);
    vectorTick(p.vector, p.slot); // also mt[i][i] for a matrix process: row i is this array
  }

  private emitClock(p: Proc, cause: 'internal' | 'send' | 'receive' | 'kv_write' | 'kv_read'): void {
    const data: EventData = { process: p.id, cause, clock_type: p.clockType, clock: this.clockOf(p), lamport: p.lamport };
    if (p.clockType !== 'vector') data['vector'] = vectorToMap(p.vector, this.ids);
    this.emit('clock_tick', data);
  }

  private slotOf(id: string): number {
    const s = this.bySlot.get(id);
    invariant(s !== undefined, () => `unknown process ${id}`);
    return s;
  }

  private find(id: string): Outcome<Proc> {
    const s = this.bySlot.get(id);
    if (s === undefined) return fail('not_found', `process ${id} not found`);
    return ok(this.procs[s] as Proc);
  }

  private alive(id: string): Outcome<Proc> {
    const r = this.find(id);
    if (!r.ok) return r;
    if (r.value.status !== 'alive') return fail('conflict', `process ${id} is killed`);
    return r;
  }
}
