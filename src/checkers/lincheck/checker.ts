/**
 * The linearizability checker: the Wing–Gong–Lowe depth-first search over a history's call and
 * return events, with Lowe's memoization of (linearized set, model state) configurations, run on
 * each key's part of the history separately (P-compositionality). It is a pure function of the
 * history, the model and an injected clock; it knows no file formats, threads or wall time.
 *
 * Semantics (Jepsen's): a `fail` operation never happened and is dropped; an `info` operation may
 * take effect at any point after its invocation, or never; an `ok` operation took effect at some
 * point between its invocation and its completion. Events at equal times are taken as concurrent.
 */
import { describeInterval, describeOp, isCasInput, type History, type HistoryOp, type ModelState } from './history.js';
import type { Model } from './models.js';
import { showValue } from './value.js';
import { KeySearch, type Frontier } from './search.js';

/** A time budget: the search gives up with verdict `unknown` once `now()` passes `deadline`. */
export interface Budget {
  now(): number;
  readonly deadline: number;
}

export interface CheckOptions {
  readonly budget?: Budget | undefined;
  /**
   * Cap on memoized configurations over all keys; past it the verdict is `unknown` with reason
   * `limit`. Each costs about 24 bytes plus 4 per 32 operations of its key, so the default
   * (4 million) bounds the memo near 150 MB for keys of a few hundred operations.
   */
  readonly configurationsMax?: number | undefined;
  /**
   * How much of a violation to establish. `minimal` (the default): the longest linearizable
   * prefix is confirmed (Violation.minimal), which may take further searches. `verdict`: only
   * the verdict matters (the CLI without --explain), so the violation is the search's
   * own frontier, not confirmed minimal (`minimal: false` unless it is exact anyway).
   */
  readonly violation?: 'minimal' | 'verdict' | undefined;
}

export const defaultConfigurationsMax = 4_000_000;

/**
 * The minimal explanation of a violation: the history up to (not including) the completion of
 * `op` is linearizable, and the history including that completion is not. `linearization` is one
 * legal order of the operations taken to have happened before that point (indices into the
 * checked history), and `stateAfter` the model state it leaves; `op` cannot be placed after any
 * such order.
 */
export interface Violation {
  readonly key: string;
  readonly opIndex: number;
  readonly op: HistoryOp;
  readonly prefixEndTime: number;
  readonly linearization: readonly number[];
  readonly stateAfter: ModelState;
  /**
   * True when the prefix is confirmed the longest linearizable one. False only when the time
   * budget ran out while confirming it, or the caller asked for the verdict alone
   * (CheckOptions.violation); the verdict itself is certain either way.
   */
  readonly minimal: boolean;
  readonly message: string;
}

export interface CheckStats {
  /** Operations searched over (fail ops and unknown-outcome reads are dropped first). */
  readonly ops: number;
  /** Keys checked on their own. */
  readonly partitions: number;
  /** Distinct (linearized set, state) configurations memoized. */
  readonly configurations: number;
  /** Times the search undid a step. */
  readonly backtracks: number;
}

export type CheckResult =
  | { readonly verdict: 'linearizable'; readonly stats: CheckStats }
  | { readonly verdict: 'not-linearizable'; readonly violation: Violation; readonly stats: CheckStats }
  | {
      readonly verdict: 'unknown';
      readonly reason: 'timeout' | 'limit' | 'invalid-history';
      readonly note: string;
      readonly stats: CheckStats;
    };

/** Problems that make a history uncheckable against `model`; empty when it is well formed. */
export function validateHistory(history: History, model: Model): string[] {
  const problems: string[] = [];
  for (let i = 0; i < history.length && problems.length < 10; i++) {
    const op = history[i] as HistoryOp;
    const where = `operation ${i} (client ${String(op.client)})`;
    if (!model.kinds.includes(op.kind)) {
      problems.push(
        `${where}: the ${model.name} model has no ${op.kind} operation (it knows ${model.kinds.join(', ')})`,
      );
    }
    if (!Number.isFinite(op.invokeTime)) problems.push(`${where}: invokeTime must be a finite number`);
    if (op.status === 'ok') {
      const end = op.completeTime;
      if (end === undefined || !Number.isFinite(end)) {
        problems.push(`${where}: an ok operation needs a finite completeTime`);
      } else if (end < op.invokeTime) {
        problems.push(`${where}: completeTime ${end} is before invokeTime ${op.invokeTime}`);
      }
    }
    if (op.kind === 'cas' && !isCasInput(op.input)) {
      problems.push(`${where}: a cas takes [expected, new] as input`);
    }
  }
  return problems;
}

/** Splits a history into its keys' parts (indices into `history`), keys in sorted order. */
export function partitionByKey(history: History): Array<{ key: string; indices: number[] }> {
  const byKey = new Map<string, number[]>();
  for (let i = 0; i < history.length; i++) {
    const key = (history[i] as HistoryOp).key;
    let part = byKey.get(key);
    if (part === undefined) byKey.set(key, (part = []));
    part.push(i);
  }
  return [...byKey.keys()].sort().map((key) => ({ key, indices: byKey.get(key) as number[] }));
}

