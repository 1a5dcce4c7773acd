/**
 * Chandy–Lamport as the lab runs it: starting a snapshot (within the running and kept caps, oldest
 * finished ones evicted first), the marker sending rule (record, then one marker per outgoing
 * channel), the marker receiving rule, and feeding arrivals, losses and kills to the recorders.
 * snapshot.ts stays the recorder and verifier of one snapshot; this module owns the set of them
 * and says what happens when. It sends markers only through `host.submit`.
 */
import type { MarkerPacket } from './channels.js';
import type { EmitFn } from './events.js';
import { snapshotChannelsKeptMax, snapshotsKeptMax, snapshotsRunningMax } from './limits.js';
import { fail, ok, type Outcome } from './outcome.js';
import type { AppMessage, Proc } from './process.js';
import { GlobalSnapshot, type VerifyReport } from './snapshot.js';
import { recordedMessage, recordedProcess, snapshotView, type SnapshotView } from './views.js';

export interface MarkerHost {
  /** Slot → process id. */
  ids: readonly string[];
  procs: readonly Proc[];
  now: () => number;
  emit: EmitFn;
  /** Hands a marker to the channels (no drop rate, no reordering). */
  submit: (pkt: MarkerPacket) => void;
  slotOf: (id: string) => number;
  /** Ids of messages from → to still in the reorder stage with a channel seq ≤ seqMax. */
  reorderingUpTo: (from: number, to: number, seqMax: number) => string[];
  /** Cumulative over resets (what metrics and benchmarks read). */
  totals: { snapshotsDiscarded: number; snapshotsEvicted: number };
}

export interface SnapshotListItem {
  id: string;
  initiator: string;
  status: string;
  started_at_ms: number;
}

export class SnapshotMarkers {
  private readonly snapshots = new Map<string, GlobalSnapshot>();
  private snapshotSeq = 0;

  constructor(private readonly host: MarkerHost) {}

  /** Snapshots still running or incomplete (what a reset discards). */
  unfinishedIds(): string[] {
    return [...this.snapshots.values()].filter((s) => s.status !== 'complete').map((s) => s.id);
  }

  runningCount(): number {
    let n = 0;
    for (const s of this.snapshots.values()) if (s.status === 'running') n++;
    return n;
  }

  /** Chandy–Lamport: the initiator records its state and sends a marker on every outgoing channel. */
  start(initiator: Proc): Outcome<{ id: string; initiator: string; participants: string[] }> {
    const running = this.runningCount();
    if (running >= snapshotsRunningMax) {
      const why = `${snapshotsRunningMax} snapshots are already running, the maximum; wait for one to complete`;
      return fail('conflict', why);
    }
    const participants = this.host.procs.filter((p) => p.status === 'alive').map((p) => p.id);
    const channels = participants.length * (participants.length - 1);
    this.evict(channels);
    const kept = this.channelsKept();
    if (kept + channels > snapshotChannelsKeptMax) {
      return fail(
        'conflict',
        `running snapshots already hold ${kept} channel records and this one needs ${channels}, ` +
          `past the ${snapshotChannelsKeptMax} maximum; wait for one to complete`,
      );
    }
    const s = new GlobalSnapshot(`s${++this.snapshotSeq}`, initiator.id, this.host.now(), participants);
    this.snapshots.set(s.id, s);
    this.host.emit('snapshot_started', { snapshot: s.id, initiator: initiator.id, participants });
    this.recordAndForward(s, initiator, undefined);
    return ok({ id: s.id, initiator: initiator.id, participants });
  }

  /** Channel records (n(n−1) per snapshot) held by every kept snapshot. */
  private channelsKept(): number {
    let n = 0;
    for (const s of this.snapshots.values()) n += s.channelCount;
    return n;
  }

  /** Makes room for one more snapshot of `channels` channels: the oldest finished ones go first, counted. */
  private evict(channels: number): void {
    let kept = this.channelsKept();
    const full = (): boolean => this.snapshots.size >= snapshotsKeptMax || kept + channels > snapshotChannelsKeptMax;
    if (!full()) return;
    for (const s of this.snapshots.values()) {
      if (s.status === 'running') continue;
      this.snapshots.delete(s.id);
      kept -= s.channelCount;
      if (s.status === 'incomplete') this.host.totals.snapshotsDiscarded++;
      this.host.totals.snapshotsEvicted++;
      this.host.emit('snapshot_evicted', { snapshot: s.id, status: s.status, kept_max: snapshotsKeptMax });
      if (!full()) return;
    }
  }

