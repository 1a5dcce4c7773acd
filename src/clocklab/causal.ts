/**
 * Causal-delivery conditions for the hold-back queue: Birman–Schiper–Stephenson for broadcasts and
 * Raynal–Schiper–Toueg (per-destination send-count matrices) for every message, unicast included.
 * Pure predicates over the receiver's counters and the message's piggybacked metadata; the queue
 * itself and the counters live with the process in the lab.
 */
import type { Matrix, Vector } from './clocks.js';

/**
 * Why a message cannot be delivered yet: `from` has sent `need` messages the receiver must see first, it has
 * seen `have`.
 */
export interface Blocker {
  rule: 'rst' | 'bss';
  /** Slot of the process whose earlier messages are missing. */
  from: number;
  need: number;
  have: number;
}

/**
 * Raynal–Schiper–Toueg (1991): m from j to i carries ST_m, j's SENT matrix right after the send
 * (SENT[k][l] = messages k is known to have sent to l; for a broadcast every copy is counted, so a
 * receiver of one copy learns of the copies sent to the others). i may deliver m when
 * DELIV_i[k] >= ST_m[k][i] for every k != j, and DELIV_i[j] >= ST_m[j][i] - 1 (m itself excluded;
 * this is FIFO on the channel): every message sent to i that causally precedes m is delivered.
 * Returns the first blocking entry, or undefined.
 */
export function rstBlocker(deliv: Vector, stm: Matrix, self: number, sender: number): Blocker | undefined {
  for (let k = 0; k < stm.length; k++) {
    let need = stm[k]?.[self] ?? 0;
    if (k === sender) need--;
    if (need <= 0) continue;
    const have = deliv[k] ?? 0;
    if (have < need) return { rule: 'rst', from: k, need, have };
  }
  return undefined;
}

/**
 * A per-source counter that is the contiguous prefix of settled message numbers (1..n all delivered
 * or known lost). Under causal delivery with no loss this is exactly RST's DELIV count and BSS's
 * delivered-broadcast count; the prefix form lets a message the network lost stop blocking its
 * causal successors (the lab acts as the oracle that reports the loss) and keeps the counters right
 * after a period of immediate, unordered delivery.
 */
export function settle(count: Vector, ahead: Array<Set<number> | undefined>, k: number, n: number): void {
  const c = count[k] ?? 0;
  if (n <= c) return;
  if (n > c + 1) {
    (ahead[k] ??= new Set()).add(n);
    return;
  }
  let next = n;
  const set = ahead[k];
  while (set !== undefined && set.delete(next + 1)) next++;
  count[k] = next;
  for (let l = 0; l < count.length; l++) if (count[l] === undefined) count[l] = 0;
}

/**
 * RST delivery update: m (the `seq`-th message from j to i) is settled in DELIV_i[j] and
 * SENT_i = max(SENT_i, ST_m) (ST_m already counts m and its broadcast siblings).
 */
export function rstOnDeliver(
  deliv: Vector,
  ahead: Array<Set<number> | undefined>,
  sent: Matrix,
  stm: Matrix,
  self: number,
  sender: number,
  seq: number,
): void {
  settle(deliv, ahead, sender, seq);
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
  if (seq > (row[self] ?? 0)) row[self] = seq;
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

/**
 * BSS delivery update. `seen` is the broadcast vector the process stamps its own broadcasts with:
 * the textbook VC_i = max(VC_i, ts), i.e. the highest broadcast of each process in its causal past.
 * `settled` is what the condition reads: the contiguous prefix of broadcasts delivered or known
 * lost, so a lost broadcast stops blocking without entering anyone's causal past.
 */
export function bssOnDeliver(
  seen: Vector,
  settled: Vector,
  ahead: Array<Set<number> | undefined>,
  ts: Vector,
  sender: number,
): void {
  for (let k = 0; k < ts.length; k++) {
    const x = ts[k] ?? 0;
    if (x > (seen[k] ?? 0)) seen[k] = x;
    else if (seen[k] === undefined) seen[k] = 0;
  }
  settle(settled, ahead, sender, ts[sender] ?? 0);
}
