// `npm run start:gateway`: the gateway (with the REST-compat layer) as its own process, calling the
// subgraphs at CATALOG_URL and AI_URL.
import 'reflect-metadata';
import { subgraphChecks } from '../gateway/readiness.js';
import { applyMigrations } from '../prisma/migrate.js';
import { openPlatform } from '../platform/bootstrap.js';
import { loadGatewayProcessConfig } from './gateway.config.js';
import { configOrExit, exitOnSignals, startOrExit } from '../platform/entrypoint.js';
import { idempotencyCheck } from '../platform/idempotency/readiness.js';
import { readinessOf } from '../platform/readiness.js';
import { createMetrics } from '../platform/metrics.js';
import { connectRedis, connectStateRedis } from '../platform/redis.js';
import { startTelemetry, telemetryOptions } from '../platform/telemetry.js';
import { startFrontDoor } from './front-door.js';

const config = configOrExit(loadGatewayProcessConfig);
const telemetry = startTelemetry(telemetryOptions(config, 'gateway'));
const subgraphUrls = { catalog: config.catalogUrl, ai: config.aiUrl };
const { platform, redis, cacheRedis } = await startOrExit(async () => {
  const platform = await openPlatform(config, 'gateway', { migrate: applyMigrations });
  // Idempotency-Key records are shared between gateway replicas through the Redis of REDIS_URL when
  // there is one (else the database table); persisted queries through the cache Redis, if any.
  const redis = config.redisUrl
    ? await connectStateRedis(config.redisUrl, { allowEviction: config.redisAllowEviction, logger: platform.logger })
    : undefined;
  const cacheRedis = config.redisCacheUrl
    ? await connectRedis(config.redisCacheUrl, platform.logger, 'REDIS_CACHE_URL')
    : undefined;
  return { platform, redis, cacheRedis };
});

// Keyed writes need a store for their records; the subgraphs are reported, not required (with one
// down the gateway still answers what the other serves).
const readiness = readinessOf(
  { idempotency: idempotencyCheck(platform.database.prisma, redis) },
  { groups: [() => subgraphChecks(subgraphUrls)] },
);

const gateway = await startFrontDoor({
  config,
  subgraphUrls,
  verifier: platform.verifier,
  logger: platform.logger,
  db: platform.database.prisma,
  redis,
  cacheRedis,
  metrics: createMetrics(),
  readiness,
});
exitOnSignals(
  platform.logger,
  async () => {
    await gateway.close();
    redis?.disconnect();
    cacheRedis?.disconnect();
    await platform.database.close();
    await telemetry.shutdown();
  },
  config.ops.shutdownTimeoutMs,
);
