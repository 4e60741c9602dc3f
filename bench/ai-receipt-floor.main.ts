// bench/receipts-http.ts only (BENCH_RECEIPT_TARGETS=...,floor,...): processes/ai.main.ts with the
// receipt floor of bench/receipt-floor.ts instead of receipts (each answer's claims signed, nothing
// written). No configuration does this in the product.
import 'reflect-metadata';
import { runAiProcessWith } from './ai-process-with.js';
import { signOnlyReceipts } from './receipt-floor.js';

await runAiProcessWith(await signOnlyReceipts());
