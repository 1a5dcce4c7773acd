/**
 * The lab's channels: the send pipeline on top of the fabric. An application message meets the
 * channel's drop rate, then its reorder stage (an extra random delay, bounded by reorderDepthMax),
 * then the fabric (per-link FIFO, delay, partitions, queue cap); markers go straight to the fabric.
 * Every packet that does not arrive is handed to `dropped` with its reason, in flight included (the
 * fabric's drop callback carries the payload). It is not the delivery rule: arrivals go to `arrived`
 * and what happens next is delivery.ts's and snapshot-markers.ts's.
 */
import { Fabric, type Delivery, type SubmitOutcome } from '../fabric/fabric.js';
import { invariant, unreachable } from '../util/assert.js';
import type { Rng } from '../util/rng.js';
import { linkQueueMax, reorderDepthMax, reorderWindowMsDefault } from './limits.js';
import type { AppMessage, Proc } from './process.js';
import type { ChannelFaultsView, ChannelView } from './views.js';

export type DropReason =
  | 'drop_rate'
  | 'partition'
  | 'queue_full'
  | 'receiver_killed'
  | 'holdback_full'
  | 'reorder_full'
  | 'unknown_node';

/** Chandy–Lamport control traffic: no drop rate, no reordering, no amount. */
export interface MarkerPacket {
  kind: 'marker';
  snapshotId: string;
  from: number;
  to: number;
}

export type Packet = AppMessage | MarkerPacket;

export type TransmitStatus = 'in_flight' | 'reordering' | DropReason;

