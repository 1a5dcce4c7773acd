/**
 * The history view's pure rules: the wire shapes of GET .../history, .../linearizable and
 * .../convergence, the incremental merge of history pages, the lane layout and time scale, the
 * words each operation and fault carries, and the small witness of a linearizability violation
 * with its reason in words. No DOM, no fetch, no Preact: history.tsx draws, this decides.
 */

// ---- wire shapes (src/replication/history.ts, server.ts, checkers/*.ts) ----

export interface HistoryRecordWire {
  index: number;
  process: string;
  f: 'write' | 'read' | 'delete';
  key: string;
  /** write: the value written; read: the value seen (null: not found); delete: null. */
  value: string | null;
  /** ok, fail, or info (outcome unknown). */
  type: 'ok' | 'fail' | 'info';
  invoke_ms: number;
  complete_ms: number;
  node: string;
}

export interface FaultWire {
  index: number;
  kind: string;
  node?: string;
  from?: string;
  to?: string;
  partition_id?: string;
  group_a?: string[];
  group_b?: string[];
  value?: number;
  start_ms: number;
  end_ms: number | null;
}

export interface HistoryPageWire {
  cluster_id: string;
  from_index: number;
  next_since: number;
  total: number;
  ops_dropped: number;
  ops: HistoryRecordWire[];
  faults: FaultWire[];
  faults_dropped: number;
}

export interface ReportedOpWire {
  client: string;
  node: string | null;
  kind: string;
  key: string;
  value: string | null;
  outcome: 'ok' | 'fail' | 'info';
  invoke_ms: number;
  complete_ms: number | null;
}

export interface LinearizabilityWire {
  linearizable: boolean | null;
  verdict: 'linearizable' | 'not-linearizable' | 'unknown';
  ops: number;
  checked_ops: number;
  keys: number;
  violation?: { key: string; op: ReportedOpWire; message: string; linearizable_prefix: string[] };
  note?: string;
}

export interface ConvergenceWire {
  converged: boolean;
  keys: number;
  diverged: Array<{ key: string; states: Record<string, string>; values: Record<string, string | null> }>;
  diverged_total: number;
  replicas: string[];
  note?: string;
}

// ---- the page's copy of a cluster's history ----

/** Operations the page keeps per cluster; older ones are forgotten (the server keeps its own cap). */
export const historyOpsKeptMax = 10_000;

export interface HistoryBuffer {
  /** Oldest first, by index; no index twice. */
  readonly ops: readonly HistoryRecordWire[];
  readonly faults: readonly FaultWire[];
  /** The `since` of the next page to ask for. */
  readonly nextSince: number;
  /** Operations the server has recorded in all. */
  readonly total: number;
  /** Operations that fell off the server's history or this buffer (never shown). */
  readonly missed: number;
}

export const emptyHistory: HistoryBuffer = { ops: [], faults: [], nextSince: 0, total: 0, missed: 0 };

/**
 * A page of GET .../history?since=nextSince merged into the buffer: new operations appended
 * (an operation seen already is not added twice, whatever order pages arrive in), the fault list
 * replaced (the server sends every interval it holds, open ones updated), the oldest past `keepMax`
 * forgotten. Returns the same buffer when the page brings nothing new, so nothing is redrawn.
 */
export function mergePage(b: HistoryBuffer, page: HistoryPageWire, keepMax = historyOpsKeptMax): HistoryBuffer {
  const last = b.ops.length > 0 ? (b.ops[b.ops.length - 1] as HistoryRecordWire).index : -1;
  const fresh = page.ops.filter((o) => o.index > last);
  const faultsSame = sameFaults(b.faults, page.faults);
  const nextSince = Math.max(b.nextSince, page.next_since);
  if (fresh.length === 0 && faultsSame && nextSince === b.nextSince && page.total === b.total) return b;
  let ops = fresh.length === 0 ? b.ops : [...b.ops, ...fresh];
  if (ops.length > keepMax) ops = ops.slice(ops.length - keepMax);
  const firstHeld = ops.length > 0 ? (ops[0] as HistoryRecordWire).index : nextSince;
  return {
    ops,
    faults: faultsSame ? b.faults : page.faults,
    nextSince,
    total: Math.max(b.total, page.total),
    missed: Math.max(page.ops_dropped, firstHeld),
  };
}

