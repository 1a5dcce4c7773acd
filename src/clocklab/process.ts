/**
 * One simulated process and the clock rules of its own events: its record (`Proc`), how a new one
 * starts (`newProc`), the tick of a local or send event, the channel count of a send and the clock
 * part of a receive. It is not the delivery rule (delivery.ts decides when a message may be
 * delivered) and emits nothing: the lab reports what these functions changed.
 */
import { invariant } from '../util/assert.js';
import {
  lamportReceive,
  lamportTick,
  matrixMergeInto,
  matrixMergeVector,
  vectorMergeInto,
  vectorTick,
  type ClockType,
  type Matrix,
  type Vector,
} from './clocks.js';

export type ProcessStatus = 'alive' | 'killed';

/** An application message as it travels: the sender's timestamps plus the causal-delivery metadata. */
export interface AppMessage {
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

export interface Proc {
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

export interface NewProcInput {
  id: string;
  clockType: ClockType;
  /** The processes spawned before it; the new one takes slot `existing.length`. */
  existing: readonly Proc[];
  nowMs: number;
  balance: number;
}

/** A fresh alive process in the next slot, every clock at zero. */
export function newProc(input: NewProcInput): Proc {
  const slot = input.existing.length;
  // BSS: broadcasts made before joining were not addressed here: settled for the condition, but
  // not in this process's causal past (its own broadcasts must not make others wait for them).
  const bcastSettled: Vector = [];
  for (const q of input.existing) bcastSettled[q.slot] = q.bcast[q.slot] ?? 0;
  bcastSettled[slot] = 0;
  const bcast: Vector = bcastSettled.map(() => 0);
  const vector: Vector = [];
  for (let k = 0; k <= slot; k++) vector[k] = 0;
  const p: Proc = {
    id: input.id,
    slot,
    clockType: input.clockType,
    status: 'alive',
    spawnedAtMs: input.nowMs,
    lamport: 0,
    vector,
    matrix: undefined,
    deliv: [],
    delivAhead: [],
    sent: [],
    bcast,
    bcastSettled,
    bcastAhead: [],
    holdBack: [],
    chanSent: [],
    chanArrived: [],
    balance: input.balance,
    sentCount: 0,
    deliveredCount: 0,
    eventCount: 0,
  };
  if (input.clockType === 'matrix') {
    p.matrix = [];
    p.matrix[slot] = p.vector;
  }
  return p;
}

/** A local, send or write event: every clock the process keeps ticks (IR1; vector rule 1; mt[i][i] += 1). */
export function tick(p: Proc): void {
  p.lamport = lamportTick(p.lamport);
  vectorTick(p.vector, p.slot); // also mt[i][i] for a matrix process: row i is this array
}

/** RST's SENT[i][j] += 1; the same number is the message's position on the channel. */
export function countSend(from: Proc, to: Proc): number {
  const row = (from.sent[from.slot] ??= []);
  row[to.slot] = (row[to.slot] ?? 0) + 1;
  for (let l = 0; l < row.length; l++) if (row[l] === undefined) row[l] = 0;
  const seq = (from.chanSent[to.slot] = (from.chanSent[to.slot] ?? 0) + 1);
  invariant(seq === row[to.slot], 'channel seq and SENT[i][j] count the same sends');
  from.sentCount++;
  return seq;
}

/**
 * The clock part of delivering `m` at `q`: Lamport IR2, vector merge-then-tick, matrix knowledge
 * update then tick; the amount is credited and the counters move. The causal bookkeeping (RST, BSS)
 * is delivery.ts's.
 */
export function receiveClocks(q: Proc, m: AppMessage): void {
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
}
