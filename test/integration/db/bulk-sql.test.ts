import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outboxInsertSql, type OutboxRow } from '../../../events/publish/outbox.js';
import { Prisma } from '../../../platform/db/database.js';
import { newId } from '../../../platform/ids.js';
import type { ProvenanceRecord } from '../../../subgraphs/ai/provenance/provenance.logic.js';
import { provenanceInsertSql } from '../../../subgraphs/ai/provenance/provenance.repo.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';

/**
 * The one-statement writes (platform/db/bulk-sql.ts) against the real tables: every column a
 * record sets reads back through Prisma exactly as given (NULLs of every type, JSON, instants in a
 * session whose TimeZone is not UTC), and rows keep their order in the sequence.
 */
describe.each(databaseKinds())('one-statement inserts on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });
  afterAll(async () => {
    await db?.close();
  });

  const record = (overrides: Partial<ProvenanceRecord> = {}): ProvenanceRecord => ({
    id: newId('provenance'),
    tenantId: newId('tenant'),
    actorType: 'service',
    actorId: 'svc-consumer',
    featureKey: 'portal.triage',
    status: 'completed',
    mode: 'live',
    templateId: newId('promptTemplate'),
    templateVersion: 3,
    templateHash: 'sha256:aa',
    renderedPromptHash: 'sha256:bb',
    ruleId: null,
    ruleVersion: null,
    provider: 'mock',
    model: 'mock-1',
    attempts: [{ provider: 'mock', model: 'mock-1', attempt: 1, outcome: 'ok', latencyMs: 0, errorCode: null }],
    outputHash: 'sha256:cc',
    inputTokens: 12,
    outputTokens: null,
    moderation: null,
    reviewState: null,
    facilityId: 'fac-1',
    specialty: 'gp',
    subjectRef: null,
    residency: null,
    heldText: 'held "quoted" text ✓',
    heldTextExpiresAt: new Date('2026-11-22T23:59:59.999Z'),
    errorCode: null,
    latencyMs: 7,
    providerLatencyMs: 0,
    createdAt: new Date('2026-11-21T08:00:00.123Z'),
    completedAt: new Date('2026-11-21T08:00:00.456Z'),
    ...overrides,
  });

  it('writes every column of a provenance record as Prisma reads it back, whatever the session TimeZone', async () => {
    const given = record({ moderation: { required: true, input: { flagged: false } } });
    await db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SET LOCAL TIME ZONE 'America/New_York'`);
      await tx.$executeRaw(provenanceInsertSql([given]));
    });
    const stored = await db.prisma.aIProvenance.findUniqueOrThrow({ where: { id: given.id } });
    expect(stored).toMatchObject(given);
    // Columns the record does not set keep their defaults.
    expect(stored).toMatchObject({ legacyBackfill: false, legacyId: null, review: null });
  });

  it('writes nothing when its condition is false', async () => {
    const given = record();
    await db.prisma.$executeRaw(provenanceInsertSql([given], Prisma.sql`false`));
    expect(await db.prisma.aIProvenance.count({ where: { id: given.id } })).toBe(0);
  });

  it('keeps the order of outbox rows in their ids (publish order)', async () => {
    const tenantId = newId('tenant');
    const rows: OutboxRow[] = Array.from({ length: 25 }, (_, i) => ({
      eventId: newId('event'),
      eventType: 'audit.ai.assist',
      eventVersion: 1,
      subject: 'audit.ai.assist.v1',
      tenantId,
      partitionKey: tenantId,
      envelope: { n: i } as never,
      headers: { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` },
    }));
    await db.prisma.$executeRaw(outboxInsertSql(rows));
    const stored = await db.prisma.outboxEvent.findMany({ where: { tenantId }, orderBy: { id: 'asc' } });
    expect(stored.map((row) => row.eventId)).toEqual(rows.map((row) => row.eventId));
    expect(stored.map((row) => row.envelope)).toEqual(rows.map((row) => row.envelope));
  });
});
