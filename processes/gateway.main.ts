// `npm run start:gateway`: the gateway (with the REST-compat layer) as its own process, calling the
// subgraphs at CATALOG_URL and AI_URL.
import 'reflect-metadata';
import { createMetrics } from '../platform/observability/metrics.js';
import { loadGatewayProcessConfig } from './gateway.config.js';
import { cacheFeedPart, gatewayPart, opsServerPart, platformPart, redisPart } from './parts.js';
import { runProcess } from './run-process.js';

await runProcess('gateway', loadGatewayProcessConfig, async (stack, config) => {
  const platform = await platformPart(stack, config, 'gateway');
  const metrics = createMetrics();
  const { redis, cacheRedis } = await redisPart(stack, config, platform.logger);
  const catalogEvents = await cacheFeedPart(stack, config, platform.logger);
  await gatewayPart(stack, {
    config,
    platform,
    metrics,
    redis,
    cacheRedis,
    subgraphUrls: { catalog: config.catalogUrls, ai: config.aiUrls },
    catalogEvents,
  });
  // With METRICS_PORT, probes and /metrics are served there (and /metrics no longer on the door).
  await opsServerPart(stack, { config, logger: platform.logger, metrics, service: 'gateway' });
});
