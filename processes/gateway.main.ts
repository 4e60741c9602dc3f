// `npm run start:gateway`: the gateway (with the REST-compat layer) as its own process, calling the
// subgraphs at CATALOG_URL and AI_URL.
import 'reflect-metadata';
import { subgraphChecks } from '../gateway/readiness.js';
import { applyMigrations } from '../prisma/migrate.js';
import { openPlatform } from '../platform/bootstrap.js';
import { loadGatewayProcessConfig } from './gateway.config.js';
import { configOrExit, exitOnSignals, startOrExit } from '../platform/entrypoint.js';
import type { ReadinessReport } from '../platform/http/probe-endpoints.js';
import { createMetrics } from '../platform/metrics.js';
import { connectRedis } from '../platform/redis.js';
import { startTelemetry, telemetryOptions } from '../platform/telemetry.js';
import { startFrontDoor } from './front-door.js';

const config = configOrExit(loadGatewayProcessConfig);
const telemetry = startTelemetry(telemetryOptions(config, 'gateway'));
const subgraphUrls = { catalog: config.catalogUrls, ai: config.aiUrls };
const { platform, redis } = await startOrExit(async () => {
  const platform = await openPlatform(config, 'gateway', { migrate: applyMigrations });
  // Persisted queries and Idempotency-Key records are shared between gateway replicas through Redis
  // when there is one (else idempotency records live in the database table).
  const redis = config.redisUrl ? await connectRedis(config.redisUrl, platform.logger) : undefined;
  return { platform, redis };
});

async function readiness(): Promise<ReadinessReport> {
  const checks: ReadinessReport['checks'] = {};
  // The gateway's own database holds Idempotency-Key records when there is no Redis.
  const database = await platform.database.prisma.$queryRawUnsafe('SELECT 1').then(
    () => true,
    () => false,
  );
  checks.database = { status: database ? 'up' : 'down', required: !redis };
  Object.assign(checks, await subgraphChecks(subgraphUrls));
  return { ready: Object.values(checks).every((c) => c.status !== 'down' || !c.required), checks };
}

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
