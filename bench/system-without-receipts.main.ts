// bench/assist-ab.ts only (BENCH_AB_DIRS=...=bench/system-without-receipts.main.ts): the whole
// system of `npm start` (processes/system.main.ts) with receipts switched off, so that their cost is
// measured through the door callers use (REST-compat and the gateway in front of the AI subgraph)
// against the same system with them. No configuration turns receipts off in the product.
import 'reflect-metadata';
import { loadSystemConfig } from '../processes/config.js';
import { runProcess } from '../processes/run-process.js';
import { startSystem } from '../processes/system.js';
import { noReceipts } from '../subgraphs/ai/provenance/receipts/receipt.repo.js';

await runProcess('main', loadSystemConfig, async (stack, config) => {
  await startSystem(config, stack, { receipts: noReceipts });
});
