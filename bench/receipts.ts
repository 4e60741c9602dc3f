// Issue 36, item 7: assist throughput with receipts against without, in the same run. Two AI
// service instances on one fresh database (DATABASE_URL), in this process: one signs and chains a
// receipt per record (the default), the other is given a writer that does nothing. Each round runs
// a fixed number of assists at a fixed concurrency through each, alternately (the order flips every
// round), with the mock provider, so what differs is the record stage: lock the tenant's chain head,
// sign (Ed25519), insert the receipt. No HTTP, no GraphQL: the ratio is the worst case, the record
// stage being a larger share of the pipeline than of a request through the gateway.
//   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/test npx tsx bench/receipts.ts
// Variables: BENCH_ROUNDS (default 3), BENCH_RECEIPT_ASSISTS (per round and target, 400),
// BENCH_RECEIPT_CONCURRENCY (32), BENCH_RECEIPT_TENANTS (1: every answer in one chain, the contended case).
import 'reflect-metadata';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { newId, newUlid } from '../platform/ids.js';
import { silentLogger } from '../platform/observability/logger.js';
import { loadSystemConfig } from '../processes/config.js';
import type { AssistCaller } from '../subgraphs/ai/assist/assist.pipeline.js';
import { seedBaseline } from '../subgraphs/ai/seed.js';
import { noReceipts } from '../subgraphs/ai/provenance/receipts/receipt.repo.js';
import { createAiServices, type AiServices } from '../subgraphs/ai/services.js';
import { f, freshDatabase, machine, table } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ASSISTS = Number(process.env.BENCH_RECEIPT_ASSISTS ?? 400);
const CONCURRENCY = Number(process.env.BENCH_RECEIPT_CONCURRENCY ?? 32);
const TENANTS = Number(process.env.BENCH_RECEIPT_TENANTS ?? 1);

const input = {
  featureKey: 'portal.triage',
  variables: { message: 'a headache for two days' },
  context: { facilityId: 'fac-1', specialty: 'general' },
};

function caller(tenantId: string): AssistCaller {
  return {
    tenantId,
    subject: 'svc:bench',
    requestId: newUlid(),
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    locales: ['en'],
    logger: silentLogger,
  };
}

/** `ASSISTS` assists, `CONCURRENCY` at a time, spread over the tenants; answers per second. */
async function run(services: AiServices, tenants: readonly string[]): Promise<number> {
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < ASSISTS) {
      const n = next++;
      const answer = await services.assistPipeline.run(caller(tenants[n % tenants.length]), input);
      if (answer.status !== 'completed') throw new Error(`assist answered ${answer.status}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return ASSISTS / ((performance.now() - started) / 1000);
}

const db = await freshDatabase(16);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-receipts-'));
try {
  const config = loadSystemConfig({ HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
  await seedBaseline(db.prisma, { hostedModel: config.providers.openaiModel, logger: silentLogger });
  const targets = {
    'with receipts': createAiServices({ config, db: db.prisma, logger: silentLogger }),
    'without receipts': createAiServices({ config, db: db.prisma, logger: silentLogger, receipts: noReceipts }),
  };
  const tenants = Array.from({ length: TENANTS }, () => newId('tenant'));
  const rates: Record<string, number[]> = { 'with receipts': [], 'without receipts': [] };
  // Warm-up: JIT, pools, the signing key's provisioning.
  for (const services of Object.values(targets)) await run(services, tenants);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? Object.keys(targets) : Object.keys(targets).reverse();
    for (const name of order) rates[name].push(await run(targets[name as keyof typeof targets], tenants));
  }
  const receipts = await db.prisma.provenanceReceipt.count();
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const without = median(rates['without receipts']);
  console.log(machine());
  console.log(
    `\n${ASSISTS} assists per round and target, ${CONCURRENCY} at a time, ${TENANTS} tenant(s), ${ROUNDS} rounds; ${receipts} receipts written\n`,
  );
  console.log(
    table(
      ['target', '>answers/s per round', '>median', '>vs without'],
      Object.entries(rates).map(([name, values]) => [
        name,
        values.map((v) => f(v, 0)).join(', '),
        f(median(values), 0),
        `${f((median(values) / without - 1) * 100)} %`,
      ]),
    ),
  );
} finally {
  await db.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
