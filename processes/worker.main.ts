// `npm run start:worker`: the event worker as its own process — the outbox relay (which publishes
// every service's outbox rows, the AI audit events included), the catalog's durable consumers and
// the DLQ monitor. Replicas are safe: consumers share durables, and only one relay holds the lock.
import 'reflect-metadata';
import { createEventBus } from '../events/bus/create-bus.js';
import { startEventWorker } from '../events/worker.js';
import { applyMigrations } from '../prisma/migrate.js';
import { openPlatform } from '../platform/bootstrap.js';
import { isAppError } from '../platform/errors.js';
import { loadWorkerProcessConfig } from './config.js';
import { configOrExit, exitOnSignals, startOrExit } from '../platform/entrypoint.js';
import { feedWorkerMetrics } from '../events/worker-metrics.js';
import { createMetrics } from '../platform/metrics.js';
import { startOpsServer } from '../platform/http/ops-server.js';
import { workerReadiness } from './readiness-checks.js';
import { startTelemetry, telemetryOptions } from '../platform/telemetry.js';
import { catalogConsumers } from '../subgraphs/catalog/consumers.js';

const config = configOrExit(loadWorkerProcessConfig);
const telemetry = startTelemetry(telemetryOptions(config, 'worker'));
const { platform, bus } = await startOrExit(async () => {
  const platform = await openPlatform(config, 'worker', { migrate: applyMigrations });
  if (!config.natsUrl) {
    platform.logger.warn('NATS_URL is not set: this worker uses an in-process bus no other process can reach');
  }
  return { platform, bus: await createEventBus(config, platform.logger) };
});
const worker = await startEventWorker({
  bus,
  db: platform.database.prisma,
  logger: platform.logger,
  config,
  consumers: catalogConsumers({ events: config.events, gdprZeroingRetentionClasses: config.gdprZeroingRetentionClasses }),
}).catch(async (error: unknown) => {
  // A producer's stream not there yet is an operator's matter, not a crash: one line naming it.
  if (!isAppError(error) || error.code !== 'events.stream_missing') throw error;
  console.error(error.message);
  await bus.close().catch(() => undefined);
  await platform.database.close().catch(() => undefined);
  process.exit(1);
});
const metrics = createMetrics();
feedWorkerMetrics(metrics, worker, { db: platform.database.prisma, deadLetterStream: config.events.dlqStream });
const metricsServer = await startOpsServer({
  service: 'worker',
  host: config.host,
  port: config.ops.metricsPort,
  logger: platform.logger,
  metrics,
  readiness: workerReadiness(platform.database.prisma, bus, config.events.dlqStream, () => worker),
});
exitOnSignals(
  platform.logger,
  async () => {
    await worker.stop();
    await bus.close();
    await metricsServer.close();
    await platform.database.close();
    await telemetry.shutdown();
  },
  config.ops.shutdownTimeoutMs,
);
