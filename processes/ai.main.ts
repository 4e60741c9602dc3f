// `npm run start:ai`: the AI subgraph as its own process (stateless; quotas live in Redis, rules and
// provenance in the database, so replicas scale out freely). The /v1/ai/health endpoint is served here.
import 'reflect-metadata';
import { createMetrics } from '../platform/observability/metrics.js';
import { loadAiProcessConfig } from './config.js';
import { opsServerPart, platformPart, redisPart } from './parts.js';
import { aiPart } from './subgraph-parts.js';
import { runProcess } from './run-process.js';

await runProcess('ai', loadAiProcessConfig, async (stack, config) => {
  const platform = await platformPart(stack, config, 'ai');
  const metrics = createMetrics();
  const { redis } = await redisPart(stack, config, platform.logger);
  await aiPart(stack, { config, platform, metrics, redis });
  // With METRICS_PORT, probes and /metrics are served there (and /metrics no longer on the door).
  await opsServerPart(stack, { config, logger: platform.logger, metrics, service: 'ai' });
});
