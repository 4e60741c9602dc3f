import { processDataDir } from '../../support/child-env.js';
import fs from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, newUlid } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { loadSystemConfig } from '../../../processes/config.js';
import type { AssistCaller } from '../../../subgraphs/ai/assist/assist.pipeline.js';
import { seedBaseline } from '../../../subgraphs/ai/seed.js';
import { createAiServices, type AiServices } from '../../../subgraphs/ai/services.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';

/**
 * A text the database cannot store (a NUL in a context field) fails its own assist, and only that:
 * the answers after it are recorded as before. On the former embedded database (PGlite behind a
 * socket), a named prepared statement that failed at execution left the connection unable to run
 * that statement again (42P05), so one such request broke every later assist of the process.
 */
describe.each(databaseKinds())('an assist whose text the database cannot store, on %s', (kind) => {
  let db: TestDatabase;
  let dataDir: string;
  let services: AiServices;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    dataDir = processDataDir('unstorable-text-');
    const config = loadSystemConfig({ HOST: '127.0.0.1', DATA_DIR: dataDir, AI_CONFIG_CACHE_MS: '0' });
    await seedBaseline(db.prisma, { hostedModel: config.providers.openaiModel, logger: silentLogger });
    services = createAiServices({ config, db: db.prisma, logger: silentLogger });
  });
  afterAll(async () => {
    await db?.close();
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  });

  const caller = (tenantId: string): AssistCaller => ({
    tenantId,
    subject: 'svc:unstorable',
    requestId: newUlid(),
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    locales: ['en'],
    logger: silentLogger,
  });
  const input = (facilityId: string) => ({
    featureKey: 'portal.triage',
    variables: { message: 'a headache for two days' },
    context: { facilityId, specialty: 'general' },
  });

  it('fails alone; the next answers are recorded', async () => {
    const tenant = newId('tenant');
    expect((await services.assistPipeline.run(caller(tenant), input('fac-before'))).status).toBe('completed');
    await expect(services.assistPipeline.run(caller(tenant), input('fac-\u0000'))).rejects.toThrow(/22P05|Unicode/);
    for (const facility of ['fac-after-1', 'fac-after-2']) {
      expect((await services.assistPipeline.run(caller(tenant), input(facility))).status).toBe('completed');
    }
    const stored = await db.prisma.aIProvenance.findMany({ where: { tenantId: tenant }, select: { facilityId: true } });
    expect(stored.map((row) => row.facilityId).sort()).toEqual(['fac-after-1', 'fac-after-2', 'fac-before']);
  });
});
