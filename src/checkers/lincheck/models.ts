/**
 * Sequential specifications the linearizability checker tests histories against: a register
 * (read/write/delete), a compare-and-set register, and a key-value map with get/put/append. A
 * model describes ONE key's object; the checker splits a history per key and runs each part
 * against a fresh instance (P-compositionality). Models are pure and hold no state. Values are
 * typed and compared with value.ts's one equality (1 and "1" differ; [1 2] equals (1 2)).
 */
import { unreachable } from '../../util/assert.js';
import { isCasInput, type HistoryOp, type ModelState, type OpKind } from './history.js';
import { isSequence, valueEquals, type Value } from './value.js';

/**
 * The one interface a new model implements. States are typed values; the search interns them by
 * their canonical text and memoizes (linearized set, state) pairs.
 */
export interface Model<S extends ModelState = ModelState> {
  readonly name: string;
  /** The operation kinds this model understands; any other kind makes a history invalid for it. */
  readonly kinds: readonly OpKind[];
  /** The state every key starts in. */
  init(): S;
  /**
   * The state after `op` takes effect in `state`, or `undefined` when the recorded outcome of
   * `op` is impossible in `state`. For an `info` op the output is unknown: return the state the op
   * leaves when it takes effect here, whatever it returned (it is never illegal).
   */
  step(state: S, op: HistoryOp): S | undefined;
  /**
   * True when `op` leaves the state unchanged in every state where it is legal (a read, a cas
   * that observed a failed compare). The checker drops such ops when their outcome is unknown,
   * and linearizes them greedily as soon as they are legal (it never needs to delay one).
   */
  readOnly(op: HistoryOp): boolean;
  /**
   * Optional pruning, for models where some ops only ever extend the state (kv's append).
   * `grows(op)`: every step of `op` extends the state. `canGrowInto(state, op)`: some sequence
   * of growing steps could make the read-only `op` legal from `state`. With both, the checker
   * abandons a configuration as soon as a pending read can no longer be satisfied.
   */
  grows?(op: HistoryOp): boolean;
  canGrowInto?(state: S, op: HistoryOp): boolean;
  /**
   * Optional: true when `op` is legal in every state and leaves a state that does not depend on
   * the one before (a blind write). The checker then never places such an op directly after an
   * op of unknown outcome: that op's effect would be overwritten unseen, and leaving it out (it
   * may never have happened) is as good.
   */
  overwrites?(op: HistoryOp): boolean;
}

function writeValue(op: HistoryOp): Value {
  return op.kind === 'cas' ? null : op.input;
}

/** Register rule: a read returns the last value written (absent until the first write). */
export const registerModel: Model<Value> = {
  name: 'register',
  kinds: ['read', 'write', 'delete'],
  init: () => null,
  step(state, op) {
    switch (op.kind) {
      case 'read':
        return op.status === 'info' || valueEquals(op.output, state) ? state : undefined;
      case 'write':
        return writeValue(op);
      case 'delete':
        return null;
      case 'cas':
      case 'append':
        return undefined;
      default:
        return unreachable(op.kind);
    }
  },
  readOnly: (op) => op.kind === 'read',
  overwrites: (op) => op.kind === 'write' || op.kind === 'delete',
};

/**
 * Compare-and-set register rule: `cas [e n]` swaps to n exactly when the value is e. An ok cas
 * with output `false` observed a failed compare (the value was not e) and changed nothing; an
 * unknown cas takes effect as the rule says wherever it is placed.
 */
export const casRegisterModel: Model<Value> = {
  name: 'cas-register',
  kinds: ['read', 'write', 'delete', 'cas'],
  init: () => null,
  step(state, op) {
    if (op.kind !== 'cas') return registerModel.step(state, op);
    if (!isCasInput(op.input)) return undefined;
    const [expected, next] = op.input;
    const matches = valueEquals(state, expected);
    if (op.status === 'info') return matches ? next : state;
    if (op.output === false) return matches ? undefined : state;
    return matches ? next : undefined;
  },
  readOnly: (op) => op.kind === 'read' || (op.kind === 'cas' && op.status === 'ok' && op.output === false),
  overwrites: (op) => op.kind === 'write' || op.kind === 'delete',
};

/** The kv model's absent: nil, and "" too (Porcupine's kv starts every key as the empty string). */
function kvNormal(v: Value): Value {
  return v === '' ? null : v;
}

/**
 * `state` with `x` appended, or undefined when they do not fit: a string concatenates to a string
 * (absent counts as ""), any other value is added as one element to a list (absent counts as []),
 * and a string is added to a list as an element too.
 */
function kvAppend(state: Value, x: Value): Value | undefined {
  if (isSequence(state)) return [...state, x];
  if (typeof x === 'string') {
    if (state === null) return kvNormal(x);
    return typeof state === 'string' ? state + x : undefined;
  }
  return state === null ? [x] : undefined;
}

/** True when appends alone can take `state` to `target` (a longer string or list starting with it). */
function kvCanGrow(state: Value, target: Value): boolean {
  if (state === null) return typeof target === 'string' || isSequence(target);
  if (typeof state === 'string') return typeof target === 'string' && target.startsWith(state);
  if (!isSequence(state) || !isSequence(target) || target.length < state.length) return false;
  for (let i = 0; i < state.length; i++) if (!valueEquals(state[i] as Value, target[i] as Value)) return false;
  return true;
}

/**
 * One key of a key-value map (Porcupine's kv model, and Jepsen's list-append for single keys):
 * every key starts absent, and absent reads as nil or as "" (Porcupine's kv starts every key as
 * the empty string, so the two are one value here); get returns the value, put replaces it with
 * any typed value (put "" or nil makes it absent), append adds to it (kvAppend). Values are typed:
 * a put of 1 is read back as 1, never as "1".
 */
export const kvModel: Model<Value> = {
  name: 'kv',
  kinds: ['read', 'write', 'append'],
  init: () => null,
  step(state, op) {
    switch (op.kind) {
      case 'read':
        return op.status === 'info' || valueEquals(kvNormal(op.output), state) ? state : undefined;
      case 'write':
        return kvNormal(writeValue(op));
      case 'append':
        return kvAppend(state, writeValue(op));
      case 'delete':
      case 'cas':
        return undefined;
      default:
        return unreachable(op.kind);
    }
  },
  readOnly: (op) => op.kind === 'read',
  // Appends only extend the value: a read of v stays possible only while v starts with it.
  grows: (op) => op.kind === 'append',
  canGrowInto(state, op) {
    const target = op.output;
    // The common case first (the search asks this in its inner loop): string registers.
    if (typeof state === 'string' && typeof target === 'string') return target.startsWith(state);
    return kvCanGrow(state, kvNormal(target));
  },
  overwrites: (op) => op.kind === 'write',
};

export type ModelName = 'register' | 'cas-register' | 'kv';

export const modelNames: readonly ModelName[] = ['register', 'cas-register', 'kv'];

export const models: Readonly<Record<ModelName, Model>> = {
  register: registerModel as Model,
  'cas-register': casRegisterModel as Model,
  kv: kvModel as Model,
};

export function isModelName(name: string): name is ModelName {
  return (modelNames as readonly string[]).includes(name);
}
