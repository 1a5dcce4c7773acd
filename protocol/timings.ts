/**
 * The default protocol timings and the check of configured ones (etcd's Config.validate()): what
 * every cluster runs with unless a caller overrides a field. Values and one pure check only; the
 * live service (src/replication/limits.ts, which re-exports all of this) and the deterministic
 * fabric both use it, which is why it lives below them. It imports only types from this folder.
 */
import type { CoreTimings } from './core.js';

/** Sync/semi-sync ack wait, raft commit wait, quorum wait, ms; past it the request is answered `timeout`. */
export const requestTimeoutMsDefault = 1000;
/** A leader resends entries a follower has not acknowledged after this long without progress, ms. */
export const retransmitMsDefault = 100;
/** A leader's heartbeat interval, ms; must stay below electionTimeoutMsMinDefault. */
export const heartbeatMsDefault = 50;
/** Shortest election timeout, ms: a follower that hears no leader for its timeout starts an election. */
export const electionTimeoutMsMinDefault = 150;
/** Longest election timeout, ms (each timeout is drawn uniformly from [min, max]). */
export const electionTimeoutMsMaxDefault = 300;
/** Raft: applied entries between two raftSnapshots; past it the log is compacted into a snapshot. */
export const snapshotEveryEntriesDefault = 30;
/**
 * Raft: most applied entries a leader keeps behind its last applied one for followers that still
 * answer but have not acknowledged them (etcd's SnapshotCatchUpEntries), entries; 0 is the policy
 * before, which compacts everything applied and sends such a follower the whole store.
 */
export const snapshotCatchUpEntriesDefault = 1000;
/** Most entries one replication message carries; more wait for the next message. */
export const entriesPerMessageMaxDefault = 512;

/** Every default together, as cores and clusters take them. */
export const coreTimingsDefault: Readonly<CoreTimings> = Object.freeze({
  requestTimeoutMs: requestTimeoutMsDefault,
  retransmitMs: retransmitMsDefault,
  heartbeatMs: heartbeatMsDefault,
  electionTimeoutMsMin: electionTimeoutMsMinDefault,
  electionTimeoutMsMax: electionTimeoutMsMaxDefault,
  snapshotEveryEntries: snapshotEveryEntriesDefault,
  snapshotCatchUpEntries: snapshotCatchUpEntriesDefault,
  maxEntriesPerMessage: entriesPerMessageMaxDefault,
});

export type TimingsCheck = { ok: true } | { ok: false; error: string };

/**
 * Checks configured protocol timings the way etcd's Config.validate() does: a value naming the first
 * problem, never a throw. Every field is a positive finite number, the counts are integers, and
 * heartbeat < election timeout min <= max, which keeps followers from starting elections against a
 * live leader (etcd refuses ElectionTick <= HeartbeatTick the same way).
 */
export function validateTimings(timings: CoreTimings): TimingsCheck {
  const positive: Array<keyof CoreTimings> = [
    'requestTimeoutMs',
    'retransmitMs',
    'heartbeatMs',
    'electionTimeoutMsMin',
    'electionTimeoutMsMax',
    'snapshotEveryEntries',
    'maxEntriesPerMessage',
  ];
  for (const field of positive) {
    const value = timings[field];
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      return { ok: false, error: `${field} must be a positive number (got ${String(value)})` };
    }
  }
  for (const field of ['snapshotEveryEntries', 'maxEntriesPerMessage'] as const) {
    if (!Number.isInteger(timings[field]))
      return { ok: false, error: `${field} must be an integer (got ${timings[field]})` };
  }
  const catchUp = timings.snapshotCatchUpEntries;
  if (typeof catchUp !== 'number' || !Number.isInteger(catchUp) || catchUp < 0) {
    return { ok: false, error: `snapshotCatchUpEntries must be an integer >= 0 (got ${String(catchUp)})` };
  }
  const { heartbeatMs, electionTimeoutMsMin: min, electionTimeoutMsMax: max } = timings;
  if (heartbeatMs >= min) {
    return { ok: false, error: `heartbeatMs (${heartbeatMs}) must be less than electionTimeoutMsMin (${min})` };
  }
  if (min > max) {
    return { ok: false, error: `electionTimeoutMsMin (${min}) must be at most electionTimeoutMsMax (${max})` };
  }
  return { ok: true };
}
