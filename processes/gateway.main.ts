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
import { connectRedis } from '../platform/redis.js';
import { startTelemetry, telemetryOptions } from '../platform/telemetry.js';
import { startFrontDoor } from './front-door.js';

const config = configOrExit(loadGatewayProcessConfig);
const telemetry = startTelemetry(telemetryOptions(config, 'gateway'));
const subgraphUrls = { catalog: config.catalogUrl, ai: config.aiUrl };
const { platform, redis } = await startOrExit(async () => {
  const platform = await openPlatform(config, 'gateway', { migrate: applyMigrations });
  // Persisted queries and Idempotency-Key records are shared between gateway replicas through Redis
  // when there is one (else idempotency records live in the database table).
  const redis = config.redisUrl ? await connectRedis(config.redisUrl, platform.logger) : undefined;
  return { platform, redis };
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
  metrics: createMetrics(),
  readiness,
});
exitOnSignals(
  platform.logger,
  async () => {
    await gateway.close();
    redis?.disconnect();
    await platform.database.close();
    await telemetry.shutdown();
  },
  config.ops.shutdownTimeoutMs,
);
