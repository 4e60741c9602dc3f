import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subjectFor, type EventEnvelope } from '../../../events/envelope.js';
import { mintToken } from '../../../platform/auth/dev-keys.js';
import type { Prisma } from '../../../platform/db/database.js';
import type { Redis } from 'ioredis';
import { effectClaim } from '../../../platform/idempotency/effect.logic.js';
import { scopedKey } from '../../../platform/idempotency/idempotency.logic.js';
import { IDEMPOTENCY_REDIS_PREFIX } from '../../../platform/idempotency/redis-store.js';
import { ERASED_USER_ID, newId, newUlid } from '../../../platform/ids.js';
import { createLogger } from '../../../platform/observability/logger.js';
import { connectRedis } from '../../../platform/redis.js';
import type { System } from '../../../processes/system.js';
import { rowsHolding } from '../../support/database-scan.js';
import { eventually } from '../../support/eventually.js';
import { startTestSystem, type TestSystem } from '../../support/in-process-system.js';
import { consumedEnvelope, CONSUMED_TRACEPARENT, gdprPayload } from '../catalog/harness.js';

/**
 * Issue #33, item 2, the AI side: a GDPR erasure reaches every copy of the subject's id the AI
 * subgraph keeps, within 10 s of the request. A one-process system (its event worker runs the
 * catalog's and the AI's consumers, as in production) holds, in two tenants, the same user as
 * reviewer (claimed, decided, steered, queue member, reject reason), as the caller of assist
 * requests (provenance actor, review facts) and as an admin of the configuration (a routing rule
 * created through the API, with its audit event in the outbox, flags, a HITL policy, a template, an
 * assessment), and as a platform operator who wrote global configuration (no tenant). After tenant
 * A's erasure request, the scan of every table of the database (not a list of known columns, so a
 * new column or table holding the id fails it) finds exactly tenant B's rows, unchanged: the global
 * rows belong to no tenant, so tenant A's request reaches them.
 */
const TENANT_A = newId('tenant');
const TENANT_B = newId('tenant');
/** A tenant whose retention class (`legal_hold`) does not permit zeroing ids (GDPR_ZEROING_RETENTION_CLASSES). */
const TENANT_HELD = newId('tenant');
const SUBJECT = newId('user');
const OTHER = newId('user');
const ERASURE_DEADLINE_MS = 10_000;

/** The tables of the records kept for Idempotency-Key retries (the gateway's and the subgraphs'). */
const IDEMPOTENCY_TABLES = ['IdempotencyRecord', 'IdempotentEffect'];
const redisUrl = process.env.REDIS_URL;

let running: TestSystem;
let system: System;
/** The state Redis the system's gateway keeps its Idempotency-Key records in, with REDIS_URL. */
let stateRedis: Redis | undefined;

/** Per table of the database (but `except`), the rows (as JSON) holding `needle`. */
async function databaseCopies(needle: string, except: readonly string[] = []): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  for (const [table, row] of await rowsHolding(system.platform.database.prisma, [needle], except))
    found.set(table, [...(found.get(table) ?? []), row]);
  return found;
}

/**
 * Records kept for Idempotency-Key retries in the tenant, as the gateway and a subgraph write them:
 * one of the subject's own requests, and one of another caller's whose stored answer quotes the
 * subject (a review the subject decided). In the tables, and in the state Redis with REDIS_URL.
 * The subject's own effect row comes from createRoutingRuleAs. Returns the keys.
 */
