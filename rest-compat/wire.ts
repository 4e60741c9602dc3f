import type { Redis } from 'ioredis';
import type { Config } from '../platform/config/config.js';
import type { Db } from '../platform/db/database.js';
import { createIdempotencyStore } from '../platform/idempotency/create.js';
import type { IdempotencyStore } from '../platform/idempotency/store.js';
import type { Logger } from '../platform/logger.js';
import type { RestRouter } from '../gateway/server.js';
import { createRestRouter } from './router.js';

/**
 * What `startGateway` needs for the REST door: the router, and the Idempotency-Key store it
 * shares with GraphQL mutations (Redis when configured, else the database table).
 */
export function createRestCompat(deps: { config: Config; redis?: Redis; db: Db; logger: Logger; aiUrl: string }): {
  rest: RestRouter;
  idempotency: IdempotencyStore;
} {
  const idempotency = createIdempotencyStore({
    redis: deps.redis,
    db: deps.db,
    logger: deps.logger,
    ttlSeconds: deps.config.idempotencyTtlSeconds,
    leaseSeconds: deps.config.idempotencyLeaseSeconds,
  });
  return { idempotency, rest: createRestRouter({ idempotency, aiBaseUrl: new URL('/', deps.aiUrl).toString() }) };
}
