import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeInbox } from '../../../events/ledger/inbox.js';
import { purgeArchive } from '../../../events/archive/outbox-archive.js';
import { createRetentionJob } from '../../../events/archive/retention.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';

/** The event tables' retention: what is past the archive horizon goes, in batches; nothing else. */
describe.each(databaseKinds())('event retention on %s', (kind) => {
  let db: TestDatabase;
  const now = new Date('2026-11-21T12:00:00Z');
  const day = 24 * 3_600_000;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });
  afterAll(async () => {
    await db?.close();
  });

  async function outbox(tenantId: string, publishedAt: Date | null, createdAt = new Date('2020-01-01T00:00:00Z')) {
    const eventId = newId('event');
    await db.prisma.outboxEvent.create({
      data: {
        eventId,
        eventType: 'catalog.course.archived',
        eventVersion: 1,
        subject: 'catalog.course.archived.v1',
        tenantId,
        partitionKey: tenantId,
        envelope: {},
        headers: {},
        createdAt,
        publishedAt,
      },
    });
    return eventId;
  }
  const retentionJob = () =>
    createRetentionJob({ db: db.prisma, clock: { now: () => now }, logger: silentLogger, archiveMonths: 13, intervalMs: 60_000 });
  async function inbox(consumer: string, processedAt: Date) {
    const eventId = newId('event');
    await db.prisma.inboxEvent.create({ data: { consumer, eventId, subject: 's', processedAt } });
    return eventId;
  }

  it('purgeArchive deletes published rows older than the horizon in batches, never an unpublished one', async () => {
    const tenantId = newId('tenant');
    const old = [];
    for (let i = 0; i < 5; i++) old.push(await outbox(tenantId, new Date('2025-09-01T00:00:00Z')));
    const recent = await outbox(tenantId, new Date('2025-11-22T00:00:00Z'));
    const unpublished = await outbox(tenantId, null);
    // Batches of 2: three statements for the five old rows.
    expect(await purgeArchive(db.prisma, now, 13, 2)).toBe(5);
    const left = await db.prisma.outboxEvent.findMany({ where: { tenantId }, select: { eventId: true } });
    expect(left.map((r) => r.eventId).sort()).toEqual([recent, unpublished].sort());
  });

  it('purgeInbox deletes rows processed before the cutoff, in batches', async () => {
    const consumer = `c-${newId('event')}`;
    for (let i = 0; i < 5; i++) await inbox(consumer, new Date('2025-01-01T00:00:00Z'));
    const kept = await inbox(consumer, new Date('2025-12-01T00:00:00Z'));
    expect(await purgeInbox(db.prisma, new Date('2025-06-01T00:00:00Z'), 2)).toBe(5);
    const left = await db.prisma.inboxEvent.findMany({ where: { consumer }, select: { eventId: true } });
    expect(left.map((r) => r.eventId)).toEqual([kept]);
  });

  it('the worker job keeps an inbox row a day longer than the archive row of its event', async () => {
    const tenantId = newId('tenant');
    const consumer = `c-${newId('event')}`;
    const horizon = new Date('2025-10-21T12:00:00Z'); // 13 months before `now`
    const archived = await outbox(tenantId, new Date(horizon.getTime() - 1000));
    const beyondMargin = await inbox(consumer, new Date(horizon.getTime() - day - 1000));
    const withinMargin = await inbox(consumer, new Date(horizon.getTime() - 1000));
    const job = retentionJob();
    const purged = await job.runOnce();
    expect(purged.archive).toBeGreaterThanOrEqual(1);
    expect(await db.prisma.outboxEvent.count({ where: { eventId: archived } })).toBe(0);
    const left = await db.prisma.inboxEvent.findMany({ where: { consumer }, select: { eventId: true } });
    expect(left.map((r) => r.eventId)).toEqual([withinMargin]);
    expect(left.map((r) => r.eventId)).not.toContain(beyondMargin);
  });

  it('start runs a pass at once and stop waits for it', async () => {
    const tenantId = newId('tenant');
    const archived = await outbox(tenantId, new Date('2024-01-01T00:00:00Z'));
    const job = retentionJob();
    job.start();
    await job.stop();
    expect(await db.prisma.outboxEvent.count({ where: { eventId: archived } })).toBe(0);
  });
});
