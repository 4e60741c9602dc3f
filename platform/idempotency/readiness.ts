import type { Redis } from 'ioredis';
import type { Db } from '../db/database.js';
import { databaseCheck, redisCheck, type ReadinessCheck } from '../lifecycle/readiness.js';

/**
 * Can this part take keyed writes? Their Idempotency-Key records live in Redis, or in the database
 * table without Redis and while Redis is down (platform/idempotency/fallback-store.ts): not ready
 * only when neither can hold a record, since then every write would answer 503.
 */
export function idempotencyCheck(db: Db, redis: Redis | undefined): ReadinessCheck {
  const table = databaseCheck(db);
  if (!redis) return table;
  const primary = redisCheck(redis, { status: 'degraded', detail: 'Idempotency-Key records fall back to the database table' });
  return {
    required: true,
    async run() {
      const inRedis = await primary.run();
      if (inRedis.status === 'up') return inRedis;
      const inTable = await table.run();
      return inTable.status === 'up'
        ? inRedis
        : { status: 'down', detail: `${inRedis.detail}; and the database table cannot hold records either: ${inTable.detail}` };
    },
  };
}
