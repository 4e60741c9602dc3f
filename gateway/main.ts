// `npm run start:gateway`: the gateway (with the REST-compat layer) as its own process, calling the
// subgraphs at CATALOG_URL and AI_URL.
import 'reflect-metadata';
import { openPlatform } from '../platform/bootstrap.js';
import { configOrExit, exitOnSignals } from '../platform/entrypoint.js';
import { createMetrics } from '../platform/metrics.js';
import { createRedis } from '../platform/redis.js';
import { createRestCompat } from '../rest-compat/wire.js';
import { startTelemetry, telemetryOptions } from '../platform/telemetry.js';
import { gatewayOpsFromConfig } from './ops.js';
import { startGateway, type ReadinessReport } from './server.js';

const config = configOrExit();
const telemetry = startTelemetry(telemetryOptions(config, 'gateway'));
const platform = await openPlatform(config, 'gateway');
const subgraphUrls = { catalog: config.catalogUrl, ai: config.aiUrl };
// Persisted queries and Idempotency-Key records are shared between gateway replicas through Redis
// when there is one (else idempotency records live in the database table).
const redis = config.redisUrl ? createRedis(config.redisUrl, platform.logger) : undefined;

async function readiness(): Promise<ReadinessReport> {
  const checks: ReadinessReport['checks'] = {};
  // The gateway's own database holds Idempotency-Key records when there is no Redis.
  const database = await platform.database.prisma.$queryRawUnsafe('SELECT 1').then(
    () => true,
    () => false,
  );
  checks.database = { status: database ? 'up' : 'down', required: !redis };
  for (const [name, url] of Object.entries(subgraphUrls)) {
    const health = new URL('/healthz', url);
    const ok = await fetch(health, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false,
    );
    // A subgraph being down degrades the graph (its fields error) but does not stop the gateway.
    checks[`subgraph:${name}`] = { status: ok ? 'up' : 'down', required: false };
  }
  return { ready: Object.values(checks).every((c) => c.status !== 'down' || !c.required), checks };
}

const gateway = await startGateway({
  host: config.host,
  port: config.port,
  subgraphUrls,
  verifier: platform.verifier,
  logger: platform.logger,
  maxBodyBytes: config.maxBodyBytes,
  readiness,
  ops: gatewayOpsFromConfig(config, { metrics: createMetrics(), redis }),
  ...createRestCompat({ config, redis, db: platform.database.prisma, logger: platform.logger, aiUrl: config.aiUrl }),
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
