// `npm run start:ai`: the AI subgraph as its own process (stateless; quotas live in Redis, rules and
// provenance in the database, so replicas scale out freely). The /v1/ai/health endpoint is served here.
import 'reflect-metadata';
import { applyMigrations } from '../prisma/migrate.js';
import { openPlatform } from '../platform/bootstrap.js';
import { loadAiProcessConfig } from './config.js';
import { configOrExit, exitOnSignals, startOrExit } from '../platform/entrypoint.js';
import { createMetrics } from '../platform/metrics.js';
import { startTelemetry, telemetryOptions } from '../platform/telemetry.js';
import { feedAiMetrics } from '../subgraphs/ai/metrics.js';
import { connectStateRedis } from '../platform/redis.js';
import { seedBaseline } from '../subgraphs/ai/seed.js';
import { startAiSubgraph } from '../subgraphs/ai/server.js';
import { aiReadiness } from './readiness-checks.js';

const config = configOrExit(loadAiProcessConfig);
const telemetry = startTelemetry(telemetryOptions(config, 'ai'));
const { platform, redis } = await startOrExit(async () => {
  const platform = await openPlatform(config, 'ai', { migrate: applyMigrations });
  const redis = config.redisUrl
    ? await connectStateRedis(config.redisUrl, { allowEviction: config.redisAllowEviction, logger: platform.logger })
    : undefined;
  return { platform, redis };
});
const db = platform.database.prisma;
await seedBaseline(db, { hostedModel: config.providers.openaiModel, logger: platform.logger });
const metrics = createMetrics();
const server = await startAiSubgraph({
  config,
  db,
  verifier: platform.verifier,
  logger: platform.logger,
  redis,
  metrics,
  readiness: aiReadiness(db, redis),
});
feedAiMetrics(metrics, server.services, db, { clock: server.services.clock });
exitOnSignals(
  platform.logger,
  async () => {
    await server.close();
    redis?.disconnect();
    await platform.database.close();
    await telemetry.shutdown();
  },
  config.ops.shutdownTimeoutMs,
);
