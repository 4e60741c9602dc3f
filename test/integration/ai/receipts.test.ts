import fs from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, newUlid } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { loadSystemConfig } from '../../../processes/config.js';
import type { AssistCaller } from '../../../subgraphs/ai/assist/assist.pipeline.js';
import { exportChain } from '../../../subgraphs/ai/provenance/receipts/receipt-export.js';
import { signCanonical } from '../../../subgraphs/ai/provenance/receipts/receipt.sign.js';
import { BREAK_CODES, verifyExport, type Break } from '../../../subgraphs/ai/provenance/receipts/verify-receipts.js';
import { seedBaseline } from '../../../subgraphs/ai/seed.js';
import { createAiServices, secretStoreFromConfig, type AiServices } from '../../../subgraphs/ai/services.js';
import { SecretStoreError, type SecretStore } from '../../../subgraphs/ai/vault/secrets.js';
import { processDataDir } from '../../support/child-env.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';
import { testKey } from '../../support/receipt-chain.js';

/**
 * Receipts on a real database: two AI replicas (two service instances on one database and one
 * vault, each with its own group commit and key cache) answering 50 assists at once leave one
 * linear chain; tampering with the stored chain or its export is caught with its own code.
 */
describe.each(databaseKinds())('provenance receipts on %s', (kind) => {
  let db: TestDatabase;
  let dataDir: string;
  let replicas: AiServices[];
  const range = { from: new Date(0), to: new Date('2100-01-01T00:00:00Z') };

  const replica = (config: ReturnType<typeof loadSystemConfig>, secretStore?: SecretStore) =>
    createAiServices({ config, db: db.prisma, logger: silentLogger, secretStore });

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    dataDir = processDataDir('receipts-');
    const config = loadSystemConfig({ HOST: '127.0.0.1', DATA_DIR: dataDir, AI_CONFIG_CACHE_MS: '0', VAULT_CACHE_SECONDS: '0' });
    await seedBaseline(db.prisma, { hostedModel: config.providers.openaiModel, logger: silentLogger });
    replicas = [replica(config), replica(config)];
  });
  afterAll(async () => {
    await db?.close();
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  });

  const caller = (tenantId: string): AssistCaller => ({
    tenantId,
    subject: 'svc:receipts',
    requestId: newUlid(),
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    locales: ['en'],
    logger: silentLogger,
  });
  const input = {
    featureKey: 'portal.triage',
    variables: { message: 'a headache for two days' },
    context: { facilityId: 'fac-1', specialty: 'general' },
  };
  /** `count` assists at once, alternating between the replicas. */
  const assists = (tenantId: string, count: number) =>
    Promise.all(
      Array.from({ length: count }, (_, i) => replicas[i % replicas.length].assistPipeline.run(caller(tenantId), input)),
    );
  const exported = (tenantId: string) =>
    exportChain({ db: db.prisma, keys: replicas[0].receiptKeys, clock: replicas[0].clock }, tenantId, range);
  const jwks = () => replicas[1].receiptKeys.jwks();
  const verdict = async (tenantId: string) => verifyExport(await exported(tenantId), await jwks());

  it('keeps one linear chain per tenant with 2 replicas and 50 concurrent assists', async () => {
    const tenant = newId('tenant');
    const other = newId('tenant');
    const [answers] = await Promise.all([assists(tenant, 50), assists(other, 10)]);
    expect(answers.map((answer) => answer.status)).toEqual(Array(50).fill('completed'));
    const receipts = await db.prisma.provenanceReceipt.findMany({ where: { tenantId: tenant }, orderBy: { seq: 'asc' } });
    expect(receipts.map((receipt) => receipt.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(new Set(receipts.map((receipt) => receipt.provenanceId))).toEqual(
      new Set(answers.map((answer) => answer.provenanceId)),
    );
    const head = await db.prisma.receiptChainHead.findUniqueOrThrow({ where: { tenantId: tenant } });
    const result = await verdict(tenant);
    expect(result).toMatchObject({ ok: true, count: 50, firstSeq: 1, lastSeq: 50, headHash: head.hash });
    expect(await verdict(other)).toMatchObject({ ok: true, count: 10, lastSeq: 10 });
  });

  it('falls back to the lock when another replica moved the head a replica remembers, and the chain stays one line', async () => {
    const tenant = newId('tenant');
    // Each replica's next answer is signed against the head it wrote last, which the other one has
    // moved since: that statement writes nothing, and the answer is recorded under the head's lock.
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await replicas[i % 2].assistPipeline.run(caller(tenant), input));
    expect(answers.map((answer) => answer.status)).toEqual(Array(6).fill('completed'));
    expect(await db.prisma.aIProvenance.count({ where: { tenantId: tenant } })).toBe(6);
    const receipts = await db.prisma.provenanceReceipt.findMany({ where: { tenantId: tenant }, orderBy: { seq: 'asc' } });
    expect(receipts.map((receipt) => receipt.provenanceId)).toEqual(answers.map((answer) => answer.provenanceId));
    expect(await verdict(tenant)).toMatchObject({ ok: true, count: 6, firstSeq: 1, lastSeq: 6 });
  });

  async function tamperedChain(tamper: (tenantId: string) => Promise<unknown>): Promise<Break> {
    const tenant = newId('tenant');
    await assists(tenant, 5);
    expect((await verdict(tenant)).ok).toBe(true);
    await tamper(tenant);
    const result = await verdict(tenant);
    if (result.ok) throw new Error('the tampered chain verified');
    return result;
  }

  it('catches an edited provenance row', async () => {
    const found = await tamperedChain(async (tenantId) => {
      const receipt = await db.prisma.provenanceReceipt.findUniqueOrThrow({ where: { tenantId_seq: { tenantId, seq: 3 } } });
      await db.prisma.aIProvenance.update({ where: { id: receipt.provenanceId }, data: { model: 'another-model' } });
    });
    expect(found).toMatchObject({ code: BREAK_CODES.recordMismatch, seq: 3 });
  });

  it('catches a deleted receipt', async () => {
    const found = await tamperedChain((tenantId) =>
      db.prisma.provenanceReceipt.delete({ where: { tenantId_seq: { tenantId, seq: 3 } } }),
    );
    expect(found).toMatchObject({ code: BREAK_CODES.gap, seq: 4 });
  });

  it('catches two reordered receipts', async () => {
    const found = await tamperedChain(async (tenantId) => {
      const swap = (from: number, to: number) =>
        db.prisma.provenanceReceipt.update({ where: { tenantId_seq: { tenantId, seq: from } }, data: { seq: to } });
      await swap(2, 100);
      await swap(3, 2);
      await swap(100, 3);
    });
    expect(found).toMatchObject({ code: BREAK_CODES.reordered, seq: 3 });
  });

  it('catches a receipt re-signed with an unknown key', async () => {
    const intruder = await testKey('k-intruder');
    const found = await tamperedChain(async (tenantId) => {
      const where = { tenantId_seq: { tenantId, seq: 2 } };
      const receipt = await db.prisma.provenanceReceipt.findUniqueOrThrow({ where });
      const claims = JSON.parse(Buffer.from(receipt.jws.split('.')[1], 'base64url').toString());
      await db.prisma.provenanceReceipt.update({
        where,
        data: { jws: await signCanonical({ ...claims, model: 'other' }, intruder) },
      });
    });
    expect(found).toMatchObject({ code: BREAK_CODES.unknownKid, seq: 2 });
  });

  it('catches a truncated export', async () => {
    const tenant = newId('tenant');
    await assists(tenant, 5);
    const lines = await exported(tenant);
    expect(await verifyExport(lines.slice(0, -2), await jwks())).toMatchObject({ ok: false, code: BREAK_CODES.truncated });
  });

  it('rotates the signing key: new receipts name the new kid, old ones still verify', async () => {
    const tenant = newId('tenant');
    await assists(tenant, 2);
    const { kid } = await replicas[0].receiptKeys.rotate();
    await assists(tenant, 2);
    const kids = (await db.prisma.provenanceReceipt.findMany({ where: { tenantId: tenant }, orderBy: { seq: 'asc' } })).map(
      (r) => r.kid,
    );
    expect(kids.slice(2)).toEqual([kid, kid]);
    expect(kids[0]).not.toBe(kid);
    expect((await jwks()).keys.map((key) => key.kid)).toEqual(expect.arrayContaining([kids[0], kid]));
    expect(await verdict(tenant)).toMatchObject({ ok: true, count: 4 });
  });

  it('chains shadow answers and backfilled records with the live ones, each naming its event', async () => {
    const tenant = newId('tenant');
    await assists(tenant, 1);
    const shadow = await replicas[1].assistPipeline.run(caller(tenant), { ...input, mode: 'shadow' });
    const admin = { tenantId: tenant, subject: 'usr_admin', requestId: newUlid(), traceparent: caller(tenant).traceparent };
    const legacy = (legacyId: string) => ({
      legacyId,
      featureKey: 'patient_chart.note_summary',
      createdAt: new Date('2025-06-01T10:00:00Z'),
      actorId: 'chart-service',
      outputHash: `sha256:${'1'.repeat(64)}`,
      facilityId: 'fac-1',
      specialty: 'general',
    });
    expect((await replicas[0].backfill.backfill(admin, [legacy('L-1'), legacy('L-2')])).created).toBe(2);
    const receipts = await db.prisma.provenanceReceipt.findMany({ where: { tenantId: tenant }, orderBy: { seq: 'asc' } });
    expect(receipts.map((receipt) => receipt.event)).toEqual(['assist', 'shadow', 'backfill', 'backfill']);
    expect(receipts[1].provenanceId).toBe(shadow.provenanceId);
    expect(await verdict(tenant)).toMatchObject({ ok: true, count: 4 });
  });

  it('gives a review decision a receipt of its own, naming the reviewer by pseudonym only', async () => {
    const tenant = newId('tenant');
    const admin = { tenantId: tenant, subject: 'usr_admin', requestId: newUlid(), traceparent: caller(tenant).traceparent };
    const reviewer = { ...admin, subject: 'usr_dr_jones', canAdminister: false };
    const review = replicas[0].review;
    await review.setPolicy(admin, 'portal.triage', 'required');
    await review.createQueue(admin, { name: 'triage', facilityId: 'fac-1', specialty: 'general', members: [reviewer.subject] });
    const held = await replicas[1].assistPipeline.run(caller(tenant), input);
    expect(held.status).toBe('pending_review');
    await review.claim(reviewer, held.reviewTaskId!);
    await review.approve(reviewer, held.reviewTaskId!);
    const receipts = await db.prisma.provenanceReceipt.findMany({ where: { tenantId: tenant }, orderBy: { seq: 'asc' } });
    expect(receipts.map((receipt) => [receipt.event, receipt.provenanceId])).toEqual([
      ['assist', held.provenanceId],
      ['review', held.provenanceId],
    ]);
    const claims = JSON.parse(Buffer.from(receipts[1].jws.split('.')[1], 'base64url').toString());
    expect(claims.review).toMatchObject({
      state: 'approved',
      decision: 'approved',
      reviewer: expect.stringMatching(/^hmac-sha256:/),
    });
    expect(JSON.stringify(claims)).not.toContain('usr_dr_jones');
    expect(await verdict(tenant)).toMatchObject({ ok: true, count: 2 });
  });

  it('gives an output that expires unreviewed a review receipt', async () => {
    const tenant = newId('tenant');
    const admin = { tenantId: tenant, subject: 'usr_admin', requestId: newUlid(), traceparent: caller(tenant).traceparent };
    await replicas[0].review.setPolicy(admin, 'portal.triage', 'required');
    const held = await replicas[0].assistPipeline.run(caller(tenant), input);
    await db.prisma.aIProvenance.update({ where: { id: held.provenanceId }, data: { heldTextExpiresAt: new Date(0) } });
    expect(await replicas[0].purgeHeldText()).toBeGreaterThanOrEqual(1);
    const receipts = await db.prisma.provenanceReceipt.findMany({ where: { tenantId: tenant }, orderBy: { seq: 'asc' } });
    expect(receipts.map((receipt) => receipt.event)).toEqual(['assist', 'review']);
    const claims = JSON.parse(Buffer.from(receipts[1].jws.split('.')[1], 'base64url').toString());
    expect(claims).toMatchObject({ status: 'rejected', review: { state: 'expired', decision: null, reviewer: null } });
    expect(await verdict(tenant)).toMatchObject({ ok: true, count: 2 });
  });

  it('records no answer when its receipt cannot be signed', async () => {
    const broken: SecretStore = {
      kind: 'vault',
      read: async () => {
        throw new SecretStoreError('vault unreachable');
      },
    };
    const config = loadSystemConfig({ HOST: '127.0.0.1', DATA_DIR: dataDir, AI_CONFIG_CACHE_MS: '0', VAULT_CACHE_SECONDS: '0' });
    const unsigned = replica(config, broken);
    const tenant = newId('tenant');
    await expect(unsigned.assistPipeline.run(caller(tenant), input)).rejects.toMatchObject({
      code: 'receipt.signing_unavailable',
    });
    expect(await db.prisma.aIProvenance.count({ where: { tenantId: tenant } })).toBe(0);
    expect(await db.prisma.provenanceReceipt.count({ where: { tenantId: tenant } })).toBe(0);
  });
  it('records no answer when signing fails on the road that signs before the statement', async () => {
    const config = loadSystemConfig({ HOST: '127.0.0.1', DATA_DIR: dataDir, AI_CONFIG_CACHE_MS: '0', VAULT_CACHE_SECONDS: '0' });
    const vault = secretStoreFromConfig(config);
    const outage = { on: false };
    const flaky: SecretStore = {
      ...vault,
      read: async (path) => {
        if (outage.on) throw new SecretStoreError('vault unreachable');
        return vault.read(path);
      },
    };
    const signer = replica(config, flaky);
    const tenant = newId('tenant');
    // The first answer teaches the replica its head, so the second is signed before its statement.
    expect((await signer.assistPipeline.run(caller(tenant), input)).status).toBe('completed');
    outage.on = true;
    await expect(signer.assistPipeline.run(caller(tenant), input)).rejects.toMatchObject({
      code: 'receipt.signing_unavailable',
    });
    expect(await db.prisma.aIProvenance.count({ where: { tenantId: tenant } })).toBe(1);
    expect(await db.prisma.provenanceReceipt.count({ where: { tenantId: tenant } })).toBe(1);
    outage.on = false;
    expect((await signer.assistPipeline.run(caller(tenant), input)).status).toBe('completed');
    expect(await verdict(tenant)).toMatchObject({ ok: true, count: 2, lastSeq: 2 });
  });
});
