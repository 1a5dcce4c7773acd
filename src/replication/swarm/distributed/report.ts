/**
 * What `simlab-swarm report` computes from the counters, kept pure: the JSON shape, seeds/s and the
 * exit codes of the distributed mode. No Redis here (commands.ts reads the counters, store.ts keeps them).
 */
import type { DistributedStrategy } from './ranges.js';

/** Exit codes of submit | worker | report (documented in cli.ts's usage text). */
export const exitOk = 0;
export const exitSeedFailed = 1;
export const exitUsage = 2;
export const exitIncomplete = 3;

/** What `report --json` prints. The first four fields are the contract; the rest add detail. */
export interface Report {
  seeds_total: number;
  seeds_done: number;
  seeds_per_s: number;
  failures: Array<{ seed: number; strategy: DistributedStrategy; replay: string }>;
  queue: string;
  seeds_failed: number;
  ranges_pending: number;
  ranges_failed: Array<{ strategy: string; first: number; last: number; reason: string }>;
}

/** seeds/s from the first range taken to the last seed recorded (or to now while ranges are pending). */
export function seedsPerSecond(
  done: number,
  startedMs: number | null,
  lastDoneMs: number | null,
  nowMs: number,
  pending: number,
): number {
  if (startedMs === null || done === 0) return 0;
  const end = pending === 0 && lastDoneMs !== null ? lastDoneMs : nowMs;
  const secs = (end - startedMs) / 1000;
  return secs > 0 ? done / secs : 0;
}

/** The exit code a report stands for: a failing seed first, then anything not done. */
export function reportExitCode(
  r: Pick<Report, 'seeds_total' | 'seeds_done' | 'seeds_failed' | 'ranges_failed'>,
): number {
  if (r.seeds_failed > 0) return exitSeedFailed;
  if (r.seeds_done < r.seeds_total || r.ranges_failed.length > 0) return exitIncomplete;
  return exitOk;
}
