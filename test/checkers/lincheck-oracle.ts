/**
 * Linearizability by its definition, for tiny histories only (test code): a history is
 * linearizable when, for some subset of its unknown-outcome (info) operations, some order of its
 * completed (ok) operations plus that subset respects real-time order and is legal for the
 * model, replayed over one state per key. Failed operations never happened and are left out.
 * Exhaustive and exponential; it shares nothing with the checker but the model's step function,
 * and it does not assume P-compositionality (all keys are ordered together).
 */
import type { HistoryOp, ModelState } from '../../src/checkers/lincheck/history.js';
import type { Model } from '../../src/checkers/lincheck/models.js';

/** Histories past this many (non-failed) operations are refused: the oracle would take too long. */
export const oracleOpsMax = 9;

/** True when `a` completed before `b` was invoked (ties are concurrent). */
function precedes(a: HistoryOp, b: HistoryOp): boolean {
  return a.status === 'ok' && (a.completeTime as number) < b.invokeTime;
}

export function linearizableByBruteForce(history: readonly HistoryOp[], model: Model): boolean {
  const ops = history.filter((o) => o.status !== 'fail');
  if (ops.length > oracleOpsMax)
    throw new Error(`the oracle takes at most ${oracleOpsMax} operations, not ${ops.length}`);
  const ok = ops.filter((o) => o.status === 'ok');
  const info = ops.filter((o) => o.status === 'info');
  for (let mask = 0; mask < 1 << info.length; mask++) {
    const chosen = [...ok, ...info.filter((_, i) => (mask & (1 << i)) !== 0)];
    if (someOrder(chosen, model)) return true;
  }
  return false;
}

/** Tries every permutation of `ops` that respects real-time order; true when one is legal. */
function someOrder(ops: readonly HistoryOp[], model: Model): boolean {
  const placed = ops.map(() => false);
  const states = new Map<string, ModelState>();
  const place = (count: number): boolean => {
    if (count === ops.length) return true;
    for (let i = 0; i < ops.length; i++) {
      if (placed[i]) continue;
      const op = ops[i] as HistoryOp;
      // Real-time order: nothing still unplaced may have completed before this op began.
      if (ops.some((other, j) => !placed[j] && j !== i && precedes(other, op))) continue;
      const before = states.has(op.key) ? (states.get(op.key) as ModelState) : model.init();
      const after = model.step(before, op);
      if (after === undefined) continue;
      const had = states.has(op.key);
      states.set(op.key, after);
      placed[i] = true;
      if (place(count + 1)) return true;
      placed[i] = false;
      if (had) states.set(op.key, before);
      else states.delete(op.key);
    }
    return false;
  };
  return place(0);
}

/**
 * What is wrong with a claimed legal order (indices into `history`), if anything: an op of
 * another key, a failed op, an illegal step, or a pair out of real-time order.
 */
export function orderProblem(
  history: readonly HistoryOp[],
  model: Model,
  order: readonly number[],
  key: string,
): string | undefined {
  let state: ModelState | undefined = model.init();
  for (let k = 0; k < order.length; k++) {
    const a = history[order[k] as number] as HistoryOp;
    if (a.key !== key) return `op ${order[k]} is on key ${a.key}, not ${key}`;
    if (a.status === 'fail') return `op ${order[k]} failed and cannot be in a linearization`;
    state = model.step(state, a);
    if (state === undefined) return `op ${order[k]} is illegal where it is placed`;
    for (let m = k + 1; m < order.length; m++) {
      if (precedes(history[order[m] as number] as HistoryOp, a))
        return `ops ${order[k]} and ${order[m]} are out of real-time order`;
    }
  }
  return undefined;
}
