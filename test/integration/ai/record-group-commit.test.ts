import { processDataDir } from '../../support/child-env.js';
import fs from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../platform/db/database.js';
import { sqlStateOf } from '../../../platform/db/unreachable.js';
import { effectClaim, type EffectClaim } from '../../../platform/idempotency/effect.logic.js';
import { newId, newUlid } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { loadSystemConfig } from '../../../processes/config.js';
import type { AssistCaller, AssistOutput } from '../../../subgraphs/ai/assist/assist.pipeline.js';
import { seedBaseline } from '../../../subgraphs/ai/seed.js';
import { createAiServices, type AiServices } from '../../../subgraphs/ai/services.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';

/**
 * Group commit of assist's records on a real database: concurrent answers' provenance, audit and
 * keyed-effect rows share statements, and still every answer is released only once its rows are
 * committed ("answered ⇒ recorded"). The database client is wrapped to count the record
 * statements (and those taken back because a key was held) and, where a test says so, to fail them.
 */
// Every statement that records an assist (before the group commit: assist_record, assist_record_keyed).
const RECORD_STATEMENT = 'prepared:assist_record';

describe.each(databaseKinds())('assist records of concurrent answers share their commits on %s', (kind) => {
  let db: TestDatabase;
  let dataDir: string;
  let services: AiServices;
  const statements = { count: 0, failNext: 0, transactions: 0, aborted: 0 };

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    dataDir = processDataDir('record-group-commit-');
    const config = loadSystemConfig({ HOST: '127.0.0.1', DATA_DIR: dataDir, AI_CONFIG_CACHE_MS: '0' });
    await seedBaseline(db.prisma, { hostedModel: config.providers.openaiModel, logger: silentLogger });
    services = createAiServices({ config, db: countingDb(db.prisma, statements), logger: silentLogger });
  });
  afterAll(async () => {
    await db?.close();
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  });

  const caller = (tenantId: string, effect?: EffectClaim): AssistCaller => ({
    tenantId,
    subject: 'svc:group-commit',
    requestId: newUlid(),
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    locales: ['en'],
    logger: silentLogger,
    effect,
  });
  const input = (facilityId = 'fac-1') => ({
    featureKey: 'portal.triage',
    variables: { message: 'a headache for two days' },
    context: { facilityId, specialty: 'general' },
  });
  const keyed = (tenantId: string, key = newUlid()) =>
    effectClaim(
      { tenantId, subject: 'svc:group-commit', field: 'assist', alias: 'assist', args: { input: input() }, idempotencyKey: key },
      3600,
    );
  const rows = async (tenantId: string) => ({
    provenance: await db.prisma.aIProvenance.count({ where: { tenantId } }),
    audit: await db.prisma.outboxEvent.count({ where: { tenantId, eventType: 'audit.ai.assist' } }),
  });

  it('records 20 concurrent answers in fewer statements than answers, every answer with its rows', async () => {
    const tenant = newId('tenant');
    const claims = Array.from({ length: 20 }, () => keyed(tenant));
    const before = statements.count;
    const answers = await Promise.all(claims.map((claim) => services.assistPipeline.run(caller(tenant, claim), input())));
    const used = statements.count - before;
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill('completed'));
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThan(20);
    expect(await rows(tenant)).toEqual({ provenance: 20, audit: 20 });
    const effects = await db.prisma.idempotentEffect.findMany({ where: { key: { in: claims.map((claim) => claim.key) } } });
    expect(effects).toHaveLength(20);
    // Each answer under its own key: what a retry gets is that answer's own provenance id.
    const recorded = new Map(
      effects.map((effect) => [effect.key, (effect.value as unknown as { output: AssistOutput }).output.provenanceId]),
    );
    expect(claims.map((claim) => recorded.get(claim.key))).toEqual(answers.map((answer) => answer.provenanceId));
  });

  it("records a tenant's answers and their receipts in one statement each, without a transaction, once the replica knows its chain head", async () => {
    const tenant = newId('tenant');
    // The first answer learns the head under its lock (a transaction); the next ones sign against it.
    expect((await services.assistPipeline.run(caller(tenant), input())).status).toBe('completed');
    const before = { ...statements };
    for (let i = 0; i < 3; i++) expect((await services.assistPipeline.run(caller(tenant), input())).status).toBe('completed');
    expect(statements.transactions - before.transactions).toBe(0);
    expect(statements.count - before.count).toBe(3);
    expect(await rows(tenant)).toEqual({ provenance: 4, audit: 4 });
    const receipts = await db.prisma.provenanceReceipt.findMany({ where: { tenantId: tenant }, orderBy: { seq: 'asc' } });
    expect(receipts.map((receipt) => receipt.seq)).toEqual([1, 2, 3, 4]);
    const head = await db.prisma.receiptChainHead.findUniqueOrThrow({ where: { tenantId: tenant } });
    expect(head).toMatchObject({ seq: 4, hash: expect.stringMatching(/^sha256:/) });
  });

  // Every caller of the door sends an Idempotency-Key: before, every keyed answer took the locking
  // transaction (five round trips with the tenant's head locked), bench/receipts-http.ts.
  it("records a tenant's keyed answers and their receipts in one statement each, without a transaction, once the replica knows its chain head", async () => {
    const tenant = newId('tenant');
    expect((await services.assistPipeline.run(caller(tenant, keyed(tenant)), input())).status).toBe('completed');
    const before = { ...statements };
    const claims = Array.from({ length: 3 }, () => keyed(tenant));
    for (const claim of claims)
      expect((await services.assistPipeline.run(caller(tenant, claim), input())).status).toBe('completed');
    expect(statements.transactions - before.transactions).toBe(0);
    expect(statements.count - before.count).toBe(3);
    expect(await rows(tenant)).toEqual({ provenance: 4, audit: 4 });
    expect(await db.prisma.idempotentEffect.count({ where: { key: { in: claims.map((claim) => claim.key) } } })).toBe(3);
    const receipts = await db.prisma.provenanceReceipt.findMany({ where: { tenantId: tenant }, orderBy: { seq: 'asc' } });
    expect(receipts.map((receipt) => receipt.seq)).toEqual([1, 2, 3, 4]);
  });

  it("takes back the whole statement of a batch in which another execution holds a key: that answer gets the holder's, the others are recorded, the chain has no gap", async () => {
    const tenant = newId('tenant');
    // The replica learns the tenant's head, so the next batches go to the one statement.
    expect((await services.assistPipeline.run(caller(tenant), input())).status).toBe('completed');
    const before = statements.aborted;
    // Two executions under one key never share a batch: the second one's batch finds the key held.
    const heldKey = newUlid();
    const claims = [keyed(tenant, heldKey), keyed(tenant, heldKey), ...Array.from({ length: 4 }, () => keyed(tenant))];
    const answers = await Promise.all(claims.map((claim) => services.assistPipeline.run(caller(tenant, claim), input())));
    expect(statements.aborted - before).toBeGreaterThan(0);
    expect(answers[1]!.provenanceId).toBe(answers[0]!.provenanceId);
    expect(new Set(answers.map((answer) => answer.provenanceId)).size).toBe(5);
    expect(await rows(tenant)).toEqual({ provenance: 6, audit: 6 });
    const receipts = await db.prisma.provenanceReceipt.findMany({ where: { tenantId: tenant }, orderBy: { seq: 'asc' } });
    expect(receipts.map((receipt) => receipt.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    const provenanceIds = await db.prisma.aIProvenance.findMany({ where: { tenantId: tenant }, select: { id: true } });
    expect(new Set(receipts.map((receipt) => receipt.provenanceId))).toEqual(new Set(provenanceIds.map((row) => row.id)));
    // No effect row without its answer's provenance row.
    const effects = await db.prisma.idempotentEffect.findMany({ where: { key: { in: claims.map((claim) => claim.key) } } });
    expect(effects).toHaveLength(5);
    for (const effect of effects) {
      const recorded = (effect.value as unknown as { output: AssistOutput }).output.provenanceId;
      expect(provenanceIds.map((row) => row.id)).toContain(recorded);
    }
  });

  it('answers two concurrent executions under one key with one recorded answer, the other one its copy', async () => {
    const tenant = newId('tenant');
    const key = newUlid();
    const [first, second, other] = await Promise.all([
      services.assistPipeline.run(caller(tenant, keyed(tenant, key)), input()),
      services.assistPipeline.run(caller(tenant, keyed(tenant, key)), input()),
      services.assistPipeline.run(caller(tenant, keyed(tenant)), input()),
    ]);
    expect(second.provenanceId).toBe(first.provenanceId);
    expect(other.provenanceId).not.toBe(first.provenanceId);
    expect(await rows(tenant)).toEqual({ provenance: 2, audit: 2 });
  });

  it('fails every answer of a group commit the database fails, and records none of them', async () => {
    const tenant = newId('tenant');
    // The statement of the batch and then each answer's own statement: the database refuses all.
    statements.failNext = 1000;
    try {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 8 }, () => services.assistPipeline.run(caller(tenant, keyed(tenant)), input())),
      );
      expect(outcomes.map((outcome) => outcome.status)).toEqual(Array(8).fill('rejected'));
    } finally {
      statements.failNext = 0;
    }
    expect(await rows(tenant)).toEqual({ provenance: 0, audit: 0 });
    expect((await services.assistPipeline.run(caller(tenant, keyed(tenant)), input())).status).toBe('completed');
  });

  it('fails only the answer whose row the database cannot store; the answers batched with it are recorded', async () => {
    const tenant = newId('tenant');
    const facilities = ['fac-a', 'fac-\u0000-nul', 'fac-c', 'fac-d', 'fac-e', 'fac-f'];
    const outcomes = await Promise.allSettled(
      facilities.map((facility) => services.assistPipeline.run(caller(tenant), input(facility))),
    );
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
    const stored = await db.prisma.aIProvenance.findMany({ where: { tenantId: tenant }, select: { facilityId: true } });
    expect(stored.map((row) => row.facilityId).sort()).toEqual(['fac-a', 'fac-c', 'fac-d', 'fac-e', 'fac-f']);
  });
});

