/**
 * Turns a cluster's recorded client operations into the linearizability checker's history
 * (src/checkers/lincheck, register model) and its verdict into the LinearizabilityReport.
 * Pure: the search runs elsewhere (the piscina pool, under a time budget); this module only maps
 * shapes and says what a truncated history means for the verdict.
 */
import type { HistoryOp as ClusterOp } from '../cluster.js';
import type { CheckResult } from '../../checkers/lincheck/checker.js';
import { describeViolation } from '../../checkers/lincheck/checker.js';
import type { HistoryOp, Value } from '../../checkers/lincheck/history.js';
import { unreachable } from '../../util/assert.js';

export interface ConvertedHistory {
  history: HistoryOp[];
  /** The recorded operation behind each history entry; null for a synthetic one. */
  source: Array<ClusterOp | null>;
  /** Unknown-outcome writes added because the oldest records fell off the history cap. */
  synthetic: number;
}

/** Client name of the synthetic writes that stand for operations lost to the history cap. */
export const truncatedClient = 'before-history-window';

/**
 * Mapping (Jepsen's semantics): write -> write of its value; delete -> delete (the register model
 * makes it a write of "absent", null); read -> read whose output is the value seen, null for not
 * found. ok/fail/info carry over; an info operation has no completion time (it may take effect
 * any time after its invocation, or never).
 *
 * When older records were dropped (`truncated`), a value read in the window may have been written
 * before it. For every key, each distinct value read gets one synthetic unknown-outcome write
 * invoked before the window (a null read gets a delete), so a dropped write can explain the read.
 * That can hide a violation that involved the lost prefix, but never invents one.
 */
export function toLincheckHistory(ops: readonly ClusterOp[], truncated: boolean): ConvertedHistory {
  const history: HistoryOp[] = [];
  const source: Array<ClusterOp | null> = [];
  for (const op of ops) {
    history.push(convertOp(op));
    source.push(op);
  }
  let synthetic = 0;
  if (truncated && ops.length > 0) {
    let start = Infinity;
    for (const o of ops) start = Math.min(start, o.invokeMs - 1);
    const seen = new Map<string, Set<string | null>>();
    for (const op of ops) {
      if (op.kind !== 'read') continue;
      let values = seen.get(op.key);
      if (values === undefined) seen.set(op.key, (values = new Set()));
      values.add(op.result ?? null);
    }
    for (const [key, values] of seen) {
      for (const value of values) {
        history.push({
          client: truncatedClient,
          key,
          kind: value === null ? 'delete' : 'write',
          input: value,
          output: null,
          invokeTime: start,
          completeTime: undefined,
          status: 'info',
        });
        source.push(null);
        synthetic++;
      }
    }
  }
  return { history, source, synthetic };
}

function convertOp(op: ClusterOp): HistoryOp {
  const completeTime = op.outcome === 'info' ? undefined : op.completeMs;
  const base = { client: op.client, key: op.key, invokeTime: op.invokeMs, completeTime, status: op.outcome } as const;
  switch (op.kind) {
    case 'write':
      return { ...base, kind: 'write', input: op.value, output: null };
    case 'delete':
      return { ...base, kind: 'delete', input: null, output: null };
    case 'read':
      return { ...base, kind: 'read', input: null, output: (op.result ?? null) as Value };
    default:
      return unreachable(op.kind);
  }
}

/** An operation as the report shows it: times in epoch milliseconds (sub-millisecond precision). */
export interface ReportedOp {
  client: string;
  node: string | null;
  kind: string;
  key: string;
  /** write: the value written; read: the value seen (null: not found); delete: null. */
  value: string | null;
  outcome: 'ok' | 'fail' | 'info';
  invoke_ms: number;
  /** null when the outcome is unknown (info). */
  complete_ms: number | null;
}

export interface ViolationReport {
  key: string;
  op: ReportedOp;
  message: string;
  /** The history up to the offending completion is linearizable: one legal order of it, its tail in words. */
  linearizable_prefix: string[];
  /** Operations in that legal order, and the register value it leaves. */
  prefix_ops: number;
  prefix_end_ms: number;
  state_after: Value;
}

export interface LinearizabilityReport {
  cluster_id: string;
  /** Recorded client operations in the history. */
  ops: number;
  /** null when the verdict is unknown (time budget or search limit); see note. */
  linearizable: boolean | null;
  verdict: 'linearizable' | 'not-linearizable' | 'unknown';
  /** Operations searched (failed writes and reads with unknown outcome are left out), and keys. */
  checked_ops: number;
  keys: number;
  history_dropped: number;
  elapsed_ms: number;
  violation?: ViolationReport;
  note?: string;
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

function reportOp(op: HistoryOp, src: ClusterOp | null): ReportedOp {
  const value = op.kind === 'read' ? op.output : op.kind === 'write' && !Array.isArray(op.input) ? op.input : null;
  const complete = op.status === 'info' || op.completeTime === undefined ? null : round3(op.completeTime);
  return {
    client: String(op.client),
    node: src?.node ?? null,
    kind: op.kind,
    key: op.key,
    value: value === null ? null : String(value),
    outcome: op.status,
    invoke_ms: round3(op.invokeTime),
    complete_ms: complete,
  };
}

export function linearizabilityReport(
  clusterId: string,
  recorded: number,
  dropped: number,
  converted: ConvertedHistory,
  result: CheckResult,
  elapsedMs: number,
): LinearizabilityReport {
  const notes: string[] = [];
  if (dropped > 0) {
    notes.push(
      `history truncated: the oldest ${dropped} operations fell off the cap; ${converted.synthetic} ` +
        'unknown-outcome writes stand in for them, so a violation involving them can go unseen',
    );
  }
  const base = {
    cluster_id: clusterId,
    ops: recorded,
    checked_ops: result.stats.ops,
    keys: result.stats.partitions,
    history_dropped: dropped,
    elapsed_ms: Math.round(elapsedMs),
  };
  const withNote = <T extends object>(r: T): T & { note?: string } =>
    notes.length > 0 ? { ...r, note: notes.join('; ') } : r;
  switch (result.verdict) {
    case 'linearizable':
      if (recorded === 0) notes.push('no client operations recorded yet: an empty history is trivially linearizable');
      return withNote({ ...base, linearizable: true, verdict: 'linearizable' as const });
    case 'not-linearizable': {
      const v = result.violation;
      const lines = describeViolation(converted.history, v);
      const violation: ViolationReport = {
        key: v.key,
        op: reportOp(v.op, converted.source[v.opIndex] ?? null),
        message: v.message,
        linearizable_prefix: lines.slice(1),
        prefix_ops: v.linearization.length,
        prefix_end_ms: round3(v.prefixEndTime),
        state_after: v.stateAfter as Value,
      };
      return withNote({ ...base, linearizable: false, verdict: 'not-linearizable' as const, violation });
    }
    case 'unknown': {
      const why =
        result.reason === 'timeout'
          ? 'verdict unknown: the time budget ran out'
          : result.reason === 'limit'
            ? 'verdict unknown: the search hit its limit'
            : 'verdict unknown: the history could not be checked';
      notes.unshift(`${why} (${result.note})`);
      return withNote({ ...base, linearizable: null, verdict: 'unknown' as const });
    }
    default:
      return unreachable(result);
  }
}
