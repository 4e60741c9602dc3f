// bench/receipts-http.ts only: processes/ai.main.ts with receipts switched off, so that the cost of
// receipts is measured through the whole door (HTTP, token, GraphQL, Idempotency-Key) against the
// same process with them. No configuration turns receipts off in the product.
import 'reflect-metadata';
import { createMetrics } from '../platform/observability/metrics.js';
import { loadAiProcessConfig } from '../processes/config.js';
import { opsServerPart, platformPart, redisPart } from '../processes/parts.js';
import { runProcess } from '../processes/run-process.js';
import { aiPart } from '../processes/subgraph-parts.js';
import { noReceipts } from '../subgraphs/ai/provenance/receipts/receipt.repo.js';

await runProcess('ai', loadAiProcessConfig, async (stack, config) => {
  const platform = await platformPart(stack, config, 'ai');
  const metrics = createMetrics();
  const { redis } = await redisPart(stack, config, platform.logger);
  await aiPart(stack, { config, platform, metrics, redis, receipts: noReceipts });
  await opsServerPart(stack, { config, logger: platform.logger, metrics, service: 'ai' });
});
