/**
 * The clock lab's simulation, as a façade: processes with scalar, vector or matrix clocks exchanging
 * messages over channels (channels.ts: the fabric plus drop rate and reordering), causal delivery
 * through hold-back queues (delivery.ts), Chandy–Lamport snapshots (snapshot-markers.ts) and the KV
 * store (lab-kv.ts). It owns the processes and the clock, checks requests and reports everything
 * through `emit` (the event bus is plumbing). It is a pure state machine driven by
 * `advanceTo(virtualMs)` and a seeded Rng: it never reads the wall clock or sets a timer.
 */
import { invariant } from '../util/assert.js';
import type { Rng } from '../util/rng.js';
import {
  Channels,
  type DropReason,
  type FaultsInput,
  type MarkerPacket,
  type Packet,
  type TransmitStatus,
} from './channels.js';
import { copyMatrix, copyVector, vectorToMap, type ClockType, type Matrix, type Vector } from './clocks.js';
import {
  arrivalDecision,
  blocker,
  recordDelivery,
  settleLost,
  takeDeliverable,
  type DeliveryMode,
} from './delivery.js';
import type { EmitFn, EventData } from './events.js';
import { KvStore, type ConflictStrategy } from './kv.js';
import { kvRead, kvWrite, type KvContext } from './lab-kv.js';
import {
  channelDelayMsDefault,
  initialBalanceDefault,
  matrixSimulationProcessesMax,
  processCountMax,
  undeliveredBytesMax,
} from './limits.js';
import { fail, ok, type Outcome } from './outcome.js';
import { countSend, newProc, receiveClocks, tick, type AppMessage, type Proc } from './process.js';
import { SnapshotMarkers, type SnapshotListItem } from './snapshot-markers.js';
import type { VerifyReport } from './snapshot.js';
import {
  clockOf,
  messageView,
  processView,
  sendResult,
  type ChannelFaultsView,
  type ChannelView,
  type KvReadView,
  type KvWriteView,
  type MessageView,
  type ProcessView,
  type SendResult,
  type SnapshotView,
} from './views.js';

export type { DropReason, FaultsInput } from './channels.js';
export type { DeliveryMode } from './delivery.js';
export type { LabError, LabErrorCode, Outcome } from './outcome.js';
export type { ProcessStatus } from './process.js';
export { versionView } from './views.js';
export type {
  ChannelView,
  KvReadView,
  KvVersionView,
  KvWriteView,
  MessageView,
  ProcessView,
  SendResult,
} from './views.js';

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

/** What the metrics gauges read (cheap: no view is built). */
export interface LabCounts {
  alive: number;
  killed: number;
  held: number;
  inFlight: number;
  snapshotsRunning: number;
  kvKeys: number;
}

export interface LabOptions {
  rng: Rng;
  emit: EmitFn;
  config?: Partial<LabConfig>;
  startMs?: number;
}

/**
 * Estimated bytes one message holds until delivered: its payload, its vector, the sender's matrix
 * (copied per message) and its share of the RST SENT matrix (one copy per send, shared by a
 * broadcast's `copies`). Numbers count 8 bytes each; `processCount` is the vector's length.
 */
export function messageCostBytes(from: Proc, payload: string, copies: number, processCount: number): number {
  let stmCells = 0;
  for (const row of from.sent) stmCells += row ? row.length : 0;
  let matrixCells = 0;
  if (from.matrix) for (const row of from.matrix) matrixCells += row ? row.length : 0;
  const n = processCount;
  return 256 + 2 * payload.length + 8 * (n + matrixCells + Math.ceil((stmCells + n) / Math.max(1, copies)));
}

interface MessageInput {
  from: Proc;
  to: Proc;
  seq: number;
  payload: string;
  amount: number;
  cast: 'unicast' | 'broadcast';
  broadcastId: string | undefined;
  stm: Matrix;
  bss: Vector | undefined;
  cost: number;
}