/** Loop steps a key's search runs before the next key gets its turn (and the budget is read). */
const SLICE_STEPS = 1 << 12;

/**
 * Checks `history` against `model`, one key at a time (P-compositionality: a history of
 * independent keys is linearizable exactly when each key's part is). The keys' searches take
 * turns in fixed slices (round robin), so a violation in any key ends the check as soon as it
 * is found, as a parallel checker would, yet the run stays deterministic.
 */
export function checkHistory(history: History, model: Model, options: CheckOptions = {}): CheckResult {
  const problems = validateHistory(history, model);
  const stats = { ops: 0, partitions: 0, configurations: 0, backtracks: 0 };
  if (problems.length > 0) {
    return { verdict: 'unknown', reason: 'invalid-history', note: problems.join('; '), stats };
  }
  const jobs: Job[] = [];
  for (const { key, indices } of partitionByKey(history)) {
    // Jepsen's rules: a failed op never happened; an unknown-outcome op that cannot change the
    // state (a read) constrains nothing. Both are dropped before the search.
    const ops: HistoryOp[] = [];
    const historyIndex: number[] = [];
    for (const i of indices) {
      const op = history[i] as HistoryOp;
      if (op.status === 'fail' || (op.status === 'info' && model.readOnly(op))) continue;
      ops.push(op);
      historyIndex.push(i);
    }
    stats.ops += ops.length;
    stats.partitions++;
    if (sequentiallyLegal(ops, model)) continue;
    jobs.push({ key, ops, historyIndex, search: undefined, configurations: 0, backtracks: 0 });
  }
  const budget = options.budget;
  const configurationsMax = options.configurationsMax ?? defaultConfigurationsMax;
  // Keys still being searched; a search is built on its key's first turn and dropped once the key
  // is decided, so memory holds only the undecided keys' memos.
  const running = jobs;
  const decided = (): string =>
    `${stats.partitions - running.length} of ${stats.partitions} keys decided (linearizable)`;
  let liveConfigurations = 0;
  let cursor = 0;
  while (running.length > 0) {
    const job = running[cursor] as Job;
    job.search ??= new KeySearch(job.ops, model);
    const search = job.search;
    const status = search.run(SLICE_STEPS);
    stats.configurations += search.configurations - job.configurations;
    stats.backtracks += search.backtracks - job.backtracks;
    liveConfigurations += search.configurations - job.configurations;
    job.configurations = search.configurations;
    job.backtracks = search.backtracks;
    if (status === 'violation') {
      if (options.violation === 'verdict') {
        const found = search.frontier();
        return { verdict: 'not-linearizable', violation: toViolation(job, found, found.exact), stats };
      }
      const { frontier, minimal } = longestPrefix(
        { ...job, search },
        search.frontier(),
        model,
        budget,
        configurationsMax,
      );
      return { verdict: 'not-linearizable', violation: toViolation(job, frontier, minimal), stats };
    }
    if (status === 'linearizable') {
      liveConfigurations -= job.configurations;
      job.search = undefined;
      running[cursor] = running[running.length - 1] as Job; // order of turns does not matter
      running.pop();
    } else {
      cursor++;
    }
    if (cursor >= running.length) cursor = 0;
    if (running.length === 0) break;
    if (budget !== undefined && budget.now() > budget.deadline) {
      return { verdict: 'unknown', reason: 'timeout', note: `the time budget ran out with ${decided()}`, stats };
    }
    if (liveConfigurations > configurationsMax) {
      const note = `the search memoized over ${configurationsMax} configurations with ${decided()}`;
      return { verdict: 'unknown', reason: 'limit', note, stats };
    }
  }
  return { verdict: 'linearizable', stats };
}

/**
 * Fast path for a key whose operations never overlap and all completed (common in the
 * simulator: many keys, a few ops each): its only linearization is the order of the ops, so it
 * is linearizable exactly when the model accepts them in that order. False means "search it".
 */
function sequentiallyLegal(ops: readonly HistoryOp[], model: Model): boolean {
  let previousEnd = -Infinity;
  let state: ModelState | undefined = model.init();
  for (const op of ops) {
    // In history order, each op must begin after the previous one completed (ties overlap).
    if (op.status !== 'ok' || op.invokeTime <= previousEnd) return false;
    state = model.step(state, op);
    if (state === undefined) return false;
    previousEnd = op.completeTime as number;
  }
  return true;
}

interface KeyJob {
  readonly key: string;
  readonly search: KeySearch;
  readonly ops: HistoryOp[];
  readonly historyIndex: number[];
}

interface Job {
  readonly key: string;
  readonly ops: HistoryOp[];
  readonly historyIndex: number[];
  search: KeySearch | undefined;
  /** What this key's search had counted at its last turn. */
  configurations: number;
  backtracks: number;
}

