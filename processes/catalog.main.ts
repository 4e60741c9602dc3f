// `npm run start:catalog`: the catalog subgraph as its own process (stateless; scale out freely).
import 'reflect-metadata';
import { connectNats } from '../events/bus/create-bus.js';
import { createMetrics } from '../platform/observability/metrics.js';
import { loadCatalogProcessConfig } from './config.js';
import { opsServerPart, platformPart } from './parts.js';
import { catalogPart } from './subgraph-parts.js';
import { runProcess } from './run-process.js';

await runProcess('catalog', loadCatalogProcessConfig, async (stack, config) => {
  const platform = await platformPart(stack, config, 'catalog');
  const metrics = createMetrics();
  // Only replayDeadLetters needs the broker; the embedded in-process bus lives in the worker's
  // process, so a separate catalog process without NATS_URL answers that mutation 503.
  const { natsUrl } = config;
  const bus = natsUrl
    ? await stack.start(
        'bus',
        () => connectNats(natsUrl, platform.logger),
        (b) => b.close(),
      )
    : undefined;
  await catalogPart(stack, { config, platform, metrics, bus });
  // With METRICS_PORT, probes and /metrics are served there (and /metrics no longer on the door).
  await opsServerPart(stack, { config, logger: platform.logger, metrics, service: 'catalog' });
});
