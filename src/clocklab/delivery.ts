/**
 * The causal-delivery rules a receiver applies to an arriving message: deliver it, hold it back
 * (and why), or drop it because its hold-back queue is full; which held message may go next; and
 * the RST/BSS bookkeeping of a delivery or a loss. causal.ts stays the rule book these read; the
 * lab does the delivering itself (clocks, events), so nothing here emits or touches the network.
 */
import { bssBlocker, bssOnDeliver, rstBlocker, rstOnDeliver, settle, type Blocker } from './causal.js';
import { holdBackDepthMax } from './limits.js';
import type { AppMessage, Proc } from './process.js';

export type DeliveryMode = 'causal' | 'immediate';

/** RST for every message, and BSS as well for a broadcast; undefined when `m` may be delivered at `q`. */
export function blocker(q: Proc, m: AppMessage): Blocker | undefined {
  return rstBlocker(q.deliv, m.stm, q.slot, m.from) ?? (m.bss ? bssBlocker(q.bcastSettled, m.bss, m.from) : undefined);
}

export type ArrivalDecision =
  /** Deliver now; `drain` says whether held messages may follow (causal mode only). */
  | { action: 'deliver'; drain: boolean }
  | { action: 'hold'; blocker: Blocker }
  | { action: 'drop'; reason: 'holdback_full' };

/** What `q` does with `m` on arrival: immediate mode delivers everything; causal mode waits for predecessors. */
export function arrivalDecision(q: Proc, m: AppMessage, mode: DeliveryMode): ArrivalDecision {
  if (mode === 'immediate') return { action: 'deliver', drain: false };
  const b = blocker(q, m);
  if (!b) return { action: 'deliver', drain: true };
  if (q.holdBack.length >= holdBackDepthMax) return { action: 'drop', reason: 'holdback_full' };
  return { action: 'hold', blocker: b };
}

/** Takes the first held message that may be delivered now (arrival order), or undefined. */
export function takeDeliverable(q: Proc): AppMessage | undefined {
  for (let i = 0; i < q.holdBack.length; i++) {
    const m = q.holdBack[i] as AppMessage;
    if (blocker(q, m)) continue;
    q.holdBack.splice(i, 1);
    return m;
  }
  return undefined;
}

/** The causal counters move for a delivery of `m` at `q` (RST DELIV and SENT; BSS for a broadcast). */
export function recordDelivery(q: Proc, m: AppMessage): void {
  rstOnDeliver(q.deliv, q.delivAhead, q.sent, m.stm, q.slot, m.from, m.seq);
  if (m.bss) bssOnDeliver(q.bcast, q.bcastSettled, q.bcastAhead, m.bss, m.from);
}

/**
 * The lab is the oracle that knows `m` is gone: it is settled at the receiver, so its causal
 * successors do not wait forever (a real system would retransmit instead).
 */
export function settleLost(q: Proc, m: AppMessage): void {
  settle(q.deliv, q.delivAhead, m.from, m.seq);
  if (m.bss) settle(q.bcastSettled, q.bcastAhead, m.from, m.bss[m.from] ?? 0);
}
