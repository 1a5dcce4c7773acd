/**
 * Picks the store from the environment: PostgreSQL when DATABASE_URL is set, otherwise the SQLite
 * file FLAGS_DB (default ./data/flags.db). Re-exports the store contract; no logic of its own.
 */
import type { Logger } from '../../util/logger.js';
import { openPostgresStore } from './postgres.js';
import { openSqliteStore } from './sqlite.js';
import type { FlagStore, StoreLimits } from './types.js';

export * from './types.js';
export { ChangeFeed } from './feed.js';
export { openSqliteStore } from './sqlite.js';
export { openPostgresStore } from './postgres.js';

export const defaultSqlitePath = './data/flags.db';

export async function openStoreFromEnv(
  env: NodeJS.ProcessEnv,
  logger?: Logger,
  limits?: Partial<StoreLimits>,
): Promise<FlagStore> {
  const url = env['DATABASE_URL'];
  if (url !== undefined && url !== '') {
    return openPostgresStore(url, logger ? { logger, ...(limits ? { limits } : {}) } : limits ? { limits } : {});
  }
  return openSqliteStore(env['FLAGS_DB'] || defaultSqlitePath, limits ? { limits } : {});
}