async function seedIdempotencyRecords(tenantId: string) {
  const prisma = system.platform.database.prisma;
  const answer = JSON.stringify({ data: { review: { decidedBy: SUBJECT } } });
  const expiresAt = new Date(Date.now() + 3_600_000);
  const own = scopedKey({ tenantId, subject: SUBJECT, route: 'graphql:Decide' }, newUlid());
  const others = scopedKey({ tenantId, subject: OTHER, route: 'graphql:Decide' }, newUlid());
  const record = { fingerprint: 'f', state: 'completed', status: 200, headers: { 'x-decided-by': SUBJECT }, body: answer };
  await prisma.idempotencyRecord.createMany({
    data: [
      { key: own, ...record, expiresAt },
      { key: others, ...record, expiresAt },
    ],
  });
  const othersEffect = effectClaim(
    { tenantId, subject: OTHER, field: 'decideReview', alias: 'decideReview', args: {}, idempotencyKey: newUlid() },
    3600,
  );
  await prisma.idempotentEffect.create({
    data: { key: othersEffect.key, fingerprint: othersEffect.fingerprint, value: { decidedBy: SUBJECT }, expiresAt },
  });
  const redisRecord = JSON.stringify({ fingerprint: 'f', state: 'completed', response: record, expiresAt: expiresAt.getTime() });
  await stateRedis?.set(IDEMPOTENCY_REDIS_PREFIX + own, redisRecord, 'EX', 3600);
  await stateRedis?.set(IDEMPOTENCY_REDIS_PREFIX + others, redisRecord, 'EX', 3600);
  return { own, others, othersEffect: othersEffect.key };
}

/** The state Redis's idempotency records holding `needle`, by key. */
async function redisCopies(needle: string): Promise<string[]> {
  if (!stateRedis) return [];
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await stateRedis.scan(cursor, 'MATCH', `${IDEMPOTENCY_REDIS_PREFIX}*`, 'COUNT', 1000);
    cursor = next;
    const values = keys.length ? await stateRedis.mget(keys) : [];
    keys.forEach((key, i) => {
      if (key.includes(needle) || values[i]?.includes(needle)) found.push(key);
    });
  } while (cursor !== '0');
  return found.sort();
}

const counts = (copies: Map<string, string[]>) =>
  Object.fromEntries(
    [...copies].map(([table, rows]) => [table, rows.length]).sort(([a], [b]) => String(a).localeCompare(String(b))),
  );

