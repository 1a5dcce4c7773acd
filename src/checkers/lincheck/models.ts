/**
 * Sequential specifications the linearizability checker tests histories against: a register
 * (read/write/delete), a compare-and-set register, and a key-value map of string registers with
 * get/put/append. A model describes ONE key's object; the checker splits a history per key and
 * runs each part against a fresh instance (P-compositionality). Models are pure and hold no state.
 */
import { unreachable } from '../../util/assert.js';
import { isCasInput, type HistoryOp, type ModelState, type OpKind, type Value } from './history.js';

/**
 * The one interface a new model implements. States are small primitives (numbers, strings, null)
 * so the checker can intern them and memoize (linearized set, state) pairs cheaply.
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
  return isCasInput(op.input) ? null : op.input;
}

/** Register rule: a read returns the last value written (absent until the first write). */
export const registerModel: Model<Value> = {
  name: 'register',
  kinds: ['read', 'write', 'delete'],
  init: () => null,
  step(state, op) {
    switch (op.kind) {
      case 'read':
        return op.status === 'info' || op.output === state ? state : undefined;
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
    const matches = state === expected;
    if (op.status === 'info') return matches ? next : state;
    if (op.output === false) return matches ? undefined : state;
    return matches ? next : undefined;
  },
  readOnly: (op) => op.kind === 'read' || (op.kind === 'cas' && op.status === 'ok' && op.output === false),
  overwrites: (op) => op.kind === 'write' || op.kind === 'delete',
};

/**
 * One key of a key-value map of string registers (Porcupine's kv model): every key starts as the
 * empty string; get returns it, put replaces it, append concatenates to it.
 */
export const kvModel: Model<string> = {
  name: 'kv',
  kinds: ['read', 'write', 'append'],
  init: () => '',
  step(state, op) {
    switch (op.kind) {
      case 'read':
        return op.status === 'info' || op.output === state ? state : undefined;
      case 'write':
        return String(writeValue(op) ?? '');
      case 'append':
        return state + String(writeValue(op) ?? '');
      case 'delete':
      case 'cas':
        return undefined;
      default:
        return unreachable(op.kind);
    }
  },
  readOnly: (op) => op.kind === 'read',
  // Appends only extend the string: a read of v stays possible only while v starts with it.
  grows: (op) => op.kind === 'append',
  canGrowInto: (state, op) => typeof op.output === 'string' && op.output.startsWith(state),
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
