/**
 * Causal-delivery conditions for the hold-back queue: Birman–Schiper–Stephenson for broadcasts and
 * Raynal–Schiper–Toueg (per-destination send-count matrices) for every message, unicast included.
 * Pure predicates over the receiver's counters and the message's piggybacked metadata; the queue
 * itself and the counters live with the process in the lab.
 */
import type { Matrix, Vector } from './clocks.js';

/** Why a message cannot be delivered yet: `from` has sent `need` messages the receiver must see first, it has seen `have`. */
export interface Blocker {
  rule: 'rst' | 'bss';
  /** Slot of the process whose earlier messages are missing. */
  from: number;
  need: number;
  have: number;
}

/**
 * Raynal–Schiper–Toueg (1991): m from j to i carries ST_m, j's SENT matrix before the send
 * (SENT[k][l] = messages k is known to have sent to l). i may deliver m when, for every k,
 * DELIV_i[k] >= ST_m[k][i]: every message sent to i that causally precedes m is delivered. For
 * k = j this is FIFO on the channel. Returns the first blocking entry, or undefined.
 */
export function rstBlocker(deliv: Vector, stm: Matrix, self: number): Blocker | undefined {
  for (let k = 0; k < stm.length; k++) {
    const need = stm[k]?.[self] ?? 0;
    if (need === 0) continue;
    const have = deliv[k] ?? 0;
    if (have < need) return { rule: 'rst', from: k, need, have };
  }
  return undefined;
}

/**
 * RST delivery update: DELIV_i[j] += 1, SENT_i = max(SENT_i, ST_m), then SENT_i[j][i] counts m
 * itself (ST_m was taken before j counted m).
 */
export function rstOnDeliver(deliv: Vector, sent: Matrix, stm: Matrix, self: number, sender: number): void {
  deliv[sender] = (deliv[sender] ?? 0) + 1;
  for (let k = 0; k < stm.length; k++) {
    const src = stm[k];
    if (!src) continue;
    const dst = (sent[k] ??= []);
    for (let l = 0; l < src.length; l++) {
      const x = src[l] ?? 0;
      if (x > (dst[l] ?? 0)) dst[l] = x;
    }
  }
  const row = (sent[sender] ??= []);
  const mine = (stm[sender]?.[self] ?? 0) + 1;
  if (mine > (row[self] ?? 0)) row[self] = mine;
  for (let l = 0; l < row.length; l++) if (row[l] === undefined) row[l] = 0;
}

/**
 * Birman–Schiper–Stephenson (1991): a broadcast m from j stamped ts (j's broadcast-delivery vector
 * with its own entry already counting m) is delivered at i when VC_i[j] >= ts[j] - 1 (every earlier
 * broadcast of j delivered) and VC_i[k] >= ts[k] for k != j (every broadcast j had delivered
 * before sending m delivered here too). The textbook states VC_i[j] = ts[j] - 1; `>=` is the same
 * under causal delivery and stays live after a period of immediate (unordered) delivery.
 */
export function bssBlocker(vc: Vector, ts: Vector, sender: number): Blocker | undefined {
  const needOwn = (ts[sender] ?? 0) - 1;
  const haveOwn = vc[sender] ?? 0;
  if (haveOwn < needOwn) return { rule: 'bss', from: sender, need: needOwn, have: haveOwn };
  for (let k = 0; k < ts.length; k++) {
    if (k === sender) continue;
    const need = ts[k] ?? 0;
    const have = vc[k] ?? 0;
    if (have < need) return { rule: 'bss', from: k, need, have };
  }
  return undefined;
}

/** BSS delivery update: VC_i[k] = max(VC_i[k], ts[k]) for every k. */
export function bssOnDeliver(vc: Vector, ts: Vector): void {
  for (let k = 0; k < ts.length; k++) {
    const x = ts[k] ?? 0;
    if (x > (vc[k] ?? 0)) vc[k] = x;
    else if (vc[k] === undefined) vc[k] = 0;
  }
}
