import type { Redis } from 'ioredis';
import type { Db } from '../db/database.js';
import type { Logger } from '../logger.js';
import { createDatabaseIdempotencyStore } from './database-store.js';
import { createRedisIdempotencyStore } from './redis-store.js';
import type { IdempotencyStore, StoreTiming } from './store.js';

/** Redis when configured (keys expire by TTL there), else the database table (embedded mode). */
export function createIdempotencyStore(deps: { redis?: Redis; db: Db; logger: Logger } & StoreTiming): IdempotencyStore {
  const timing = { ttlSeconds: deps.ttlSeconds, leaseSeconds: deps.leaseSeconds, clock: deps.clock };
  return deps.redis
    ? createRedisIdempotencyStore(deps.redis, timing)
    : createDatabaseIdempotencyStore(deps.db, timing, deps.logger);
}
