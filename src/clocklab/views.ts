/**
 * What the lab shows: the JSON shapes of processes, messages, sends, channels, snapshots and KV
 * versions, and the pure functions that build them from the lab's records. Nothing here changes
 * state or emits; `ids` is the lab's slot → process id table.
 */
import type { ConflictStrategy, StoredVersion } from './kv.js';
import type { DropReason } from './channels.js';
import {
  matrixKnownByAll,
  matrixToMap,
  vectorToMap,
  type ClockType,
  type Matrix,
  type VersionVector,
} from './clocks.js';
import type { AppMessage, Proc, ProcessStatus } from './process.js';
import type { GlobalSnapshot, RecordedMessage, RecordedProcess } from './snapshot.js';
import { unreachable } from '../util/assert.js';

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

/** One directed channel's fault settings (what `setChannelFaults` answers). */
export interface ChannelFaultsView {
  from: string;
  to: string;
  delay_ms: number;
  drop_rate: number;
  reorder: boolean;
  reorder_window_ms: number;
}

/** A channel in the state view: its settings and the packets on it (in the fabric or reordering). */
export interface ChannelView extends ChannelFaultsView {
  in_flight: number;
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

export function versionView(v: StoredVersion): KvVersionView {
  return {
    value: v.value,
    version: v.vector,
    writer: v.writer,
    timestamp: v.lamport,
    dot: { replica: v.dot.replica, counter: v.dot.counter },
  };
}

/** The clock of the process's own type. */
export function clockOf(p: Proc, ids: readonly string[]): ProcessView['clock'] {
  switch (p.clockType) {
    case 'scalar':
      return p.lamport;
    case 'vector':
      return vectorToMap(p.vector, ids);
    case 'matrix':
      return matrixToMap(p.matrix as Matrix, ids);
    default:
      return unreachable(p.clockType);
  }
}

/** `procs` decides which rows count for known_by_all (the alive ones). */
export function processView(p: Proc, procs: readonly Proc[], ids: readonly string[]): ProcessView {
  const v: ProcessView = {
    id: p.id,
    clock_type: p.clockType,
    status: p.status,
    clock: clockOf(p, ids),
    lamport: p.lamport,
    vector: vectorToMap(p.vector, ids),
    balance: p.balance,
    held: p.holdBack.map((m) => m.id),
    sent: p.sentCount,
    delivered: p.deliveredCount,
    events: p.eventCount,
    spawned_at_ms: p.spawnedAtMs,
  };
  if (p.matrix) {
    v.matrix = matrixToMap(p.matrix, ids);
    const rows = procs.filter((q) => q.status === 'alive').map((q) => q.slot);
    const known: Record<string, number> = {};
    if (rows.length > 0) {
      for (let l = 0; l < ids.length; l++) known[ids[l] as string] = matrixKnownByAll(p.matrix, l, rows);
    }
    v.known_by_all = known;
  }
  return v;
}

export function messageView(m: AppMessage, ids: readonly string[]): MessageView {
  const v: MessageView = {
    id: m.id,
    from: ids[m.from] as string,
    to: ids[m.to] as string,
    payload: m.payload,
    amount: m.amount,
    cast: m.cast,
    lamport: m.lamport,
    vector: vectorToMap(m.vector, ids),
    seq: m.seq,
  };
  if (m.broadcastId) v.broadcast_id = m.broadcastId;
  return v;
}

/** `status` is what the send pipeline did with the message. */
export function sendResult(
  from: Proc,
  msg: AppMessage,
  status: 'in_flight' | 'reordering' | DropReason,
  ids: readonly string[],
): SendResult {
  const base = {
    id: msg.id,
    from: from.id,
    to: ids[msg.to] as string,
    clock: clockOf(from, ids),
    lamport: msg.lamport,
    vector: vectorToMap(msg.vector, ids),
  };
  if (status === 'in_flight' || status === 'reordering') return { ...base, status };
  return { ...base, status: 'dropped', drop_reason: status };
}

export function recordedMessage(m: AppMessage, ids: readonly string[]): RecordedMessage {
  return {
    id: m.id,
    from: ids[m.from] as string,
    to: ids[m.to] as string,
    payload: m.payload,
    amount: m.amount,
    seq: m.seq,
  };
}

export function recordedProcess(p: Proc, ids: readonly string[], nowMs: number): RecordedProcess {
  const r: RecordedProcess = {
    id: p.id,
    clock_type: p.clockType,
    lamport: p.lamport,
    vector: vectorToMap(p.vector, ids),
    balance: p.balance,
    held: p.holdBack.map((m) => recordedMessage(m, ids)),
    delivered: p.deliveredCount,
    recorded_at_ms: nowMs,
  };
  if (p.matrix) r.matrix = matrixToMap(p.matrix, ids);
  return r;
}

export function snapshotView(s: GlobalSnapshot) {
  return {
    id: s.id,
    initiator: s.initiator,
    status: s.status,
    started_at_ms: s.startedAtMs,
    completed_at_ms: s.completedAtMs ?? null,
    participants: [...s.participants],
    processes: Object.fromEntries(s.processes),
    channels: s.channelList().map((c) => ({
      from: c.from,
      to: c.to,
      phase: c.phase,
      messages: c.messages,
      sent_at_cut: c.sentAtCut ?? null,
      received_at_cut: c.arrivedAtCut ?? null,
    })),
    total_balance: s.totalBalance(),
  };
}

export type SnapshotView = ReturnType<typeof snapshotView>;
