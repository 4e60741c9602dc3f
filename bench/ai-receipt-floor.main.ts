// bench/receipts-http.ts only (BENCH_RECEIPT_TARGETS=...,floor,...): processes/ai.main.ts with the
// receipt floor of bench/receipt-floor.ts instead of receipts (each answer's claims signed, nothing
// written). No configuration does this in the product.
import 'reflect-metadata';
import { createMetrics } from '../platform/observability/metrics.js';
import { loadAiProcessConfig } from '../processes/config.js';
import { opsServerPart, platformPart, redisPart } from '../processes/parts.js';
import { runProcess } from '../processes/run-process.js';
import { aiPart } from '../processes/subgraph-parts.js';
import { signOnlyReceipts } from './receipt-floor.js';

await runProcess('ai', loadAiProcessConfig, async (stack, config) => {
  const platform = await platformPart(stack, config, 'ai');
  const metrics = createMetrics();
  const { redis } = await redisPart(stack, config, platform.logger);
  await aiPart(stack, { config, platform, metrics, redis, receipts: await signOnlyReceipts() });
  await opsServerPart(stack, { config, logger: platform.logger, metrics, service: 'ai' });
});