export interface FaultsInput {
  delay_ms?: number;
  drop_rate?: number;
  reorder?: boolean;
  reorder_window_ms?: number;
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

export interface ChannelsOptions {
  /** The lab's rng: drop-rate and reorder draws come from it, the fabric gets a fork taken here. */
  rng: Rng;
  /** The lab's slot → process id table (shared, it grows as processes spawn). */
  ids: readonly string[];
  /** A packet is lost for `reason`; answers the reason (so a caller can return it). */
  dropped: (pkt: Packet, reason: DropReason) => DropReason;
  /** A packet came off its channel at the receiver. */
  arrived: (pkt: Packet) => void;
}

/** What orders the reorder stage: release time, then arrival. */
export interface ReorderKey {
  releaseAtMs: number;
  order: number;
}

/** Where reordering `r` goes in a stage sorted by (release time, arrival order). */
export function reorderInsertIndex(stage: ReadonlyArray<ReorderKey>, r: ReorderKey): number {
  let lo = 0;
  let hi = stage.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const x = stage[mid] as ReorderKey;
    if (x.releaseAtMs < r.releaseAtMs || (x.releaseAtMs === r.releaseAtMs && x.order < r.order)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The lab's name for a fabric refusal. */
export function dropReasonOf(outcome: Exclude<SubmitOutcome, 'queued'>): DropReason {
  switch (outcome) {
    case 'dropped_partition':
      return 'partition';
    case 'dropped_full':
      return 'queue_full';
    case 'dropped_rate':
      return 'drop_rate';
    case 'dropped_unknown_node':
      return 'unknown_node';
    default:
      return unreachable(outcome);
  }
}

const linkKey = (from: number, to: number): string => `${from}>${to}`;

export class Channels {
  private readonly rng: Rng;
  private readonly ids: readonly string[];
  private readonly dropped: ChannelsOptions['dropped'];
  private readonly arrived: ChannelsOptions['arrived'];
  private readonly fabric: Fabric<Packet>;
  private readonly faults = new Map<string, ChannelFaults>();
  /** The reorder stage, sorted by (releaseAtMs, order). */
  private reordering: Reordering[] = [];
  private reorderSeq = 0;
  /** Packets the fabric holds per link (`from>to` slots): the channel view's in_flight. */
  private readonly inFlightByLink = new Map<string, number>();
  /** Σ amount of application messages the fabric holds. */
  private inFlightAmountSum = 0;
  /** While deliverDue runs: packets the fabric dropped in flight, handled once it returns. */
  private inFlightDrops: Array<{ pkt: Packet; reason: DropReason }> = [];
  private delivering = false;
  private submitting = false;

  constructor(opts: ChannelsOptions) {
    this.rng = opts.rng;
    this.ids = opts.ids;
    this.dropped = opts.dropped;
    this.arrived = opts.arrived;
    this.fabric = new Fabric<Packet>({ rng: this.rng.fork(), linkQueueMax });
    this.fabric.onDrop = (_from, _to, outcome, pkt) => {
      // Submit-time drops are handled from submit's return value (a marker forwarded while
      // delivering meets them too, so `delivering` alone does not tell the two apart).
      if (this.submitting) return;
      invariant(this.delivering, 'the fabric drops a packet in flight only while delivering');
      invariant(outcome === 'dropped_partition' || outcome === 'dropped_full', `unexpected in-flight drop ${outcome}`);
      this.leftFabric(pkt);
      // Handled after the fabric's pass, so no lab rule runs while the fabric walks its queues.
      this.inFlightDrops.push({ pkt, reason: dropReasonOf(outcome) });
    };
  }

  /** A new process gets a channel both ways to every other, at `delayMs`. */
  addProcess(id: string, others: readonly string[], delayMs: number): void {
    this.fabric.addNode(id);
    for (const other of others) {
      if (other === id) continue;
      this.fabric.setLatency(id, other, delayMs);
      this.fabric.setLatency(other, id, delayMs);
    }
  }

  /** Drop rate and reordering apply to application messages only (markers are control traffic). */
  transmit(msg: AppMessage, nowMs: number): TransmitStatus {
    const f = this.faults.get(linkKey(msg.from, msg.to));
    if (f && f.dropRate > 0 && this.rng.chance(f.dropRate)) return this.dropped(msg, 'drop_rate');
    if (f && f.reorder) {
      const extra = this.rng.range(0, f.reorderWindowMs);
      if (extra > 0) {
        if (this.reordering.length >= reorderDepthMax) return this.dropped(msg, 'reorder_full');
        const r = { releaseAtMs: nowMs + extra, order: ++this.reorderSeq, msg };
        this.reordering.splice(reorderInsertIndex(this.reordering, r), 0, r);
        return 'reordering';
      }
    }
    const r = this.submit(msg, nowMs);
    return r === undefined ? 'in_flight' : r;
  }

  /** Hands a packet to the fabric; returns the drop reason when it refused it. */
  submit(pkt: Packet, nowMs: number): DropReason | undefined {
    this.submitting = true;
    let outcome: SubmitOutcome;
    try {
      outcome = this.fabric.submit(this.ids[pkt.from] as string, this.ids[pkt.to] as string, pkt, nowMs);
    } finally {
      this.submitting = false;
    }
    if (outcome !== 'queued') return this.dropped(pkt, dropReasonOf(outcome));
    const k = linkKey(pkt.from, pkt.to);
    this.inFlightByLink.set(k, (this.inFlightByLink.get(k) ?? 0) + 1);
    if (pkt.kind === 'app') this.inFlightAmountSum += pkt.amount;
    return undefined;
  }

  /** The earliest virtual time at which something is due (Infinity when the network is idle). */
  nextDueAt(): number {
    const r = this.reordering[0];
    const a = this.fabric.nextDueAt();
    return r && r.releaseAtMs < a ? r.releaseAtMs : a;
  }

  /** Reordered messages whose extra delay is over enter the fabric. */
  releaseDue(nowMs: number): void {
    while (this.reordering.length > 0 && (this.reordering[0] as Reordering).releaseAtMs <= nowMs) {
      const r = this.reordering.shift() as Reordering;
      this.submit(r.msg, nowMs);
    }
  }

  /**
   * Hands every due packet to `arrived`, then every packet lost in flight to `dropped`. In one pass
   * a link's due packets are either all dropped (a partition blocks it) or all handed over (lab
   * nodes are always deliverable), so handling the in-flight drops after the deliveries, in the
   * order the fabric reported them, keeps the order they had on their links.
   */
  deliverDue(nowMs: number): void {
    this.delivering = true;
    this.inFlightDrops = [];
    try {
      this.fabric.deliverDue(nowMs, (_to, batch) => this.onBatch(batch));
    } finally {
      this.delivering = false;
    }
    const drops = this.inFlightDrops;
    this.inFlightDrops = [];
    for (const d of drops) this.dropped(d.pkt, d.reason);
  }

  private onBatch(batch: Array<Delivery<Packet>>): void {
    for (const d of batch) {
      this.leftFabric(d.payload);
      this.arrived(d.payload);
    }
  }

  /** A packet the fabric held is gone from it (handed over or dropped in flight). */
  private leftFabric(pkt: Packet): void {
    const k = linkKey(pkt.from, pkt.to);
    const n = this.inFlightByLink.get(k) ?? 0;
    invariant(n > 0, 'a packet leaving the fabric was counted in flight on its link');
    if (n === 1) this.inFlightByLink.delete(k);
    else this.inFlightByLink.set(k, n - 1);
    if (pkt.kind === 'app') this.inFlightAmountSum -= pkt.amount;
  }

  // ---------------------------------------------------------------- faults

  /** Sets what `input` names on the channel from → to (slots and ids of two different processes). */
  setFaults(from: Proc, to: Proc, input: FaultsInput): ChannelFaultsView {
    const k = linkKey(from.slot, to.slot);
    const f = this.faults.get(k) ?? {
      delayMs: this.fabric.latency(from.id, to.id),
      dropRate: 0,
      reorder: false,
      reorderWindowMs: reorderWindowMsDefault,
    };
    if (input.delay_ms !== undefined) {
      f.delayMs = input.delay_ms;
      this.fabric.setLatency(from.id, to.id, input.delay_ms);
    }
    if (input.drop_rate !== undefined) f.dropRate = input.drop_rate;
    if (input.reorder !== undefined) f.reorder = input.reorder;
    if (input.reorder_window_ms !== undefined) f.reorderWindowMs = input.reorder_window_ms;
    this.faults.set(k, f);
    return {
      from: from.id,
      to: to.id,
      delay_ms: f.delayMs,
      drop_rate: f.dropRate,
      reorder: f.reorder,
      reorder_window_ms: f.reorderWindowMs,
    };
  }

  partition(sideA: string[], sideB: string[]): string {
    return this.fabric.partition(sideA, sideB);
  }

  heal(partitionId: string): boolean {
    return this.fabric.heal(partitionId);
  }

  partitions(): Array<{ id: string; side_a: string[]; side_b: string[] }> {
    return [...this.fabric.partitions()].map(([id, p]) => ({ id, side_a: p.groupA, side_b: p.groupB }));
  }

  /** Every delay, drop rate, reorder setting and partition goes; channels go back to `delayMs`. */
  clearFaults(ids: readonly string[], delayMs: number): { cleared_channels: number; healed_partitions: number } {
    const healed = this.fabric.partitions().size;
    const cleared = this.faults.size;
    this.fabric.clearFaults();
    for (const a of ids) {
      for (const b of ids) if (a !== b) this.fabric.setLatency(a, b, delayMs);
    }
    this.faults.clear();
    return { cleared_channels: cleared, healed_partitions: healed };
  }

  // ---------------------------------------------------------------- views

  /** Channels with a fault setting or packets on them. */
  views(procs: readonly Proc[]): ChannelView[] {
    const out: ChannelView[] = [];
    for (const p of procs) {
      for (const q of procs) {
        if (p === q) continue;
        const f = this.faults.get(linkKey(p.slot, q.slot));
        const reorderingHere = this.reordering.filter((r) => r.msg.from === p.slot && r.msg.to === q.slot).length;
        const inFlight = (this.inFlightByLink.get(linkKey(p.slot, q.slot)) ?? 0) + reorderingHere;
        if (!f && inFlight === 0) continue;
        out.push({
          from: p.id,
          to: q.id,
          delay_ms: this.fabric.latency(p.id, q.id),
          drop_rate: f?.dropRate ?? 0,
          reorder: f?.reorder ?? false,
          reorder_window_ms: f?.reorderWindowMs ?? reorderWindowMsDefault,
          in_flight: inFlight,
        });
      }
    }
    return out;
  }

  /** Packets in the fabric plus messages in the reorder stage. */
  inFlightCount(): number {
    return this.fabric.stats().in_flight + this.reordering.length;
  }

  /** Σ amount of the messages in the fabric and in the reorder stage. */
  inFlightAmount(): number {
    invariant(this.inFlightAmountSum >= 0, 'the in-flight amount is never negative');
    let sum = this.inFlightAmountSum;
    for (const r of this.reordering) sum += r.msg.amount;
    return sum;
  }

  /** Ids of messages from → to still in the reorder stage with a channel seq ≤ `seqMax`. */
  reorderingUpTo(from: number, to: number, seqMax: number): string[] {
    if (this.reordering.length === 0) return [];
    const here = this.reordering.filter((r) => r.msg.from === from && r.msg.to === to && r.msg.seq <= seqMax);
    return here.map((r) => r.msg.id);
  }
}
