// bench/receipts-http.ts only: processes/ai.main.ts with receipts switched off, so that the cost of
// receipts is measured through the whole door (HTTP, token, GraphQL, Idempotency-Key) against the
// same process with them. No configuration turns receipts off in the product.
import 'reflect-metadata';
import { noReceipts } from '../subgraphs/ai/provenance/receipts/receipt.repo.js';
import { runAiProcessWith } from './ai-process-with.js';

await runAiProcessWith(noReceipts);
