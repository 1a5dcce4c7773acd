/**
 * Converts a cluster's recorded client operations (history.ts HistoryOp) into Jepsen's history
 * shapes for other checkers (../shared/specs/interop.md "Histories"): EDN op maps one per line, in
 * the exact field order Porcupine's kv parser matches, and a JSON array with every operation. Pure
 * functions of the operations; it neither reads a cluster nor checks anything (lincheck and
 * Porcupine do).
 *
 * Jepsen's conventions: a process has at most one operation outstanding, so a client whose
 * operations overlap is split over several process numbers; an operation of unknown outcome
 * (`info`) keeps its process busy for ever, so the client continues under a new number. In EDN a
 * failed operation is left out, an indeterminate write stays an invoke with no completion and an
 * indeterminate read is left out; the JSON array keeps every operation with its completion.
 */
import type { HistoryOp } from './history.js';

/** One Jepsen event (an invocation or a completion) in interop.md's JSON shape. */
export interface JepsenEvent {
  process: number;
  type: 'invoke' | 'ok' | 'fail' | 'info';
  f: 'get' | 'put' | 'append';
  key: string;
  /** put: the value written ("" for a delete); get: null on invoke, the value read ("" = none). */
  value: string | null;
  /** ms since the Unix epoch, fractional (the invocation's or the completion's time). */
  time: number;
}

/** What the export does with each operation: EDN drops failed ones and indeterminate reads. */
export type ExportMode = 'edn' | 'json';

/** `f` and the invocation's value of a recorded operation (a delete is a put of ""). */
function callOf(op: HistoryOp): { f: JepsenEvent['f']; value: string | null } {
  switch (op.kind) {
    case 'write':
      return { f: 'put', value: op.value ?? '' };
    case 'delete':
      return { f: 'put', value: '' };
    case 'read':
      return { f: 'get', value: null };
  }
}

/**
 * The operations as Jepsen events, ordered by time (an invocation before a completion at the
 * same instant, so operations that touch in time count as concurrent), with process numbers
 * assigned as the module comment says. `mode` decides which operations appear.
 */
export function toJepsenEvents(ops: readonly HistoryOp[], mode: ExportMode): JepsenEvent[] {
  interface Pending {
    op: HistoryOp;
    at: number;
    invoke: boolean;
    seq: number;
  }
  const timeline: Pending[] = [];
  ops.forEach((op, seq) => {
    if (mode === 'edn' && (op.outcome === 'fail' || (op.outcome === 'info' && op.kind === 'read'))) return;
    timeline.push({ op, at: op.invokeMs, invoke: true, seq });
    if (mode === 'json' || op.outcome === 'ok') timeline.push({ op, at: op.completeMs, invoke: false, seq });
  });
  timeline.sort((a, b) => a.at - b.at || Number(b.invoke) - Number(a.invoke) || a.seq - b.seq);

  let nextProcess = 0;
  /** A client's current process number and whether an operation is outstanding on it. */
  const byClient = new Map<string, { process: number; busy: boolean }>();
  /** The process each operation (by seq) runs under. */
  const processOf = new Map<number, number>();
  const out: JepsenEvent[] = [];
  for (const e of timeline) {
    const call = callOf(e.op);
    if (e.invoke) {
      let cur = byClient.get(e.op.client);
      if (cur === undefined || cur.busy) {
        cur = { process: nextProcess++, busy: false };
        byClient.set(e.op.client, cur);
      }
      cur.busy = true;
      processOf.set(e.seq, cur.process);
      out.push({ process: cur.process, type: 'invoke', f: call.f, key: e.op.key, value: call.value, time: e.at });
      continue;
    }
    const process = processOf.get(e.seq) as number;
    const cur = byClient.get(e.op.client);
    // An indeterminate operation keeps its process busy for ever: the client moves on to a new one.
    if (cur !== undefined && cur.process === process && e.op.outcome !== 'info') cur.busy = false;
    const value = e.op.kind === 'read' ? (e.op.outcome === 'ok' ? (e.op.result ?? '') : null) : call.value;
    out.push({ process, type: e.op.outcome, f: call.f, key: e.op.key, value, time: e.at });
  }
  return out;
}

/** An EDN string literal: `"`, `\` and control characters escaped (\n, \t, \r, else \uXXXX). */
export function ednString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0) as number;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (c < 0x20 || c === 0x7f) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/**
 * One event as a Jepsen op map, fields in interop.md's order:
 * `{:process 0, :type :invoke, :f :put, :key "k", :value "v"}`.
 */
export function ednLine(e: JepsenEvent): string {
  const value = e.value === null ? 'nil' : ednString(e.value);
  return `{:process ${e.process}, :type :${e.type}, :f :${e.f}, :key ${ednString(e.key)}, :value ${value}}`;
}

/** The EDN export: one op map per line, each line ending in a newline ("" for no operations). */
export function toEdnHistory(ops: readonly HistoryOp[]): string {
  let out = '';
  for (const e of toJepsenEvents(ops, 'edn')) out += `${ednLine(e)}\n`;
  return out;
}

/** The JSON export: every operation's invocation and completion (ok, fail or info). */
export function toJsonHistory(ops: readonly HistoryOp[]): JepsenEvent[] {
  return toJepsenEvents(ops, 'json');
}