function sameFaults(a: readonly FaultWire[], b: readonly FaultWire[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as FaultWire;
    const y = b[i] as FaultWire;
    if (x.index !== y.index || x.end_ms !== y.end_ms) return false;
  }
  return true;
}

// ---- words ----

const show = (v: string | null): string => (v === null ? 'not found' : v);

/** ok, fail, or "unknown" for an indeterminate outcome (Jepsen's info). */
export const outcomeWord = (t: HistoryRecordWire['type']): string => (t === 'info' ? 'unknown' : t);

/** Short text drawn in the bar: `w x=1`, `r x=1`, `d x`. */
export function opShortText(o: HistoryRecordWire): string {
  if (o.f === 'delete') return `d ${o.key}`;
  return `${o.f === 'write' ? 'w' : 'r'} ${o.key}=${show(o.value)}`;
}

/** The operation in words, as its label: `c1 write x=1 ok on n2`. */
export function opText(o: HistoryRecordWire): string {
  const what = o.f === 'delete' ? `delete ${o.key}` : `${o.f} ${o.key}=${show(o.value)}`;
  return `${o.process} ${what} ${outcomeWord(o.type)} on ${o.node}`;
}

/** The fault in words: `pause n2`, `partition p1 n1 n2 | n3`, `latency n1>n2 40 ms`, ... */
export function faultText(f: FaultWire): string {
  switch (f.kind) {
    case 'pause':
    case 'crash':
      return `${f.kind} ${f.node ?? '?'}`;
    case 'stall':
      return `stall ${f.node ?? '?'} ${f.value ?? '?'} ms`;
    case 'clock_skew':
      return `skew ${f.node ?? '?'} ${(f.value ?? 0) >= 0 ? '+' : ''}${f.value ?? 0} ms`;
    case 'partition':
      const sides = `${(f.group_a ?? []).join(' ')} | ${(f.group_b ?? []).join(' ')}`;
      return `partition ${f.partition_id ?? ''} ${sides}`.replace(/\s+/g, ' ');
    case 'latency':
      return `latency ${f.from ?? '?'}>${f.to ?? '?'} ${f.value ?? '?'} ms`;
    case 'drop':
      return `drop ${f.from ?? '?'}>${f.to ?? '?'} ${Math.round((f.value ?? 0) * 100)}%`;
    case 'heal':
      return 'heal';
    default:
      return f.kind;
  }
}

// ---- layout ----

/** One lane per client (in order of first appearance), the fault lane apart. */
export function clientLanes(ops: readonly HistoryRecordWire[]): string[] {
  const seen = new Set<string>();
  for (const o of ops) seen.add(o.process);
  return [...seen];
}

/** The time the history spans: [first invocation or fault, last completion or fault]; null when empty. */
export function timeExtent(b: HistoryBuffer, nowMs?: number): { t0: number; t1: number } | null {
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const o of b.ops) {
    t0 = Math.min(t0, o.invoke_ms);
    t1 = Math.max(t1, o.complete_ms);
  }
  for (const f of b.faults) {
    t0 = Math.min(t0, f.start_ms);
    t1 = Math.max(t1, f.end_ms ?? nowMs ?? f.start_ms);
  }
  return t0 === Infinity ? null : { t0, t1: Math.max(t1, t0 + 1) };
}

export interface TimeWindow {
  start: number;
  end: number;
}

/** x (in drawing units over `width`) of time `t` in the window. */
export const xOf = (t: number, w: TimeWindow, width: number): number => ((t - w.start) / (w.end - w.start)) * width;

/**
 * The operations that overlap the window (virtualisation: only those are drawn), at most `max`,
 * the newest kept when there are more; `hidden` counts those left out.
 */
export function visibleOps(
  ops: readonly HistoryRecordWire[],
  w: TimeWindow,
  max: number,
): { shown: HistoryRecordWire[]; hidden: number } {
  const all = ops.filter((o) => o.complete_ms >= w.start && o.invoke_ms <= w.end);
  return all.length <= max
    ? { shown: all, hidden: 0 }
    : { shown: all.slice(all.length - max), hidden: all.length - max };
}

