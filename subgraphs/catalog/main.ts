// `npm run start:catalog`: the catalog subgraph as its own process (stateless; scale out freely).
import 'reflect-metadata';
import { connectJetStreamBus } from '../../events/bus/jetstream-bus.js';
import { openPlatform } from '../../platform/bootstrap.js';
import { configOrExit, exitOnSignals } from '../../platform/entrypoint.js';
import { serverOpsFromConfig } from '../../platform/http/observed-server.js';
import { createMetrics } from '../../platform/metrics.js';
import { startTelemetry, telemetryOptions } from '../../platform/telemetry.js';
import { startCatalogSubgraph } from './server.js';

const config = configOrExit();
const telemetry = startTelemetry(telemetryOptions(config, 'catalog'));
const platform = await openPlatform(config, 'catalog');
// Only replayDeadLetters needs the broker; the embedded in-process bus lives in the worker's
// process, so a separate catalog process without NATS_URL answers that mutation 503.
const bus = config.natsUrl ? await connectJetStreamBus(config.natsUrl, { logger: platform.logger }) : undefined;
const server = await startCatalogSubgraph({
  config,
  db: platform.database.prisma,
  verifier: platform.verifier,
  logger: platform.logger,
  bus,
  ops: serverOpsFromConfig(config, createMetrics()),
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