/**
 * The client, counting assist's record statements and failing the next `failNext` of them, and the
 * transactions opened; the client of a transaction it opens counts too.
 */
function countingDb(prisma: Db, statements: { count: number; failNext: number; transactions: number; aborted: number }): Db {
  return new Proxy(prisma, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (property === '$transaction' && typeof value === 'function') {
        return (work: unknown, ...rest: unknown[]) =>
          ++statements.transactions && typeof work === 'function'
            ? (value as (...args: unknown[]) => unknown).call(target, (tx: Db) => work(countingDb(tx, statements)), ...rest)
            : (value as (...args: unknown[]) => unknown).call(target, work, ...rest);
      }
      if (property !== '$queryRaw' || typeof value !== 'function') {
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      }
      return (query: { sql?: string; strings?: readonly string[] }, ...rest: unknown[]) => {
        const text = query.sql ?? query.strings?.join('?') ?? '';
        if (text.includes(RECORD_STATEMENT)) {
          statements.count += 1;
          if (statements.failNext > 0) {
            statements.failNext -= 1;
            return Promise.reject(new Error('connection terminated unexpectedly'));
          }
        }
        const result = (value as (...args: unknown[]) => unknown).call(target, query, ...rest) as Promise<unknown>;
        if (!text.includes(RECORD_STATEMENT)) return result;
        return result.catch((error: unknown) => {
          if (sqlStateOf(error) === '22012') statements.aborted += 1;
          throw error;
        });
      };
    },
  });
}