/** Fault intervals overlapping the window, each given a row so overlapping ones do not cover each other. */
export function faultRows(
  faults: readonly FaultWire[],
  w: TimeWindow,
  nowMs: number,
): Array<{ fault: FaultWire; row: number; end: number }> {
  const rowsEnd: number[] = [];
  const out: Array<{ fault: FaultWire; row: number; end: number }> = [];
  const sorted = [...faults].sort((a, b) => a.start_ms - b.start_ms);
  for (const f of sorted) {
    const end = f.end_ms ?? Math.max(nowMs, f.start_ms);
    if (end < w.start || f.start_ms > w.end) continue;
    let row = rowsEnd.findIndex((e) => e < f.start_ms);
    if (row < 0) row = rowsEnd.length;
    rowsEnd[row] = end;
    out.push({ fault: f, row, end });
  }
  return out;
}

/** A window zoomed by `factor` (< 1 in, > 1 out) around `centre`, no narrower than `minSpanMs`. */
export function zoom(w: TimeWindow, factor: number, centre = (w.start + w.end) / 2, minSpanMs = 1): TimeWindow {
  const span = Math.max(minSpanMs, (w.end - w.start) * factor);
  const f = (centre - w.start) / (w.end - w.start);
  const start = centre - f * span;
  return { start, end: start + span };
}

// ---- linearizability: the operations that cannot be ordered, in words ----

/** The recorded operation the checker names (matched on client, key, kind and invocation time). */
export function findReported(ops: readonly HistoryRecordWire[], r: ReportedOpWire): HistoryRecordWire | undefined {
  let best: HistoryRecordWire | undefined;
  let bestGap = Infinity;
  for (const o of ops) {
    if (o.process !== r.client || o.key !== r.key || o.f !== r.kind) continue;
    const gap = Math.abs(o.invoke_ms - r.invoke_ms);
    if (gap < bestGap) {
      best = o;
      bestGap = gap;
    }
  }
  // The report rounds times to a microsecond.
  return bestGap <= 0.01 ? best : undefined;
}

export interface Witness {
  /** History indexes of the operations that together cannot be ordered, in time order. */
  readonly indexes: readonly number[];
  readonly reason: string;
  /** True when the set is a pattern known to be impossible by itself; false: the culprit and its neighbours. */
  readonly proven: boolean;
}

const at = (ms: number, t0: number): string => `${((ms - t0) / 1000).toFixed(3)} s`;
const span = (o: HistoryRecordWire, t0: number): string => `[${at(o.invoke_ms, t0)}, ${at(o.complete_ms, t0)}]`;
/** The value an operation leaves or reads: writes their value, deletes null ("not found"). */
const valueOf = (o: HistoryRecordWire): string | null => (o.f === 'delete' ? null : o.value);

/**
 * A small set of operations on the culprit's key that cannot be put in any legal order, for a
 * register (reads see the last value written, null after a delete or before any write), with the
 * reason in words. Patterns tried, smallest first, for a culprit read r of v:
 *  1. v was never written (no write of v that did not fail) and is not the initial "not found";
 *  2. every write of v began after r completed: r saw the future;
 *  3. a write w of v, and a write w2 of another value that began after every write of v completed
 *     and completed before r began: r saw a value overwritten before it began (for v = not found,
 *     w2 alone suffices when no delete could explain it);
 *  4. an earlier read r0 that completed before r began saw v2, whose every write began after every
 *     write of v completed: r went back in time.
 * When none fits (writes as culprits, multi-step orders), the culprit and the last few completed
 * operations on its key before it are given, marked as not proven minimal. `t0` is the time the
 * history view counts seconds from.
 */
