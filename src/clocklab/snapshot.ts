/**
 * The record of one Chandy–Lamport global snapshot (`globalSnapshot`): which processes have
 * recorded their state, which channels are still recording in-transit messages, and the facts the
 * verifier needs to judge the cut. It applies the marker rule's bookkeeping and answers "record
 * now?" as a value; sending markers and reading process state belong to the lab. Not raft's
 * compaction snapshot.
 */
import { invariant } from '../util/assert.js';

/** A message as the snapshot keeps it: in a channel's state or in a process's hold-back queue. */
export interface RecordedMessage {
  id: string;
  from: string;
  to: string;
  payload: string;
  amount: number;
  /** Position on its channel (1 = first message ever sent on from→to). */
  seq: number;
}

export interface RecordedProcess {
  id: string;
  clock_type: string;
  lamport: number;
  vector: Record<string, number>;
  matrix?: Record<string, Record<string, number>>;
  balance: number;
  /** Messages received from the channel but held back (not yet delivered): part of the process's state. */
  held: RecordedMessage[];
  delivered: number;
  recorded_at_ms: number;
}

export type ChannelPhase = 'waiting' | 'recording' | 'closed';

export interface ChannelRecord {
  from: string;
  to: string;
  phase: ChannelPhase;
  /** In-transit messages: arrived at `to` after it recorded, before the marker closed the channel. */
  messages: RecordedMessage[];
  /** Messages `from` had sent on this channel when it recorded its state. */
  sentAtCut: number | undefined;
  /** Highest channel seq `to` had taken off the channel when it recorded its state. */
  arrivedAtCut: number | undefined;
  /** Sent before the cut but still in flight when the marker arrived (the channel reordered). */
  stragglers: Set<string>;
  /** Stragglers that then arrived: sent before the cut, received after the marker, not recorded. */
  late: string[];
}

export type SnapshotStatus = 'running' | 'complete' | 'incomplete';

export interface VerifyReport {
  id: string;
  complete: boolean;
  consistent: boolean;
  status: SnapshotStatus;
  reasons: string[];
  channels_checked: number;
  in_transit: number;
}

const reasonsShownMax = 20;

export class GlobalSnapshot {
  readonly participants: readonly string[];
  readonly processes = new Map<string, RecordedProcess>();
  private readonly channels = new Map<string, ChannelRecord>();
  private readonly members: ReadonlySet<string>;
  private openChannels: number;
  /** Participants killed before the snapshot completed. */
  readonly killed: string[] = [];
  /** Receipts from processes that joined after the snapshot began, taken before the receiver recorded. */
  readonly outsiderReceipts: string[] = [];
  completedAtMs: number | undefined;

  constructor(
    readonly id: string,
    readonly initiator: string,
    readonly startedAtMs: number,
    participants: readonly string[],
  ) {
    invariant(participants.includes(initiator), 'the initiator takes part in its own snapshot');
    this.participants = [...participants];
    this.members = new Set(participants);
    for (const from of participants) {
      for (const to of participants) {
        if (from === to) continue;
        this.channels.set(key(from, to), {
          from, to, phase: 'waiting', messages: [], sentAtCut: undefined, arrivedAtCut: undefined, stragglers: new Set(), late: [],
        });
      }
    }
    this.openChannels = this.channels.size;
  }

  get status(): SnapshotStatus {
    if (this.completedAtMs !== undefined) return 'complete';
    return this.killed.length > 0 ? 'incomplete' : 'running';
  }

  isParticipant(p: string): boolean {
    return this.members.has(p);
  }

  hasRecorded(p: string): boolean {
    return this.processes.has(p);
  }

  channel(from: string, to: string): ChannelRecord | undefined {
    return this.channels.get(key(from, to));
  }

  channelList(): ChannelRecord[] {
    return [...this.channels.values()];
  }

  /**
   * p records its state (the initiator at once; any other process on its first marker, which
   * arrived on `markerFrom`). Its outgoing channels learn how much was sent before the cut; each
   * incoming channel starts recording, except the one the first marker came on, which is empty
   * (the marker rule). The caller then sends a marker on every outgoing channel.
   */
  record(state: RecordedProcess, sentOn: (to: string) => number, arrivedOn: (from: string) => number, markerFrom: string | undefined, nowMs: number): void {
    const p = state.id;
    invariant(this.members.has(p) && !this.processes.has(p), `${p} records its state once per snapshot`);
    this.processes.set(p, state);
    for (const q of this.participants) {
      if (q === p) continue;
      const out = this.channels.get(key(p, q)) as ChannelRecord;
      out.sentAtCut = sentOn(q);
      const inc = this.channels.get(key(q, p)) as ChannelRecord;
      inc.arrivedAtCut = arrivedOn(q);
      if (q === markerFrom) this.close(inc);
      else inc.phase = 'recording';
    }
    this.checkComplete(nowMs);
  }

  /** The marker rule at `to` for a marker from `from`: 'record' when it is the first marker `to` sees. */
  onMarker(from: string, to: string, nowMs: number): 'record' | 'closed' | 'ignored' {
    const ch = this.channels.get(key(from, to));
    if (!ch || ch.phase === 'closed') return 'ignored';
    if (!this.processes.has(to)) return 'record';
    this.close(ch);
    this.checkComplete(nowMs);
    return 'closed';
  }