  private recordAndForward(s: GlobalSnapshot, p: Proc, markerFrom: string | undefined): void {
    const h = this.host;
    s.record(
      recordedProcess(p, h.ids, h.now()),
      (to) => p.chanSent[h.slotOf(to)] ?? 0,
      (from) => p.chanArrived[h.slotOf(from)] ?? 0,
      markerFrom,
      h.now(),
    );
    h.emit('snapshot_state_recorded', {
      snapshot: s.id,
      process: p.id,
      marker_from: markerFrom ?? null,
      balance: p.balance,
    });
    // Marker sending rule: after recording, one marker on each outgoing channel before any further message.
    for (const qid of s.participants) {
      if (qid === p.id) continue;
      const pkt: MarkerPacket = { kind: 'marker', snapshotId: s.id, from: p.slot, to: h.slotOf(qid) };
      h.emit('marker_sent', { snapshot: s.id, from: p.id, to: qid });
      h.submit(pkt);
    }
    this.checkDone(s);
  }

  /**
   * Marker receiving rule at alive process `q`: first marker → record state, channel empty,
   * forward; later → close the channel.
   */
  onMarker(pkt: MarkerPacket, q: Proc): void {
    const fromId = this.host.ids[pkt.from] as string;
    const s = this.snapshots.get(pkt.snapshotId);
    this.host.emit('marker_received', { snapshot: pkt.snapshotId, from: fromId, to: q.id });
    if (!s || s.status === 'incomplete') return;
    const r = s.onMarker(fromId, q.id, this.host.now());
    if (r === 'ignored') return;
    this.findStragglers(s, pkt.from, pkt.to);
    if (r === 'record') this.recordAndForward(s, q, fromId);
    else this.checkDone(s);
  }

  /** Messages sent before the sender's cut still waiting in the reorder stage will arrive behind the marker. */
  private findStragglers(s: GlobalSnapshot, from: number, to: number): void {
    const ch = s.channel(this.host.ids[from] as string, this.host.ids[to] as string);
    if (!ch || ch.sentAtCut === undefined) return;
    const ids = this.host.reorderingUpTo(from, to, ch.sentAtCut);
    if (ids.length > 0) s.addStragglers(ch.from, ch.to, ids);
  }

  private checkDone(s: GlobalSnapshot): void {
    const now = this.host.now();
    if (s.status !== 'complete' || s.completedAtMs !== now) return;
    const v = s.verify();
    this.host.emit('snapshot_complete', {
      snapshot: s.id,
      initiator: s.initiator,
      duration_ms: now - s.startedAtMs,
      consistent: v.consistent,
      in_transit: v.in_transit,
      total_balance: s.totalBalance(),
    });
  }

  /** An application message came off its channel (before the delivery rule): recording channels keep it. */
  onArrival(m: AppMessage): void {
    if (this.snapshots.size === 0) return;
    const rec = recordedMessage(m, this.host.ids);
    for (const s of this.snapshots.values()) s.onArrival(rec);
  }

  /** An application message was lost: it is no longer a straggler anybody waits for. */
  onDropped(from: string, to: string, id: string): void {
    for (const s of this.snapshots.values()) s.onDropped(from, to, id);
  }

  /** A marker was lost: its snapshot cannot complete (reported once, when it turns incomplete). */
  onMarkerLost(pkt: MarkerPacket, reason: string): void {
    const from = this.host.ids[pkt.from] as string;
    const to = this.host.ids[pkt.to] as string;
    this.host.emit('message_dropped', { marker: true, snapshot: pkt.snapshotId, from, to, reason });
    const s = this.snapshots.get(pkt.snapshotId);
    if (s && s.onMarkerLost(from, to, reason)) {
      this.host.emit('snapshot_incomplete', { snapshot: s.id, channel: { from, to }, reasons: s.verify().reasons });
    }
  }

  /** A participant was killed: every running snapshot it takes part in turns incomplete. */
  onKilled(id: string): void {
    for (const s of this.snapshots.values()) {
      if (s.status !== 'running' || !s.isParticipant(id)) continue;
      s.onKilled(id);
      const report = s.verify();
      this.host.emit('snapshot_incomplete', { snapshot: s.id, process: id, reasons: report.reasons });
    }
  }

  view(id: string): Outcome<SnapshotView> {
    const s = this.snapshots.get(id);
    if (!s) return fail('not_found', `snapshot ${id} not found (snapshots are discarded when the simulation is reset)`);
    return ok(snapshotView(s));
  }

  list(): SnapshotListItem[] {
    return [...this.snapshots.values()].map((s) => ({
      id: s.id,
      initiator: s.initiator,
      status: s.status,
      started_at_ms: s.startedAtMs,
    }));
  }

  verify(id: string): Outcome<VerifyReport> {
    const s = this.snapshots.get(id);
    if (!s) return fail('not_found', `snapshot ${id} not found (snapshots are discarded when the simulation is reset)`);
    return ok(s.verify());
  }
}
