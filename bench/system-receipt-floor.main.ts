// bench/assist-ab.ts only (BENCH_AB_DIRS=...=bench/system-receipt-floor.main.ts): the whole system of
// `npm start` with the receipt floor of bench/receipt-floor.ts instead of receipts (each answer's
// claims signed, nothing written). No configuration does this in the product.
import 'reflect-metadata';
import { loadSystemConfig } from '../processes/config.js';
import { runProcess } from '../processes/run-process.js';
import { startSystem } from '../processes/system.js';
import { signOnlyReceipts } from './receipt-floor.js';

await runProcess('main', loadSystemConfig, async (stack, config) => {
  await startSystem(config, stack, { receipts: await signOnlyReceipts() });
});
