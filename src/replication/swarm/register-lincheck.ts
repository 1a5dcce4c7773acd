/**
 * A small linearizability checker for the swarm: one read/write register per key, checked key by
 * key (linearizability is local, Herlihy & Wing), with the Wing–Gong–Lowe search and Lowe's
 * memoization of (linearized set, register value). It is deliberately minimal: the general
 * checker with models, budgets and explanations lives in src/checkers/lincheck.
 *
 * Semantics (Jepsen's): an operation that definitely failed is left out by the caller; an
 * indeterminate write (complete = Infinity) may take effect at any point after its invocation, or
 * never; events at equal times are taken as concurrent.
 */
import { lincheckStatesPerKeyMax } from '../limits.js';

export interface RegisterOp {
  client: string;
  key: string;
  kind: 'write' | 'read';
  /** write: the value written (null: a delete); read: the value observed (null: absent). */
  value: string | null;
  invoke: number;
  /** Infinity for an indeterminate write. */
  complete: number;
}

export interface RegisterCheckResult {
  ok: boolean;
  ops: number;
  keys: number;
  /** The search for some key ran past its state budget: neither proven nor refuted. */
  inconclusive: string[];
  violation?: { key: string; message: string; ops: RegisterOp[] };
}

interface Ev {
  op: number;
  call: boolean;
  time: number;
  prev: Ev | undefined;
  next: Ev | undefined;
  /** call -> its return, return -> its call */
  pair: Ev | undefined;
}

export function checkRegisterHistory(history: readonly RegisterOp[]): RegisterCheckResult {
  const byKey = new Map<string, RegisterOp[]>();
  for (const op of history) {
    const list = byKey.get(op.key);
    if (list) list.push(op);
    else byKey.set(op.key, [op]);
  }
  const result: RegisterCheckResult = { ok: true, ops: history.length, keys: byKey.size, inconclusive: [] };
  for (const key of [...byKey.keys()].sort()) {
    const ops = byKey.get(key) as RegisterOp[];
    const verdict = checkKey(ops);
    if (verdict === 'inconclusive') result.inconclusive.push(key);
    else if (verdict !== 'ok') {
      result.ok = false;
      result.violation = { key, message: verdict, ops };
      return result;
    }
  }
  return result;
}

const absent = '\u0000absent';

function checkKey(ops: readonly RegisterOp[]): 'ok' | 'inconclusive' | string {
  // Build the event list: calls before returns at equal times (concurrent), stable by op index.
  const evs: Ev[] = [];
  for (const [i, op] of ops.entries()) {
    const call: Ev = { op: i, call: true, time: op.invoke, prev: undefined, next: undefined, pair: undefined };
    const ret: Ev = { op: i, call: false, time: op.complete, prev: undefined, next: undefined, pair: call };
    call.pair = ret;
    evs.push(call, ret);
  }
  evs.sort((a, b) => a.time - b.time || (a.call === b.call ? a.op - b.op : a.call ? -1 : 1));
  const head: Ev = { op: -1, call: false, time: -Infinity, prev: undefined, next: undefined, pair: undefined };
  let prev = head;
  for (const e of evs) {
    prev.next = e;
    e.prev = prev;
    prev = e;
  }

  const words = Math.ceil(ops.length / 32);
  const linearized = new Uint32Array(words);
  const seen = new Set<string>();
  const stack: Array<{ ev: Ev; state: string }> = [];
  let state = absent;
  let entry = head.next;

  const lift = (e: Ev): void => {
    // Remove the call and its return from the list.
    const r = e.pair as Ev;
    (e.prev as Ev).next = e.next;
    if (e.next) e.next.prev = e.prev;
    (r.prev as Ev).next = r.next;
    if (r.next) r.next.prev = r.prev;
  };
  const unlift = (e: Ev): void => {
    const r = e.pair as Ev;
    (r.prev as Ev).next = r;
    if (r.next) r.next.prev = r;
    (e.prev as Ev).next = e;
    if (e.next) e.next.prev = e;
  };

  while (head.next) {
    if (!entry) return 'ok'; // defensive: cannot happen while returns remain
    if (entry.call) {
      const op = ops[entry.op] as RegisterOp;
      const v = op.value ?? absent;
      const legal = op.kind === 'write' || v === state;
      if (legal) {
        const next = op.kind === 'write' ? v : state;
        const w = entry.op >>> 5;
        const bit = 1 << (entry.op & 31);
        linearized[w] = (linearized[w] as number) | bit;
        const memo = `${linearized.join(',')}|${next}`;
        if (!seen.has(memo)) {
          if (seen.size >= lincheckStatesPerKeyMax) return 'inconclusive';
          seen.add(memo);
          stack.push({ ev: entry, state });
          state = next;
          lift(entry);
          entry = head.next;
          continue;
        }
        linearized[w] = (linearized[w] as number) & ~bit;
      }
      entry = entry.next;
    } else {
      // Every operation left must be placed before this return. An indeterminate write's return
      // lies at Infinity, after every definite one: reaching it means only "maybe" writes remain.
      if (entry.time === Infinity) return 'ok';
      const top = stack.pop();
      if (!top) {
        const op = ops[entry.op] as RegisterOp;
        return `no linearization: ${describe(op)} cannot be ordered with the operations before it`;
      }
      state = top.state;
      const w = top.ev.op >>> 5;
      linearized[w] = (linearized[w] as number) & ~(1 << (top.ev.op & 31));
      unlift(top.ev);
      entry = top.ev.next;
    }
  }
  return 'ok';
}

function describe(op: RegisterOp): string {
  const end = op.complete === Infinity ? '?' : String(op.complete);
  const v = op.value === null ? 'nil' : JSON.stringify(op.value);
  return `${op.client} ${op.kind} ${op.key}=${v} [${op.invoke}, ${end}]`;
}

export function describeRegisterOp(op: RegisterOp): string {
  return describe(op);
}
