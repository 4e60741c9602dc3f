// The AI process of processes/ai.main.ts with a receipt writer of the bench's choosing, for the
// entries bench/receipts-http.ts starts beside the real process (no receipts, the signature floor).
// No configuration swaps the writer in the product.
import { createMetrics } from '../platform/observability/metrics.js';
import { loadAiProcessConfig } from '../processes/config.js';
import { opsServerPart, platformPart, redisPart } from '../processes/parts.js';
import { runProcess } from '../processes/run-process.js';
import { aiPart } from '../processes/subgraph-parts.js';
import type { ReceiptWriter } from '../subgraphs/ai/provenance/receipts/receipt.repo.js';

export async function runAiProcessWith(receipts: ReceiptWriter): Promise<void> {
  await runProcess('ai', loadAiProcessConfig, async (stack, config) => {
    const platform = await platformPart(stack, config, 'ai');
    const metrics = createMetrics();
    const { redis } = await redisPart(stack, config, platform.logger);
    await aiPart(stack, { config, platform, metrics, redis, receipts });
    await opsServerPart(stack, { config, logger: platform.logger, metrics, service: 'ai' });
  });
}