export function findWitness(ops: readonly HistoryRecordWire[], culprit: HistoryRecordWire, t0: number): Witness {
  const onKey = ops.filter((o) => o.key === culprit.key && o.type !== 'fail');
  const k = culprit.key;
  if (culprit.f === 'read' && culprit.type === 'ok') {
    const v = culprit.value;
    const r = culprit;
    const writesOfV = onKey.filter((o) => o.f !== 'read' && valueOf(o) === v);
    const others = onKey.filter((o) => o.f !== 'read' && valueOf(o) !== v);
    if (v !== null && writesOfV.length === 0) {
      return {
        indexes: [r.index],
        reason: `read of ${k}=${v} at ${span(r, t0)} saw a value no operation wrote`,
        proven: true,
      };
    }
    if (writesOfV.length > 0 && writesOfV.every((w) => w.invoke_ms > r.complete_ms)) {
      const w = writesOfV[0] as HistoryRecordWire;
      return {
        indexes: sortIdx([r, w]),
        reason:
          `read of ${k}=${show(v)} at ${span(r, t0)} saw a value whose write began only later, ` +
          `at ${at(w.invoke_ms, t0)}`,
        proven: true,
      };
    }
    const lastVEnd = writesOfV.reduce((m, w) => Math.max(m, w.type === 'info' ? Infinity : w.complete_ms), -Infinity);
    // A later write that surely came after every write of v and before r: r's value was overwritten.
    const overwriter = others
      .filter((w2) => w2.type === 'ok' && w2.invoke_ms > lastVEnd && w2.complete_ms < r.invoke_ms)
      .sort((a, b) => b.complete_ms - a.complete_ms)[0];
    if (overwriter !== undefined) {
      const wv = writesOfV
        .filter((w) => w.complete_ms < overwriter.invoke_ms)
        .sort((a, b) => b.complete_ms - a.complete_ms)[0];
      const shownV = `${k}=${show(v)}`;
      const what = overwriter.f === 'delete' ? `delete of ${k}` : `write of ${k}=${show(overwriter.value)}`;
      const by = `${what} completed at ${at(overwriter.complete_ms, t0)}`;
      if (wv !== undefined) {
        return {
          indexes: sortIdx([wv, overwriter, r]),
          reason:
            `read of ${shownV} at ${span(r, t0)} saw a value overwritten before it began: the ${by}, ` +
            `after the write of ${shownV} completed at ${at(wv.complete_ms, t0)}`,
          proven: true,
        };
      }
      if (v === null && writesOfV.length === 0) {
        return {
          indexes: sortIdx([overwriter, r]),
          reason: `read of ${k} at ${span(r, t0)} found nothing, but the ${by}, before the read began`,
          proven: true,
        };
      }
    }
    // Non-monotonic reads: an earlier read saw a newer value.
    for (const r0 of onKey) {
      if (r0 === r || r0.f !== 'read' || r0.type !== 'ok' || r0.complete_ms >= r.invoke_ms || r0.value === v) continue;
      const writesOfV2 = onKey.filter((o) => o.f !== 'read' && valueOf(o) === r0.value);
      if (writesOfV2.length === 0 || writesOfV.length === 0) continue;
      const firstV2 = Math.min(...writesOfV2.map((w) => w.invoke_ms));
      if (!(lastVEnd < firstV2)) continue;
      const wv = writesOfV[writesOfV.length - 1] as HistoryRecordWire;
      const wv2 = writesOfV2[0] as HistoryRecordWire;
      return {
        indexes: sortIdx([wv, wv2, r0, r]),
        reason:
          `read of ${k}=${show(v)} at ${span(r, t0)} went back in time: an earlier read, ` +
          `completed at ${at(r0.complete_ms, t0)}, already saw the newer ${k}=${show(r0.value)}, ` +
          `written after ${k}=${show(v)}`,
        proven: true,
      };
    }
  }
  const before = onKey
    .filter((o) => o !== culprit && o.type === 'ok' && o.complete_ms <= culprit.complete_ms)
    .sort((a, b) => b.complete_ms - a.complete_ms)
    .slice(0, 3);
  return {
    indexes: sortIdx([culprit, ...before]),
    reason:
      `${culprit.f} of ${k}${culprit.f === 'delete' ? '' : `=${show(culprit.value)}`} at ${span(culprit, t0)} ` +
      `cannot be ordered after the operations before it (shown: the last ${before.length} on ${k})`,
    proven: false,
  };
}

const sortIdx = (os: readonly HistoryRecordWire[]): number[] =>
  [...os].sort((a, b) => a.invoke_ms - b.invoke_ms).map((o) => o.index);

/** Diverged keys in words: `x: n1=1, n2=2, n3 missing`. */
export function divergedText(d: ConvergenceWire['diverged'][number]): string {
  const parts = Object.entries(d.states).map(([node, s]) =>
    s === 'value' ? `${node}=${show(d.values[node] ?? null)}` : `${node} ${s}`,
  );
  return `${d.key}: ${parts.join(', ')}`;
}
