/**
 * The linearizability checker's public surface: the generic history type, the models, the
 * checker, the Jepsen parsers and the worker pool. The CLI (cli.ts) is an entry point, not an
 * export; the search itself (search.ts) is internal.
 */
export type { CasInput, Compound, History, HistoryOp, ModelState, OpKind, OpStatus, Value } from './history.js';
export { showValue, valueEquals, valueKey } from './value.js';
export { describeInterval, describeOp, opKinds } from './history.js';
export type { Model, ModelName } from './models.js';
export { casRegisterModel, isModelName, kvModel, modelNames, models, registerModel } from './models.js';
export type { Budget, CheckOptions, CheckResult, CheckStats, Violation } from './checker.js';
export {
  checkHistory,
  defaultConfigurationsMax,
  describeViolation,
  partitionByKey,
  validateHistory,
} from './checker.js';
export type { ParseResult } from './parse.js';
export { jepsenOpTag, parseEdnHistory, parseHistory, parseJepsenLog } from './parse.js';
export type { PoolCheckOptions } from './pool.js';
export { checkInPool, closeLincheckPool, lincheckDefaultTimeoutMs, lincheckPoolStats } from './pool.js';
