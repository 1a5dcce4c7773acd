/**
 * Runs the linearizability checker off the event loop: a lazily created piscina pool of worker
 * threads (workers/lincheck-worker.ts), each task under a time budget, so the API stays
 * responsive while a large history is searched. Plumbing only: the verdict comes from checker.ts.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import type { CheckResult } from './checker.js';
import type { History } from './history.js';
import type { ModelName } from './models.js';
import { createLogger, type Logger } from '../../util/logger.js';

/** What crosses to the worker: the history, the model's name, an absolute deadline (epoch ms). */
export interface LincheckTask {
  readonly history: History;
  readonly modelName: ModelName;
  readonly deadline: number | undefined;
  readonly configurationsMax: number | undefined;
}

export interface PoolCheckOptions {
  /** The time budget; past it the verdict is `unknown` (reason `timeout`). Default 10 s. */
  readonly timeoutMs?: number | undefined;
  /** Memo cap for the search (see CheckOptions). */
  readonly configurationsMax?: number | undefined;
}

export const lincheckDefaultTimeoutMs = 10_000;
/** Tasks that may wait for a thread; past it a check answers `unknown` (reason `limit`) at once. */
export const lincheckQueueDepthMax = 64;
/** Grace after the budget before a worker that has not answered is terminated. */
export const lincheckAbortGraceMs = 2_000;

let pool: Piscina<LincheckTask, CheckResult> | undefined;
let logger: Logger | undefined;

/** Absolute milliseconds, comparable with the worker's clock. */
const nowMs = (): number => performance.timeOrigin + performance.now();

function getPool(): Piscina<LincheckTask, CheckResult> {
  if (pool === undefined) {
    pool = new Piscina<LincheckTask, CheckResult>({
      // `.js`: resolves to the compiled worker in dist/, and under tap's loader to the .ts source.
      filename: new URL('../../../workers/lincheck-worker.js', import.meta.url).href,
      minThreads: 0,
      maxThreads: Math.max(1, Math.min(2, availableParallelism() - 1)),
      idleTimeout: 30_000,
      maxQueue: lincheckQueueDepthMax,
    });
    // A worker that fails to load would otherwise take the whole process down.
    pool.on('error', (err: unknown) => {
      logger ??= createLogger('lincheck-pool');
      logger.error({ err }, 'lincheck worker failed');
    });
  }
  return pool;
}

function unknown(reason: 'timeout' | 'limit', note: string, history: History): CheckResult {
  const stats = { ops: history.length, partitions: 0, configurations: 0, backtracks: 0 };
  return { verdict: 'unknown', reason, note, stats };
}

/** Checks `history` against the named model in a worker thread, within `timeoutMs`. */
export async function checkInPool(
  history: History,
  modelName: ModelName,
  options: PoolCheckOptions = {},
): Promise<CheckResult> {
  const timeoutMs = options.timeoutMs ?? lincheckDefaultTimeoutMs;
  const p = getPool();
  if (p.queueSize >= lincheckQueueDepthMax) {
    return unknown('limit', `the checker queue is full (${lincheckQueueDepthMax} checks waiting)`, history);
  }
  // The worker stops itself at the deadline; the signal is the backstop for one that cannot.
  const signal = AbortSignal.timeout(timeoutMs + lincheckAbortGraceMs);
  const task: LincheckTask = {
    history,
    modelName,
    deadline: nowMs() + timeoutMs,
    configurationsMax: options.configurationsMax,
  };
  try {
    return await p.run(task, { signal });
  } catch (err) {
    if (signal.aborted)
      return unknown('timeout', `the checker did not answer within ${timeoutMs} ms and was stopped`, history);
    throw err;
  }
}

/** Threads and queue, for metrics and tests. */
export function lincheckPoolStats(): { threads: number; queued: number; completed: number } {
  if (pool === undefined) return { threads: 0, queued: 0, completed: 0 };
  return { threads: pool.threads.length, queued: pool.queueSize, completed: pool.completed };
}

/** Stops the pool's threads (shutdown, tests); the next check creates a new pool. */
export async function closeLincheckPool(): Promise<void> {
  const p = pool;
  pool = undefined;
  if (p !== undefined) await p.close();
}
