/**
 * The replication service's view of the core contract. The contract itself (NodeCore with its
 * onClient/onMessage/onTick inputs, drain() for outputs, nextDeadline(), persistentState(), and the
 * types they carry) lives in protocol/core.ts, below both the cores and the deterministic fabric, so
 * no import points up a layer; it is re-exported here so the cores and the service keep one import.
 * What stays here is replication-specific reading of core values, not part of the contract.
 */
import type { CoreStatus } from '../../protocol/core.js';

export * from '../../protocol/core.js';
export { coreTimingsDefault } from '../../protocol/timings.js';
/** The default timings under their old name, for existing importers (coreTimingsDefault in protocol/timings.ts). */
export { coreTimingsDefault as defaultTimings } from '../../protocol/timings.js';

/** single_leader: the epoch of a node's last log entry, from its status (0 when absent). */
export function lastEntryEpochOf(s: CoreStatus): number {
  const v = s.extra?.['last_entry_epoch'];
  return typeof v === 'number' ? v : 0;
}
