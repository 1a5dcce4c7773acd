/**
 * The record of one Chandy–Lamport global snapshot (`globalSnapshot`): which processes have
 * recorded their state, which channels are still recording in-transit messages, and the facts the
 * verifier needs to judge the cut. It applies the marker rule's bookkeeping and answers "record
 * now?" as a value; sending markers and reading process state belong to the lab. Not raft's
 * compaction snapshot.
 */
import { invariant } from '../util/assert.js';
import { snapshotRecordedMessagesMax } from './limits.js';

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
  /** Channel from participant i to participant j at i * n + j (undefined on the diagonal). */
  private readonly channels: Array<ChannelRecord | undefined>;
  private readonly index: ReadonlyMap<string, number>;
  /** n(n−1): every ordered pair of participants. */
  readonly channelCount: number;
  private openChannels: number;
  /** Participants killed before the snapshot completed. */
  readonly killed: string[] = [];
  /**
   * Receipts from processes that joined after the snapshot began, taken before the receiver recorded (the
   * first few; the rest counted).
   */
  readonly outsiderReceipts: string[] = [];
  private outsiderReceiptsMore = 0;
  /** Why the snapshot can never complete, besides killed participants (a lost marker, the recording cap). */
  readonly abandoned: string[] = [];
  /** In-transit messages recorded on all channels together (held to snapshotRecordedMessagesMax). */
  private recorded = 0;
  completedAtMs: number | undefined;

  constructor(
    readonly id: string,
    readonly initiator: string,
    readonly startedAtMs: number,
    participants: readonly string[],
  ) {
    invariant(participants.includes(initiator), 'the initiator takes part in its own snapshot');
    this.participants = [...participants];
    const n = participants.length;
    this.index = new Map(participants.map((p, i) => [p, i]));
    this.channels = new Array<ChannelRecord | undefined>(n * n);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        if (i === j) continue;
        this.channels[i * n + j] = {
          from: participants[i] as string,
          to: participants[j] as string,
          phase: 'waiting',
          messages: [],
          sentAtCut: undefined,
          arrivedAtCut: undefined,
          stragglers: new Set(),
          late: [],
        };
      }
    }
    this.channelCount = n * (n - 1);
    this.openChannels = this.channelCount;
  }

  get status(): SnapshotStatus {
    if (this.completedAtMs !== undefined) return 'complete';
    return this.killed.length > 0 || this.abandoned.length > 0 ? 'incomplete' : 'running';
  }

  /**
   * The marker on from→to was lost (a partition): that channel's state can never be recorded, so
   * the snapshot can never complete. It stops recording at once (an open channel would otherwise
   * record every later message on it, without end). Returns false when it changed nothing.
   */
  onMarkerLost(from: string, to: string, reason: string): boolean {
    const ch = this.channel(from, to);
    if (!ch || ch.phase === 'closed' || this.status !== 'running') return false;
    this.abandon(
      `the marker on ${from}→${to} was lost (${reason}); that channel's state can never be ` +
        'recorded, so the snapshot can never complete',
    );
    return true;
  }

  /** Gives up: the snapshot is incomplete for good and records nothing more. */
  private abandon(reason: string): void {
    if (this.abandoned.length === 0) this.abandoned.push(reason);
  }

  isParticipant(p: string): boolean {
    return this.index.has(p);
  }

  hasRecorded(p: string): boolean {
    return this.processes.has(p);
  }

  channel(from: string, to: string): ChannelRecord | undefined {
    const i = this.index.get(from);
    const j = this.index.get(to);
    return i === undefined || j === undefined ? undefined : this.channels[i * this.participants.length + j];
  }

  channelList(): ChannelRecord[] {
    return this.channels.filter((c): c is ChannelRecord => c !== undefined);
  }

  /**
   * p records its state (the initiator at once; any other process on its first marker, which
   * arrived on `markerFrom`). Its outgoing channels learn how much was sent before the cut; each
   * incoming channel starts recording, except the one the first marker came on, which is empty
   * (the marker rule). The caller then sends a marker on every outgoing channel.
   */
  record(
    state: RecordedProcess,
    sentOn: (to: string) => number,
    arrivedOn: (from: string) => number,
    markerFrom: string | undefined,
    nowMs: number,
  ): void {
    const p = state.id;
    const i = this.index.get(p);
    invariant(i !== undefined && !this.processes.has(p), `${p} records its state once per snapshot`);
    this.processes.set(p, state);
    const n = this.participants.length;
    for (let j = 0; j < n; j++) {
      if (j === i) continue;
      const q = this.participants[j] as string;
      const out = this.channels[i * n + j] as ChannelRecord;
      out.sentAtCut = sentOn(q);
      const inc = this.channels[j * n + i] as ChannelRecord;
      inc.arrivedAtCut = arrivedOn(q);
      if (q === markerFrom) this.close(inc);
      else inc.phase = 'recording';
    }
    this.checkComplete(nowMs);
  }

  /** The marker rule at `to` for a marker from `from`: 'record' when it is the first marker `to` sees. */
  onMarker(from: string, to: string, nowMs: number): 'record' | 'closed' | 'ignored' {
    const ch = this.channel(from, to);
    if (!ch || ch.phase === 'closed') return 'ignored';
    if (!this.processes.has(to)) return 'record';
    this.close(ch);
    this.checkComplete(nowMs);
    return 'closed';
  }

  /** An application message taken off channel from→to. */
  onArrival(msg: RecordedMessage): void {
    if (this.status === 'incomplete') return;
    const ch = this.channel(msg.from, msg.to);
    if (!ch) {
      if (
        this.index.has(msg.to) &&
        !this.index.has(msg.from) &&
        !this.processes.has(msg.to) &&
        this.completedAtMs === undefined
      ) {
        if (this.outsiderReceipts.length < reasonsShownMax)
          this.outsiderReceipts.push(
            `${msg.to} received ${msg.id} from ${msg.from}, which joined after the snapshot began, ` +
              'before recording its state: a receive whose send is outside the cut',
          );
        else this.outsiderReceiptsMore++;
      }
      return;
    }
    if (ch.phase === 'recording') {
      if (this.recorded >= snapshotRecordedMessagesMax) {
        this.abandon(
          `more than ${snapshotRecordedMessagesMax} messages arrived in transit before the ` +
            'markers closed the channels, the recording maximum',
        );
        return;
      }
      this.recorded++;
      ch.messages.push(msg);
    } else if (ch.phase === 'closed' && ch.stragglers.delete(msg.id)) ch.late.push(msg.id);
  }

  /** Marker arrival found these messages, sent before the cut, still in flight (a reordering channel). */
  addStragglers(from: string, to: string, ids: readonly string[]): void {
    const ch = this.channel(from, to);
    if (ch) for (const id of ids) ch.stragglers.add(id);
  }

  /** A message lost on the way: it is neither received nor in transit, so it no longer counts against the cut. */
  onDropped(from: string, to: string, id: string): void {
    this.channel(from, to)?.stragglers.delete(id);
  }

  /** A participant died before the snapshot completed: its markers will never be sent or received. */
  onKilled(p: string): void {
    if (this.index.has(p) && this.completedAtMs === undefined && !this.killed.includes(p)) this.killed.push(p);
  }

  /** Σ recorded balances + held-back amounts + in-transit amounts (the bank-transfer invariant). */
  totalBalance(): number {
    let sum = 0;
    for (const p of this.processes.values()) {
      sum += p.balance;
      for (const m of p.held) sum += m.amount;
    }
    for (const ch of this.channels) if (ch) for (const m of ch.messages) sum += m.amount;
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
    reasons.push(...this.abandoned);
    if (this.killed.length > 0) {
      for (const p of this.killed) {
        reasons.push(
          `process ${p} was killed after the snapshot began; the markers to and from it were ` +
            'never delivered, so the snapshot can never complete',
        );
      }
    } else if (status === 'running' && this.abandoned.length === 0) {
      const open = this.channelList()
        .filter((c) => c.phase !== 'closed')
        .map((c) => `${c.from}→${c.to}`);
      const waiting = this.participants.filter((p) => !this.processes.has(p));
      const parts: string[] = [];
      if (waiting.length > 0)
        parts.push(`${waiting.length} process(es) have not recorded their state (${waiting.slice(0, 5).join(', ')})`);
      if (open.length > 0)
        parts.push(
          `${open.length} channel(s) still wait for a marker ` +
            `(${open.slice(0, 5).join(', ')}${open.length > 5 ? ', ...' : ''})`,
        );
      reasons.push(`snapshot not complete: ${parts.join('; ')}`);
    }
    let inTransit = 0;
    for (const ch of this.channels) {
      if (!ch) continue;
      inTransit += ch.messages.length;
      if (ch.sentAtCut !== undefined && ch.arrivedAtCut !== undefined && ch.arrivedAtCut > ch.sentAtCut) {
        reasons.push(
          `${ch.to} had received message #${ch.arrivedAtCut} on ${ch.from}→${ch.to} when it ` +
            `recorded, but ${ch.from} had sent only ${ch.sentAtCut} when it recorded: a receive ` +
            'whose send is outside the cut',
        );
      }
      if (ch.sentAtCut !== undefined) {
        for (const m of ch.messages) {
          if (m.seq > ch.sentAtCut)
            reasons.push(
              `${m.id} on ${ch.from}→${ch.to} is recorded in transit but was sent after ${ch.from} recorded its state`,
            );
        }
      }
      for (const id of ch.late)
        reasons.push(
          `${id} on ${ch.from}→${ch.to} was sent before the cut but arrived after the marker, so ` +
            'the channel state misses it (the channel is not FIFO)',
        );
      if (ch.phase === 'closed') {
        for (const id of ch.stragglers)
          reasons.push(
            `${id} on ${ch.from}→${ch.to} was sent before the cut and is still in flight behind ` +
              'the marker (the channel is not FIFO)',
          );
      }
    }
    reasons.push(...this.outsiderReceipts);
    if (this.outsiderReceiptsMore > 0)
      reasons.push(
        `... and ${this.outsiderReceiptsMore} more receipts from processes that joined after the snapshot began`,
      );
    const shown =
      reasons.length > reasonsShownMax
        ? [...reasons.slice(0, reasonsShownMax), `... and ${reasons.length - reasonsShownMax} more`]
        : reasons;
    return {
      id: this.id,
      complete: status === 'complete',
      consistent: status === 'complete' && reasons.length === 0,
      status,
      reasons: shown,
      channels_checked: this.channelCount,
      in_transit: inTransit,
    };
  }

  private close(ch: ChannelRecord): void {
    if (ch.phase === 'closed') return;
    ch.phase = 'closed';
    this.openChannels--;
  }

  private checkComplete(nowMs: number): void {
    if (this.completedAtMs !== undefined || this.killed.length > 0 || this.abandoned.length > 0) return;
    if (this.openChannels === 0 && this.processes.size === this.participants.length) this.completedAtMs = nowMs;
  }
}
