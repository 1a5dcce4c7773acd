/**
 * The generic operation history the linearizability checker reads: one record per client
 * operation, with its invocation and completion times and whether it completed, failed or has an
 * unknown outcome (Jepsen's :ok, :fail, :info). It is what the simulator records and what the
 * Jepsen parsers produce; it is not tied to any model and holds no checker state.
 */
import { unreachable } from '../../util/assert.js';
import { showValue, type Value } from './value.js';

export type { Compound, Value } from './value.js';

/**
 * What a model's state may be: a typed value (value.ts). The search interns states by their
 * canonical text, so equal states are one state however they were built.
 */
export type ModelState = Value;

/**
 * What an operation does. `delete` is a write of absent (`null`); `cas` takes `[expected, new]`
 * as input; `append` concatenates to a string register (the kv model's get/put/append are
 * read/write/append).
 */
export type OpKind = 'read' | 'write' | 'delete' | 'cas' | 'append';

/**
 * Jepsen's completion types. `ok`: it happened and returned `output`. `fail`: it definitely did
 * not happen. `info`: the outcome is unknown; it may take effect at any time after its invocation,
 * or never.
 */
export type OpStatus = 'ok' | 'fail' | 'info';

export type CasInput = readonly [expected: Value, next: Value];

export interface HistoryOp {
  /** The client (Jepsen process) that issued the operation. */
  readonly client: string | number;
  /** The object operated on; histories are checked one key at a time (P-compositionality). */
  readonly key: string;
  readonly kind: OpKind;
  /** write/append: the value; cas: `[expected, new]`; read/delete: null. */
  readonly input: Value;
  /** read: the value read; cas: whether it swapped (`false`: the compare failed); others: null. */
  readonly output: Value;
  readonly invokeTime: number;
  /** Required for `ok`; ignored (unknown: Infinity or undefined) for `info` and `fail`. */
  readonly completeTime?: number | undefined;
  readonly status: OpStatus;
}

export type History = readonly HistoryOp[];

export const opKinds: readonly OpKind[] = ['read', 'write', 'delete', 'cas', 'append'];

/** A cas's input is a pair; a vector can also be a written value, so ask only of a cas. */
export function isCasInput(input: Value): input is CasInput {
  return Array.isArray(input) && input.length === 2;
}

/** One operation in words, Jepsen-like: `client 3 cas [1 2] -> ok`, `client 0 read -> 4`. */
export function describeOp(op: HistoryOp): string {
  const who = `client ${String(op.client)}`;
  const where = op.key === '' ? '' : ` key ${JSON.stringify(op.key)}`;
  const outcome = op.status === 'info' ? 'unknown' : op.status === 'fail' ? 'failed' : null;
  let what: string;
  switch (op.kind) {
    case 'read':
      what = `read -> ${outcome ?? showValue(op.output)}`;
      break;
    case 'write':
    case 'append':
      what = `${op.kind} ${showValue(op.input)}${outcome ? ` -> ${outcome}` : ''}`;
      break;
    case 'delete':
      what = `delete${outcome ? ` -> ${outcome}` : ''}`;
      break;
    case 'cas': {
      const args = isCasInput(op.input) ? `[${showValue(op.input[0])} ${showValue(op.input[1])}]` : '?';
      what = `cas ${args} -> ${outcome ?? (op.output === false ? 'compare failed' : 'ok')}`;
      break;
    }
    default:
      return unreachable(op.kind);
  }
  return `${who}${where} ${what}`;
}

/** `[t1, t2]` or `[t1, ?]` for an operation whose completion is unknown. */
export function describeInterval(op: HistoryOp): string {
  const end =
    op.status === 'ok' && op.completeTime !== undefined && Number.isFinite(op.completeTime)
      ? String(op.completeTime)
      : '?';
  return `[${op.invokeTime}, ${end}]`;
}
