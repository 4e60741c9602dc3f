import type { Redis } from 'ioredis';
import type { Db } from '../db/database.js';
import type { Logger } from '../observability/logger.js';
import { createDatabaseIdempotencyStore } from './database-store.js';
import { withDatabaseFallback } from './fallback-store.js';
import { createRedisIdempotencyStore } from './redis-store.js';
import type { IdempotencyStore, StoreTiming } from './store.js';

/**
 * Redis when configured (keys expire by TTL there), with the database table while Redis is down;
 * else the table alone (embedded mode).
 */
export function createIdempotencyStore(
  deps: { redis?: Redis; db: Db; logger: Logger } & StoreTiming,
): IdempotencyStore & { usingFallback(): boolean } {
  const timing = { ttlSeconds: deps.ttlSeconds, leaseSeconds: deps.leaseSeconds, clock: deps.clock };
  const table = createDatabaseIdempotencyStore(deps.db, timing, deps.logger);
  const { redis } = deps;
  if (!redis) return { ...table, usingFallback: () => false };
  return withDatabaseFallback(createRedisIdempotencyStore(redis, timing), table, {
    primaryReady: () => redis.status === 'ready',
    logger: deps.logger,
  });
}
