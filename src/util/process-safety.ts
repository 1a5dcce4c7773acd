/**
 * The process-level safety net: `unhandledRejection` and `uncaughtException` handlers that log at
 * error and count, and never exit, so one forgotten promise or one throwing callback cannot take
 * down a process that serves three services. Installed once per process by each entry point
 * (src/main.ts and every service's main.ts); the counts are exported as Prometheus counters by
 * every service's /metrics (src/http/health.ts). It does not make a failed operation succeed: the
 * request or timer that failed stays failed; HTTP handlers are already caught by the adapter.
 */
import type { Logger } from './logger.js';

/** Faults that reached the process level since start, by kind. */
export interface ProcessFaultCounts {
  unhandledRejections: number;
  uncaughtExceptions: number;
}

const counts: ProcessFaultCounts = { unhandledRejections: 0, uncaughtExceptions: 0 };
let installedWith: Logger | undefined;

/**
 * Installs the two handlers (once; later calls do nothing). With them Node no longer exits on an
 * unhandled rejection (its default since Node 15) or an uncaught exception.
 */
export function installProcessSafetyNet(logger: Logger): void {
  if (installedWith) return;
  installedWith = logger;
  process.on('unhandledRejection', (reason) => {
    counts.unhandledRejections++;
    safeLog(
      logger,
      reason,
      'unhandled promise rejection (counted in process_unhandled_rejections_total; the process keeps running)',
    );
  });
  process.on('uncaughtException', (err, origin) => {
    counts.uncaughtExceptions++;
    safeLog(
      logger,
      err,
      `uncaught exception from ${origin} (counted in process_uncaught_exceptions_total; the process keeps running)`,
    );
  });
}

/** Whether the safety net is installed in this process. */
export function processSafetyNetInstalled(): boolean {
  return installedWith !== undefined;
}

/** The counts so far (a live view: read it when scraping). */
export function processFaultCounts(): Readonly<ProcessFaultCounts> {
  return counts;
}

function safeLog(logger: Logger, err: unknown, message: string): void {
  try {
    logger.error({ err }, message);
  } catch {
    // A logger that throws (a closed destination) must not turn this handler into a new fault.
    try {
      process.stderr.write(`${message}: ${String(err)}\n`);
    } catch {
      // nothing left to report with
    }
  }
}
