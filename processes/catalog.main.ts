// `npm run start:catalog`: the catalog subgraph as its own process (stateless; scale out freely).
import 'reflect-metadata';
import { connectNats } from '../events/bus/create-bus.js';
import { applyMigrations } from '../prisma/migrate.js';
import { openPlatform } from '../platform/bootstrap.js';
import { loadCatalogProcessConfig } from './config.js';
import { configOrExit, exitOnSignals, startOrExit } from '../platform/entrypoint.js';
import { createMetrics } from '../platform/metrics.js';
import { startTelemetry, telemetryOptions } from '../platform/telemetry.js';
import { startCatalogSubgraph } from '../subgraphs/catalog/server.js';
import { catalogReadiness } from './readiness-checks.js';

const config = configOrExit(loadCatalogProcessConfig);
const telemetry = startTelemetry(telemetryOptions(config, 'catalog'));
const { platform, bus } = await startOrExit(async () => {
  const platform = await openPlatform(config, 'catalog', { migrate: applyMigrations });
  // Only replayDeadLetters needs the broker; the embedded in-process bus lives in the worker's
  // process, so a separate catalog process without NATS_URL answers that mutation 503.
  const bus = config.natsUrl ? await connectNats(config.natsUrl, platform.logger) : undefined;
  return { platform, bus };
});
const server = await startCatalogSubgraph({
  config,
  db: platform.database.prisma,
  verifier: platform.verifier,
  logger: platform.logger,
  bus,
  metrics: createMetrics(),
  readiness: catalogReadiness(platform.database.prisma, bus, config.events.dlqStream),
});
exitOnSignals(
  platform.logger,
  async () => {
    await server.close();
    await bus?.close();
    await platform.database.close();
    await telemetry.shutdown();
  },
  config.ops.shutdownTimeoutMs,
);
