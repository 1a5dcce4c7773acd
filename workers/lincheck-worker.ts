/**
 * The linearizability checker's piscina worker: takes one history, checks it against the named
 * model under the task's deadline, and returns the result (plain data, structured-cloned back).
 * It holds no logic of its own; the search is src/checkers/lincheck, the pool is its pool.ts.
 */
import { checkHistory, type CheckResult } from '../src/checkers/lincheck/checker.js';
import type { LincheckTask } from '../src/checkers/lincheck/pool.js';
import { isModelName, models } from '../src/checkers/lincheck/models.js';

/** Milliseconds since the epoch, comparable across threads (each thread has its own timeOrigin). */
const now = (): number => performance.timeOrigin + performance.now();

export default function check(task: LincheckTask): CheckResult {
  if (!isModelName(task.modelName)) {
    const stats = { ops: 0, partitions: 0, configurations: 0, backtracks: 0 };
    return { verdict: 'unknown', reason: 'invalid-history', note: `unknown model ${String(task.modelName)}`, stats };
  }
  const budget = task.deadline === undefined ? undefined : { now, deadline: task.deadline };
  return checkHistory(task.history, models[task.modelName], { budget, configurationsMax: task.configurationsMax });
}
