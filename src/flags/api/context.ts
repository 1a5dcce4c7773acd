/**
 * What every route module of the flag service shares: the store, auth, the in-memory replica and
 * stream hub, metrics, the logger, the clock, and `settled()` (read-your-writes: resolves once the
 * change feed has applied every committed write to the replica). Wiring only; no behaviour.
 */
import type { Logger } from '../../util/logger.js';
import type { AuthService } from '../auth/service.js';
import type { StreamHub } from '../stream/hub.js';
import type { Replica } from '../stream/replica.js';
import type { FlagStore } from '../store/types.js';
import type { FlagsMetrics } from './metrics.js';

export interface FlagsContext {
  store: FlagStore;
  auth: AuthService;
  replica: Replica;
  hub: StreamHub;
  metrics: FlagsMetrics;
  logger: Logger;
  now: () => number;
  settled: () => Promise<void>;
}