/**
 * The longest linearizable prefix of a failing key's history. The search's own frontier is exact
 * unless the model's growth pruning cut configurations short; then it is a lower bound, and the
 * prefixes that end just before each later completion are checked (a prefix leaves every op it
 * has not seen complete pending, i.e. of unknown outcome) until the first that is not
 * linearizable: one check when the bound was already right, a binary search otherwise.
 */
function longestPrefix(
  job: KeyJob,
  found: Frontier,
  model: Model,
  budget: Budget | undefined,
  configurationsMax: number,
): { frontier: Frontier; minimal: boolean } {
  if (found.exact) return { frontier: found, minimal: true };
  const search = job.search;
  const returns: Array<{ node: number; op: number }> = [];
  for (let op = 0; op < job.ops.length; op++) {
    const node = search.returnNodeOf(op);
    if (node >= 0) returns.push({ node, op });
  }
  returns.sort((a, b) => a.node - b.node);

  /** Checks the prefix before the t-th completion; its linearization when it is linearizable. */
  const probe = (t: number): Frontier | 'violation' | 'gave-up' => {
    const cut = (returns[t] as { node: number }).node;
    const ops: HistoryOp[] = [];
    const local: number[] = [];
    for (let op = 0; op < job.ops.length; op++) {
      const call = search.callNodeOf(op);
      if (call > cut) continue;
      const o = job.ops[op] as HistoryOp;
      const ret = search.returnNodeOf(op);
      // Event positions as times keep the original order, ties included.
      if (o.status === 'ok' && ret < cut) {
        ops.push({ ...o, invokeTime: call, completeTime: ret });
      } else if (!model.readOnly(o)) {
        ops.push({ ...o, status: 'info', output: null, invokeTime: call, completeTime: undefined });
      } else {
        continue;
      }
      local.push(op);
    }
    const prefix = new KeySearch(ops, model);
    for (;;) {
      const status = prefix.run(SLICE_STEPS);
      if (status === 'violation') return 'violation';
      if (status === 'linearizable') {
        const { linearization, state } = prefix.witness();
        return {
          culprit: (returns[t] as { op: number }).op,
          linearization: linearization.map((i) => local[i] as number),
          state,
          exact: true,
        };
      }
      if ((budget !== undefined && budget.now() > budget.deadline) || prefix.configurations > configurationsMax)
        return 'gave-up';
    }
  };

  // Invariant: the prefix before completion `lo` is linearizable (witness `best`), and the one
  // before completion `hi` (or the whole history, hi = returns.length) is not.
  let lo = returns.findIndex((r) => r.op === found.culprit);
  let best: Frontier = found;
  let hi = returns.length;
  let next = lo + 1; // first confirm the bound, then bisect
  while (hi - lo > 1) {
    const outcome = probe(next);
    if (outcome === 'gave-up') return { frontier: best, minimal: false };
    if (outcome === 'violation') {
      hi = next;
    } else {
      lo = next;
      best = outcome;
    }
    next = (lo + hi) >>> 1;
  }
  return { frontier: { ...best, culprit: (returns[lo] as { op: number }).op }, minimal: true };
}

function toViolation(job: Job, frontier: Frontier, minimal: boolean): Violation {
  const op = job.ops[frontier.culprit] as HistoryOp;
  const prefixEndTime = op.completeTime as number;
  const linearization = frontier.linearization.map((local) => job.historyIndex[local] as number);
  return {
    key: job.key,
    opIndex: job.historyIndex[frontier.culprit] as number,
    op,
    prefixEndTime,
    linearization,
    stateAfter: frontier.state,
    minimal,
    message: explain(op, prefixEndTime, linearization.length, frontier.state, minimal),
  };
}

function explain(op: HistoryOp, end: number, placed: number, stateAfter: ModelState, minimal: boolean): string {
  const state = showValue(stateAfter);
  const caveat = minimal
    ? ''
    : ' (It was not confirmed to be the earliest such operation: the time budget ran out, ' +
      'or only the verdict was asked for.)';
  return (
    `${describeOp(op)} ${describeInterval(op)} cannot be linearized. ` +
    `The history up to its completion at ${end} is linearizable ` +
    `(for example ${placed} operations in a legal order, leaving the state ${state}), ` +
    `but no legal order of the operations before that point can be followed by this one.${caveat}`
  );
}

/** A violation in a few lines: the message, then the tail of the linearizable prefix. */
export function describeViolation(history: History, violation: Violation, tail = 5): string[] {
  const lines = [violation.message];
  const lin = violation.linearization;
  const from = Math.max(0, lin.length - tail);
  if (from > 0) lines.push(`  ... ${from} earlier operations`);
  for (let k = from; k < lin.length; k++) {
    const op = history[lin[k] as number] as HistoryOp;
    lines.push(`  ${k + 1}. ${describeOp(op)} ${describeInterval(op)}`);
  }
  lines.push(`  then: ${describeOp(violation.op)} ${describeInterval(violation.op)} is impossible`);
  return lines;
}
