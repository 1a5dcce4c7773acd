/**
 * A private redis-server for a test file: Debian's package, installed with apt-get on first use
 * (src/replication/swarm/distributed/local-redis.ts does the work), started on a free loopback
 * port in a temp dir with no persistence, and stopped when the test ends.
 */
import type { Test } from 'tap';
import { startLocalRedis, type LocalRedis } from '../../src/replication/swarm/distributed/local-redis.js';

export async function startTestRedis(t: Test): Promise<LocalRedis> {
  const redis = await startLocalRedis();
  t.teardown(() => redis.stop());
  return redis;
}