export class Lab {
  readonly config: LabConfig;
  private readonly rng: Rng;
  private readonly out: EmitFn;
  private readonly taps = new Set<EmitFn>();
  private nowMs: number;
  private channelSet!: Channels;
  private markers!: SnapshotMarkers;
  private kvContext!: KvContext;
  private procs: Proc[] = [];
  private ids: string[] = [];
  private bySlot = new Map<string, number>();
  private kv: KvStore;
  private mode: DeliveryMode;
  private messageSeq = 0;
  private broadcastSeq = 0;
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
    this.procs = [];
    this.ids = [];
    this.bySlot = new Map();
    const emit: EmitFn = (type, data) => this.emit(type, data);
    this.channelSet = new Channels({
      rng: this.rng,
      ids: this.ids,
      dropped: (pkt, reason) => this.dropped(pkt, reason),
      arrived: (pkt) => (pkt.kind === 'app' ? this.onArrival(pkt) : this.onMarker(pkt)),
    });
    this.markers = new SnapshotMarkers({
      ids: this.ids,
      procs: this.procs,
      now: () => this.nowMs,
      emit,
      submit: (pkt) => void this.channelSet.submit(pkt, this.nowMs),
      slotOf: (id) => this.slotOf(id),
      reorderingUpTo: (from, to, seqMax) => this.channelSet.reorderingUpTo(from, to, seqMax),
      totals: this.totals,
    });
    this.kvContext = {
      kv: this.kv,
      ids: this.ids,
      slots: this.bySlot,
      emit,
      emitClock: (p, cause) => this.emitClock(p, cause),
    };
    this.kv.clear();
    this.messageSeq = 0;
    this.broadcastSeq = 0;
    this.undeliveredBytes = 0;
  }

  /**
   * Reinitialises the simulation: processes, channels, faults, snapshots (running ones are orphaned
   * and discarded), the KV store and the delivery mode. `withInitial` respawns the configured processes.
   */
  reset(withInitial = true): { discarded_snapshots: string[] } {
    const discarded = this.markers.unfinishedIds();
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
    if (this.procs.length >= processCountMax) {
      return fail('conflict', `the simulation already has ${processCountMax} processes, its maximum`);
    }
    // A matrix clock has n² entries, shown on each of its events and answers: simulations holding
    // one stay small (a 256-process matrix is a 9 MB answer per event, a broadcast's answer >1 GB).
    const matrixHere = clockType === 'matrix' || this.procs.some((q) => q.clockType === 'matrix');
    if (this.procs.length >= matrixSimulationProcessesMax && matrixHere) {
      return fail(
        'conflict',
        `a simulation with a matrix clock holds at most ${matrixSimulationProcessesMax} processes ` +
          `(a matrix has n² entries); it has ${this.procs.length}`,
      );
    }
    const p = newProc({ id, clockType, existing: this.procs, nowMs: this.nowMs, balance: this.config.initialBalance });
    this.procs.push(p);
    this.ids.push(id);
    this.bySlot.set(id, p.slot);
    this.channelSet.addProcess(id, this.ids, this.config.defaultDelayMs);
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
    this.markers.onKilled(id);
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
    tick(p);
    p.eventCount++;
    this.emit('internal_event', { process: id, label, lamport: p.lamport, vector: vectorToMap(p.vector, this.ids) });
    this.emitClock(p, 'internal');
    return ok(this.view(p));
  }

  // ---------------------------------------------------------------- messages

  send(fromId: string, toId: string, payload: string, amount = 0): Outcome<SendResult> {
    const fromFound = this.alive(fromId);
    if (!fromFound.ok) return fromFound;
    const toFound = this.alive(toId);
    if (!toFound.ok) return toFound;
    const from = fromFound.value;
    const to = toFound.value;
    if (from === to) {
      const why = 'a process cannot send a message to itself (there is no channel from a process to itself)';
      return fail('invalid', why);
    }
    if (!Number.isInteger(amount) || amount < 0) return fail('invalid', 'amount must be a non-negative integer');
    if (amount > from.balance) {
      return fail('conflict', `insufficient balance: ${fromId} holds ${from.balance}, cannot transfer ${amount}`);
    }
    const cost = messageCostBytes(from, payload, 1, this.procs.length);
    const full = this.budgetProblem<SendResult>(cost);
    if (full) return full;
    tick(from);
    const seq = countSend(from, to);
    const msg = this.makeMessage({
      from,
      to,
      seq,
      payload,
      amount,
      cast: 'unicast',
      broadcastId: undefined,
      stm: copyMatrix(from.sent),
      bss: undefined,
      cost,
    });
    from.balance -= amount;
    this.emitClock(from, 'send');
    const status = this.transmit(msg);
    return ok(sendResult(from, msg, status, this.ids));
  }

  /** Sends one copy to every other alive process, stamped for BSS and counted in RST's SENT matrix. */
  broadcast(fromId: string, payload: string): Outcome<{ broadcast_id: string; messages: SendResult[] }> {
    const fromFound = this.alive(fromId);
    if (!fromFound.ok) return fromFound;
    const from = fromFound.value;
    const copies = this.procs.filter((to) => to !== from && to.status === 'alive').length;
    const cost = messageCostBytes(from, payload, copies, this.procs.length);
    const full = this.budgetProblem<{ broadcast_id: string; messages: SendResult[] }>(cost * copies);
    if (full) return full;
    tick(from);
    // BSS: the sender counts its own broadcast (and delivers it to itself at once).
    from.bcast[from.slot] = (from.bcast[from.slot] ?? 0) + 1;
    from.bcastSettled[from.slot] = from.bcast[from.slot] as number;
    const bss = copyVector(from.bcast);
    const broadcastId = `b${++this.broadcastSeq}`;
    const results: SendResult[] = [];
    const dests = this.procs.filter((to) => to !== from && to.status === 'alive');
    // RST: every copy is counted before ST is taken, so each receiver learns of its siblings.
    const seqs = dests.map((to) => countSend(from, to));
    const stm = copyMatrix(from.sent);
    const msgs = dests.map((to, i) =>
      this.makeMessage({
        from,
        to,
        seq: seqs[i] as number,
        payload,
        amount: 0,
        cast: 'broadcast',
        broadcastId,
        stm,
        bss,
        cost,
      }),
    );
    this.emitClock(from, 'send');
    for (const m of msgs) results.push(sendResult(from, m, this.transmit(m), this.ids));
    return ok({ broadcast_id: broadcastId, messages: results });
  }

  private budgetProblem<T>(cost: number): Outcome<T> | undefined {
    const max = this.config.undeliveredBytesMax;
    if (this.undeliveredBytes + cost <= max) return undefined;
    return fail(
      'conflict',
      `undelivered messages (in flight, reordering or held back) already hold about ` +
        `${Math.round(this.undeliveredBytes / 1024)} KiB, and this send needs ${Math.round(cost / 1024)} KiB more, ` +
        `past the maximum of ${max} bytes (VC_UNDELIVERED_BYTES_MAX); wait for deliveries, heal partitions or reset`,
    );
  }

  private makeMessage(input: MessageInput): AppMessage {
    const { from, to } = input;
    const msg: AppMessage = {
      kind: 'app',
      id: `m${++this.messageSeq}`,
      from: from.slot,
      to: to.slot,
      payload: input.payload,
      amount: input.amount,
      cast: input.cast,
      broadcastId: input.broadcastId,
      lamport: from.lamport,
      vector: copyVector(from.vector),
      matrix: from.matrix ? copyMatrix(from.matrix) : undefined,
      stm: input.stm,
      bss: input.bss,
      seq: input.seq,
      sentAtMs: this.nowMs,
      arrivedAtMs: -1,
      cost: input.cost,
    };
    this.undeliveredBytes += input.cost;
    this.emit('message_sent', { ...messageView(msg, this.ids) });
    return msg;
  }

  private transmit(msg: AppMessage): TransmitStatus {
    return this.channelSet.transmit(msg, this.nowMs);
  }

  /** Every lost packet comes here, whatever lost it; answers `reason`. */
  private dropped(pkt: Packet, reason: DropReason): DropReason {
    if (pkt.kind === 'marker') {
      this.markers.onMarkerLost(pkt, reason);
      return reason;
    }
    const from = this.ids[pkt.from] as string;
    const to = this.ids[pkt.to] as string;
    this.undeliveredBytes -= pkt.cost;
    this.markers.onDropped(from, to, pkt.id);
    this.emit('message_dropped', { id: pkt.id, from, to, reason, amount: pkt.amount, cast: pkt.cast });
    const q = this.procs[pkt.to] as Proc;
    if (q.status === 'alive') {
      settleLost(q, pkt);
      if (this.mode === 'causal' && q.holdBack.length > 0) this.drainHoldBack(q);
    }
    return reason;
  }

  // ---------------------------------------------------------------- time

  /** The earliest virtual time at which something is due (Infinity when the network is idle). */
  nextDueAt(): number {
    return this.channelSet.nextDueAt();
  }

  /** Moves virtual time to `t`, releasing reordered messages and delivering what falls due, in time order. */
  advanceTo(t: number): void {
    for (;;) {
      const next = this.nextDueAt();
      if (next > t) break;
      if (next > this.nowMs) this.nowMs = next;
      this.channelSet.releaseDue(this.nowMs);
      this.channelSet.deliverDue(this.nowMs);
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

  // ---------------------------------------------------------------- delivery

  private onArrival(m: AppMessage): void {
    const q = this.procs[m.to] as Proc;
    if (q.status !== 'alive') {
      this.dropped(m, 'receiver_killed');
      return;
    }
    m.arrivedAtMs = this.nowMs;
    if (m.seq > (q.chanArrived[m.from] ?? 0)) q.chanArrived[m.from] = m.seq;
    this.markers.onArrival(m);
    const decision = arrivalDecision(q, m, this.mode);
    switch (decision.action) {
      case 'deliver':
        this.deliver(q, m);
        if (decision.drain) this.drainHoldBack(q);
        return;
      case 'drop':
        this.dropped(m, decision.reason);
        return;
      case 'hold': {
        const b = decision.blocker;
        q.holdBack.push(m);
        this.emit('message_held', {
          ...messageView(m, this.ids),
          rule: b.rule,
          waiting_for: { process: this.ids[b.from], delivered: b.have, needed: b.need },
          held: q.holdBack.length,
        });
        return;
      }
    }
  }

  private drainHoldBack(q: Proc): void {
    for (let m = takeDeliverable(q); m; m = takeDeliverable(q)) this.deliver(q, m);
  }

  /**
   * Delivery is the receive event of the clock rules (process.ts `receiveClocks`). In immediate mode
   * a message delivered before a causal predecessor is reported as a causal violation (the hold-back
   * queue exists to prevent exactly this).
   */
  private deliver(q: Proc, m: AppMessage): void {
    this.undeliveredBytes -= m.cost;
    const violation = this.mode === 'immediate' ? blocker(q, m) : undefined;
    recordDelivery(q, m);
    receiveClocks(q, m);
    const view = messageView(m, this.ids);
    this.emit('message_delivered', {
      ...view,
      held_ms: this.nowMs - m.arrivedAtMs,
      latency_ms: this.nowMs - m.sentAtMs,
      causal_violation: violation !== undefined,
    });
    if (violation) {
      this.emit('causal_violation', {
        ...view,
        missing: {
          process: this.ids[violation.from],
          delivered: violation.have,
          needed: violation.need,
          rule: violation.rule,
        },
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

  setChannelFaults(fromId: string, toId: string, input: FaultsInput): Outcome<ChannelFaultsView> {
    const fromFound = this.find(fromId);
    if (!fromFound.ok) return fromFound;
    const toFound = this.find(toId);
    if (!toFound.ok) return toFound;
    if (fromFound.value === toFound.value) return fail('invalid', 'a channel connects two different processes');
    const out = this.channelSet.setFaults(fromFound.value, toFound.value, input);
    this.emit('channel_faults_set', { ...out });
    return ok(out);
  }

  partition(sideA: string[], sideB: string[]): Outcome<{ id: string; side_a: string[]; side_b: string[] }> {
    if (sideA.length === 0 || sideB.length === 0) {
      return fail('invalid', 'side_a and side_b must each name at least one process');
    }
    for (const id of [...sideA, ...sideB]) {
      const r = this.find(id);
      if (!r.ok) return r;
    }
    const a = new Set(sideA);
    const both = sideB.filter((x) => a.has(x));
    if (both.length > 0) return fail('invalid', `side_a and side_b must be disjoint; both name ${both.join(', ')}`);
    const id = this.channelSet.partition(sideA, sideB);
    const out = { id, side_a: [...sideA], side_b: [...sideB] };
    this.emit('partition_created', out);
    return ok(out);
  }

  heal(partitionId: string): Outcome<{ id: string }> {
    if (!this.channelSet.heal(partitionId)) return fail('not_found', `partition ${partitionId} not found`);
    this.emit('faults_cleared', { partition: partitionId });
    return ok({ id: partitionId });
  }

  /** Clears every delay, drop rate, reorder setting and partition; channels go back to the default delay. */
  clearFaults(): { cleared_channels: number; healed_partitions: number } {
    const out = this.channelSet.clearFaults(this.ids, this.config.defaultDelayMs);
    this.emit('faults_cleared', out);
    return out;
  }

  channels(): ChannelView[] {
    return this.channelSet.views(this.procs);
  }

  // ---------------------------------------------------------------- snapshots

  /** Chandy–Lamport: the initiator records its state and sends a marker on every outgoing channel. */
  startSnapshot(initiatorId: string): Outcome<{ id: string; initiator: string; participants: string[] }> {
    const r = this.alive(initiatorId);
    if (!r.ok) return r;
    return this.markers.start(r.value);
  }

  /** A marker came off its channel. */
  private onMarker(pkt: MarkerPacket): void {
    const q = this.procs[pkt.to] as Proc;
    if (q.status !== 'alive') {
      this.dropped(pkt, 'receiver_killed');
      return;
    }
    this.markers.onMarker(pkt, q);
  }

  snapshot(id: string): Outcome<SnapshotView> {
    return this.markers.view(id);
  }

  snapshotList(): SnapshotListItem[] {
    return this.markers.list();
  }

  verifySnapshot(id: string): Outcome<VerifyReport> {
    return this.markers.verify(id);
  }

  // ---------------------------------------------------------------- KV store

  /** See lab-kv.ts: the write is an event of the writer unless `version` replays an earlier one. */
  kvWrite(key: string, value: string, writerId: string, version?: Record<string, number>): Outcome<KvWriteView> {
    const r = this.alive(writerId);
    if (!r.ok) return r;
    return kvWrite(this.kvContext, key, value, r.value, version);
  }

  /** Reads a key; with a reader, the read is a receive event of that process: its clocks absorb every version's. */
  kvRead(key: string, readerId?: string): Outcome<KvReadView> {
    let reader: Proc | undefined;
    if (readerId !== undefined) {
      const r = this.alive(readerId);
      if (!r.ok) return r;
      reader = r.value;
    }
    return kvRead(this.kvContext, key, reader);
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
      partitions: this.channelSet.partitions(),
      in_flight: this.channelSet.inFlightCount(),
      undelivered_bytes: this.undeliveredBytes,
      snapshots: this.snapshotList(),
      kv_keys: this.kv.size,
    };
  }

  /** Cheap counts for the metrics gauges (a scrape must not build every view: at 256 processes that is megabytes). */
  counts(): LabCounts {
    let alive = 0;
    let held = 0;
    for (const p of this.procs) {
      if (p.status === 'alive') alive++;
      held += p.holdBack.length;
    }
    return {
      alive,
      killed: this.procs.length - alive,
      held,
      inFlight: this.channelSet.inFlightCount(),
      snapshotsRunning: this.markers.runningCount(),
      kvKeys: this.kv.size,
    };
  }

  /** Messages currently held back at a process (for tests and the UI). */
  heldAt(id: string): MessageView[] {
    const r = this.find(id);
    return r.ok ? r.value.holdBack.map((m) => messageView(m, this.ids)) : [];
  }

  /** Σ balances + held-back + in-flight amounts: constant unless messages carrying amounts were dropped. */
  totalBalance(): number {
    let sum = 0;
    for (const p of this.procs) {
      sum += p.balance;
      for (const m of p.holdBack) sum += m.amount;
    }
    return sum + this.channelSet.inFlightAmount();
  }

  private view(p: Proc): ProcessView {
    return processView(p, this.procs, this.ids);
  }

  private emitClock(p: Proc, cause: 'internal' | 'send' | 'receive' | 'kv_write' | 'kv_read'): void {
    const data: EventData = {
      process: p.id,
      cause,
      clock_type: p.clockType,
      clock: clockOf(p, this.ids),
      lamport: p.lamport,
    };
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