/** The subject, as the tenant's AI admin, creates a routing rule: its version's author and the audit event's actor. */
async function createRoutingRuleAs(tenantId: string, userId: string): Promise<string> {
  const admin = await mintToken(running.keys.privateJwk, { sub: userId, tid: tenantId, scope: 'ai.admin' });
  const response = await fetch(system.aiUrl, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${admin}`,
      'x-tenant-id': tenantId,
      'content-type': 'application/json',
      'idempotency-key': newUlid(),
    },
    body: JSON.stringify({
      query:
        'mutation { createRoutingRule(input: { featureKey: "erasure.feature", primary: { provider: "mock", model: "m" }, fallbacks: [] }) { ruleId } }',
    }),
  });
  const body = (await response.json()) as { data?: { createRoutingRule: { ruleId: string } } };
  expect(body.data?.createRoutingRule.ruleId, JSON.stringify(body)).toMatch(/^rtr_/);
  return body.data!.createRoutingRule.ruleId;
}

/** The subject in every AI role, in one tenant; returns the ids of the rows an erasure must change. */
async function seedTenant(tenantId: string) {
  const prisma = system.platform.database.prisma;
  const ruleId = await createRoutingRuleAs(tenantId, SUBJECT);
  const queueId = newId('reviewQueue');
  await prisma.reviewQueue.create({ data: { id: queueId, tenantId, name: 'cardiology', members: [SUBJECT, OTHER] } });
  const provenance = (actorId: string, extra: Partial<Prisma.AIProvenanceUncheckedCreateInput> = {}) => ({
    id: newId('provenance'),
    tenantId,
    actorType: 'user',
    actorId,
    featureKey: 'patient_chart.note_summary',
    status: 'pending_review',
    ...extra,
  });
  const asked = provenance(SUBJECT, { subjectRef: SUBJECT });
  const decided = provenance(OTHER, { status: 'ok', review: { decision: 'rejected', decidedBy: SUBJECT, taskId: 'rvt_x' } });
  const claimed = provenance(OTHER);
  await prisma.aIProvenance.createMany({ data: [asked, decided, claimed] });
  const task = (provenanceId: string, extra: Partial<Prisma.ReviewTaskUncheckedCreateInput>) => ({
    id: newId('reviewTask'),
    tenantId,
    provenanceId,
    queueId,
    featureKey: 'patient_chart.note_summary',
    ...extra,
  });
  const claimedTask = task(claimed.id, { state: 'claimed', claimedBy: SUBJECT, claimExpiresAt: new Date(Date.now() + 60_000) });
  const decidedTask = task(decided.id, {
    state: 'decided',
    decidedBy: SUBJECT,
    decidedAt: new Date(),
    decision: 'rejected',
    reason: `escalated by ${SUBJECT}`,
  });
  const steeredTask = task(asked.id, { steeredBy: [SUBJECT, OTHER] });
  await prisma.reviewTask.createMany({ data: [claimedTask, decidedTask, steeredTask] });
  await prisma.featureFlag.create({
    data: { tenantId, featureKey: '*', flag: 'hitl.enabled', enabled: true, updatedBy: SUBJECT },
  });
  await prisma.featureFlagChange.create({
    data: { tenantId, featureKey: '*', flag: 'hitl.enabled', enabled: true, changedBy: SUBJECT, reason: 'drill' },
  });
  await prisma.hITLPolicy.create({
    data: { id: newId('hitlPolicy'), tenantId, featureKey: 'erasure.feature', mode: 'required', updatedBy: SUBJECT },
  });
  await prisma.promptTemplate.create({
    data: {
      id: newId('promptTemplate'),
      tenantId,
      featureKey: 'erasure.feature',
      version: 1,
      body: 'Summarise {{note}}',
      variables: ['note'],
      hash: 'sha256:' + '0'.repeat(64),
      publishedBy: SUBJECT,
    },
  });
  await prisma.dataProtectionAssessment.create({
    data: {
      id: newId('assessment'),
      tenantId,
      residency: 'AF',
      signedBy: SUBJECT,
      signedAt: new Date(),
      documentHash: 'sha256:' + '1'.repeat(64),
    },
  });
  const idempotency = await seedIdempotencyRecords(tenantId);
  return { ruleId, queueId, claimedTask, decidedTask, steeredTask, asked, decided, idempotency };
}

/**
 * The subject as a platform operator: global configuration (no tenant) it wrote, a routing rule's
 * version, a template and a HITL policy. Any tenant's erasure of the subject reaches these rows.
 */
async function seedGlobal() {
  const prisma = system.platform.database.prisma;
  const ruleId = newId('routingRule');
  await prisma.providerRoutingRule.create({
    data: {
      id: ruleId,
      tenantId: null,
      featureKey: 'erasure.global',
      versions: { create: { version: 1, primary: { provider: 'mock', model: 'm' }, fallbacks: [], createdBy: SUBJECT } },
    },
  });
  const templateId = newId('promptTemplate');
  await prisma.promptTemplate.create({
    data: {
      id: templateId,
      tenantId: null,
      featureKey: 'erasure.global',
      version: 1,
      body: 'Summarise {{note}}',
      variables: ['note'],
      hash: 'sha256:' + '2'.repeat(64),
      publishedBy: SUBJECT,
    },
  });
  const policyId = newId('hitlPolicy');
  await prisma.hITLPolicy.create({
    data: { id: policyId, tenantId: null, featureKey: 'erasure.global', mode: 'required', updatedBy: SUBJECT },
  });
  return { ruleId, templateId, policyId };
}

async function send(envelope: EventEnvelope) {
  await system.bus.publish(subjectFor(envelope.eventType, envelope.eventVersion), Buffer.from(JSON.stringify(envelope)), {
    msgId: envelope.eventId,
    headers: { traceparent: CONSUMED_TRACEPARENT, 'Content-Type': 'application/json' },
  });
}

beforeAll(async () => {
  running = await startTestSystem('ai-gdpr-erasure', redisUrl ? { REDIS_URL: redisUrl } : {});
  system = running.system;
  if (redisUrl) stateRedis = await connectRedis(redisUrl, createLogger({ level: 'silent' }));
}, 120_000);

afterAll(async () => {
  stateRedis?.disconnect();
  await running?.stop();
});

describe('a GDPR erasure reaches every copy the AI subgraph keeps', () => {
  it("zeroes the subject's id in every row of the request's tenant within 10 s, and leaves the other tenant's", async () => {
    const prisma = system.platform.database.prisma;
    await seedTenant(TENANT_B);
    const tenantBOnly = counts(await databaseCopies(SUBJECT));
    const tenantBInRedis = await redisCopies(SUBJECT);
    const global = await seedGlobal();
    const a = await seedTenant(TENANT_A);
    const before = counts(await databaseCopies(SUBJECT));
    // Every AI table the subject's id is in holds tenant A's copies too: the scan finds them while they are there.
    for (const table of [
      'AIProvenance',
      'ReviewTask',
      'ReviewQueue',
      'ProviderRoutingRuleVersion',
      'FeatureFlag',
      'FeatureFlagChange',
      'HITLPolicy',
      'PromptTemplate',
      'DataProtectionAssessment',
      'OutboxEvent',
      ...IDEMPOTENCY_TABLES,
    ]) {
      expect(before[table], table).toBeGreaterThan(tenantBOnly[table] ?? 0);
    }

    const erasedAt = Date.now();
    await send(consumedEnvelope('gdpr', gdprPayload(TENANT_A, SUBJECT, 'erasure')));
    await eventually(
      async () => {
        const after = await databaseCopies(SUBJECT);
        // Exactly tenant B's copies are left, whatever table or column they sit in.
        expect(counts(after)).toEqual(tenantBOnly);
        const erasedHere = [TENANT_A, a.ruleId, global.ruleId, global.templateId, global.policyId];
        const leftInA = [...after].flatMap(([table, rows]) =>
          rows.filter((row) => erasedHere.some((id) => row.includes(id))).map((row) => `${table} ${row}`),
        );
        expect(leftInA).toEqual([]);
        // The state Redis's records too: tenant B's are left, unchanged.
        expect(await redisCopies(SUBJECT)).toEqual(tenantBInRedis);
      },
      'no row of tenant A holding the erased id',
      { timeoutMs: ERASURE_DEADLINE_MS - (Date.now() - erasedAt) },
    );
    expect(Date.now() - erasedAt, 'within 10 s of the request').toBeLessThanOrEqual(ERASURE_DEADLINE_MS);

    // The zero id stands where the subject was; the queue keeps its other member, the task its other steerer.
    const tasks = await prisma.reviewTask.findMany({
      where: { id: { in: [a.claimedTask.id, a.decidedTask.id, a.steeredTask.id] } },
    });
    const byId = new Map(tasks.map((task) => [task.id, task]));
    expect(byId.get(a.claimedTask.id)?.claimedBy).toBe(ERASED_USER_ID);
    expect(byId.get(a.decidedTask.id)).toMatchObject({ decidedBy: ERASED_USER_ID, reason: `escalated by ${ERASED_USER_ID}` });
    expect(byId.get(a.steeredTask.id)?.steeredBy).toEqual([ERASED_USER_ID, OTHER]);
    expect((await prisma.reviewQueue.findUnique({ where: { id: a.queueId } }))?.members).toEqual([OTHER]);
    const provenance = await prisma.aIProvenance.findMany({ where: { id: { in: [a.asked.id, a.decided.id] } } });
    expect(
      provenance.map((row) => [row.actorId, (row.review as { decidedBy?: string } | null)?.decidedBy ?? null]).sort(),
    ).toEqual(
      [
        [ERASED_USER_ID, null],
        [OTHER, ERASED_USER_ID],
      ].sort(),
    );
    // The global configuration the subject wrote as a platform operator names the zero id.
    expect(
      [
        (await prisma.providerRoutingRuleVersion.findFirst({ where: { ruleId: global.ruleId } }))?.createdBy,
        (await prisma.promptTemplate.findUnique({ where: { id: global.templateId } }))?.publishedBy,
        (await prisma.hITLPolicy.findUnique({ where: { id: global.policyId } }))?.updatedBy,
      ],
      'global rows',
    ).toEqual([ERASED_USER_ID, ERASED_USER_ID, ERASED_USER_ID]);
    // The subject's own Idempotency-Key records are gone; another caller's keeps answering its
    // retry, with the zero id where its stored answer quoted the subject.
    expect(await prisma.idempotencyRecord.findUnique({ where: { key: a.idempotency.own } })).toBeNull();
    const others = await prisma.idempotencyRecord.findUnique({ where: { key: a.idempotency.others } });
    expect([others?.body, others?.headers]).toEqual([
      JSON.stringify({ data: { review: { decidedBy: ERASED_USER_ID } } }),
      { 'x-decided-by': ERASED_USER_ID },
    ]);
    expect((await prisma.idempotentEffect.findUnique({ where: { key: a.idempotency.othersEffect } }))?.value).toEqual({
      decidedBy: ERASED_USER_ID,
    });
    if (stateRedis) {
      expect(await stateRedis.get(IDEMPOTENCY_REDIS_PREFIX + a.idempotency.own)).toBeNull();
      expect(await stateRedis.get(IDEMPOTENCY_REDIS_PREFIX + a.idempotency.others)).toContain(ERASED_USER_ID);
      expect(await stateRedis.ttl(IDEMPOTENCY_REDIS_PREFIX + a.idempotency.others)).toBeGreaterThan(0);
    }
    // Tenant B's reviewer still holds its claim: its rows are not the request's.
    const stillClaimed = await prisma.reviewTask.count({ where: { tenantId: TENANT_B, claimedBy: SUBJECT } });
    expect(stillClaimed).toBe(1);
  });

  it("keeps the ids where the tenant's retention class does not permit zeroing them, but not in answers kept for retries", async () => {
    const prisma = system.platform.database.prisma;
    await prisma.tenantSettings.create({ data: { tenantId: TENANT_HELD, retentionClass: 'legal_hold' } });
    await seedTenant(TENANT_HELD);
    const before = counts(await databaseCopies(SUBJECT, IDEMPOTENCY_TABLES));
    const inIdempotencyTables = async () =>
      [...(await databaseCopies(SUBJECT))]
        .filter(([table]) => IDEMPOTENCY_TABLES.includes(table))
        .flatMap(([, rows]) => rows)
        .filter((row) => row.includes(TENANT_HELD));
    expect(await inIdempotencyTables()).toHaveLength(4);
    const request = consumedEnvelope('gdpr', gdprPayload(TENANT_HELD, SUBJECT, 'erasure'));
    await send(request);
    // Handled (its inbox row commits with whatever it changed), and nothing changed.
    await eventually(
      async () =>
        expect(
          await prisma.inboxEvent.count({
            where: { consumer: 'ai-svc-gdpr-subject-request', tenantId: TENANT_HELD, eventId: request.eventId },
          }),
        ).toBe(1),
      'the AI consumer handled the request',
    );
    expect(counts(await databaseCopies(SUBJECT, IDEMPOTENCY_TABLES))).toEqual(before);
    expect(await prisma.reviewTask.count({ where: { tenantId: TENANT_HELD, claimedBy: SUBJECT } })).toBe(1);
    // Copies of answers kept for a day are not the records a retention class protects.
    expect(await inIdempotencyTables()).toEqual([]);
  });
});
