// `npm run start:ai`: the AI subgraph as its own process (stateless; quotas live in Redis, rules and
// provenance in the database, so replicas scale out freely). The /v1/ai/health endpoint is served here.
import 'reflect-metadata';
import { openPlatform } from '../../platform/bootstrap.js';
import { configOrExit, exitOnSignals } from '../../platform/entrypoint.js';
import { serverOpsFromConfig } from '../../platform/http/observed-server.js';
import { createMetrics } from '../../platform/metrics.js';
import { startTelemetry, telemetryOptions } from '../../platform/telemetry.js';
import { feedAiMetrics } from './ops-metrics.js';
import { createRedis } from '../../platform/redis.js';
import { seedBaseline } from './seed.js';
import { startAiSubgraph } from './server.js';

const config = configOrExit();
const telemetry = startTelemetry(telemetryOptions(config, 'ai'));
const platform = await openPlatform(config, 'ai');
const db = platform.database.prisma;
await seedBaseline(db, { hostedModel: config.providers.openaiModel, logger: platform.logger });
const redis = config.redisUrl ? createRedis(config.redisUrl, platform.logger) : undefined;
const metrics = createMetrics();
const server = await startAiSubgraph({
  config,
  db,
  verifier: platform.verifier,
  logger: platform.logger,
  redis,
  metrics,
  ops: serverOpsFromConfig(config, metrics),
});
feedAiMetrics(metrics, server.services, db);
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