  /** An application message taken off channel from→to. */
  onArrival(msg: RecordedMessage): void {
    const ch = this.channels.get(key(msg.from, msg.to));
    if (!ch) {
      if (this.members.has(msg.to) && !this.members.has(msg.from) && !this.processes.has(msg.to) && this.completedAtMs === undefined) {
        this.outsiderReceipts.push(`${msg.to} received ${msg.id} from ${msg.from}, which joined after the snapshot began, before recording its state: a receive whose send is outside the cut`);
      }
      return;
    }
    if (ch.phase === 'recording') ch.messages.push(msg);
    else if (ch.phase === 'closed' && ch.stragglers.delete(msg.id)) ch.late.push(msg.id);
  }

  /** Marker arrival found these messages, sent before the cut, still in flight (a reordering channel). */
  addStragglers(from: string, to: string, ids: readonly string[]): void {
    const ch = this.channels.get(key(from, to));
    if (ch) for (const id of ids) ch.stragglers.add(id);
  }

  /** A message lost on the way: it is neither received nor in transit, so it no longer counts against the cut. */
  onDropped(from: string, to: string, id: string): void {
    this.channels.get(key(from, to))?.stragglers.delete(id);
  }

  /** A participant died before the snapshot completed: its markers will never be sent or received. */
  onKilled(p: string): void {
    if (this.members.has(p) && this.completedAtMs === undefined && !this.killed.includes(p)) this.killed.push(p);
  }

  /** Σ recorded balances + held-back amounts + in-transit amounts (the bank-transfer invariant). */
  totalBalance(): number {
    let sum = 0;
    for (const p of this.processes.values()) {
      sum += p.balance;
      for (const m of p.held) sum += m.amount;
    }
    for (const ch of this.channels.values()) for (const m of ch.messages) sum += m.amount;
    return sum;
  }

  /**
   * Checks the cut: complete; no receive recorded without its send (arrivedAtCut <= sentAtCut on
   * every channel); the recorded in-transit messages are exactly those sent before the sender's cut
   * and received after the receiver's (none recorded that was sent after, none that arrived after
   * the marker); no receipt from a process outside the snapshot.
   */
  verify(): VerifyReport {
    const reasons: string[] = [];
    const status = this.status;
    if (this.killed.length > 0) {
      for (const p of this.killed) {
        reasons.push(`process ${p} was killed after the snapshot began; the markers to and from it were never delivered, so the snapshot can never complete`);
      }
    } else if (status === 'running') {
      const open = this.channelList().filter((c) => c.phase !== 'closed').map((c) => `${c.from}→${c.to}`);
      const waiting = this.participants.filter((p) => !this.processes.has(p));
      const parts: string[] = [];
      if (waiting.length > 0) parts.push(`${waiting.length} process(es) have not recorded their state (${waiting.slice(0, 5).join(', ')})`);
      if (open.length > 0) parts.push(`${open.length} channel(s) still wait for a marker (${open.slice(0, 5).join(', ')}${open.length > 5 ? ', ...' : ''})`);
      reasons.push(`snapshot not complete: ${parts.join('; ')}`);
    }
    let inTransit = 0;
    for (const ch of this.channels.values()) {
      inTransit += ch.messages.length;
      if (ch.sentAtCut !== undefined && ch.arrivedAtCut !== undefined && ch.arrivedAtCut > ch.sentAtCut) {
        reasons.push(`${ch.to} had received message #${ch.arrivedAtCut} on ${ch.from}→${ch.to} when it recorded, but ${ch.from} had sent only ${ch.sentAtCut} when it recorded: a receive whose send is outside the cut`);
      }
      if (ch.sentAtCut !== undefined) {
        for (const m of ch.messages) {
          if (m.seq > ch.sentAtCut) reasons.push(`${m.id} on ${ch.from}→${ch.to} is recorded in transit but was sent after ${ch.from} recorded its state`);
        }
      }
      for (const id of ch.late) reasons.push(`${id} on ${ch.from}→${ch.to} was sent before the cut but arrived after the marker, so the channel state misses it (the channel is not FIFO)`);
      if (ch.phase === 'closed') {
        for (const id of ch.stragglers) reasons.push(`${id} on ${ch.from}→${ch.to} was sent before the cut and is still in flight behind the marker (the channel is not FIFO)`);
      }
    }
    reasons.push(...this.outsiderReceipts);
    const shown = reasons.length > reasonsShownMax ? [...reasons.slice(0, reasonsShownMax), `... and ${reasons.length - reasonsShownMax} more`] : reasons;
    return {
      id: this.id,
      complete: status === 'complete',
      consistent: status === 'complete' && reasons.length === 0,
      status,
      reasons: shown,
      channels_checked: this.channels.size,
      in_transit: inTransit,
    };
  }

  private close(ch: ChannelRecord): void {
    if (ch.phase === 'closed') return;
    ch.phase = 'closed';
    this.openChannels--;
  }

  private checkComplete(nowMs: number): void {
    if (this.completedAtMs !== undefined || this.killed.length > 0) return;
    if (this.openChannels === 0 && this.processes.size === this.participants.length) this.completedAtMs = nowMs;
  }
}

function key(from: string, to: string): string {
  return `${from}\u0000${to}`;
}
