import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventProducer } from '../../../events/publish/outbox.js';
import { loadSchemaRegistry } from '../../../events/schemas/registry.js';
import { systemClock } from '../../../platform/clock.js';
import { ERASED_USER_ID, newId, newUlid } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { applyMigrations } from '../../../prisma/migrate.js';
import { applyMigrationsBefore } from './earlier-migrations.js';
import { completeRecordedErasures } from '../../../subgraphs/catalog/gdpr/subject-copies.js';
import { createCatalogEvents } from '../../../subgraphs/catalog/outbox-port.js';
import { erasureKey } from '../../../subgraphs/catalog/gdpr/redaction.logic.js';
import { courseRow } from '../../support/course-row.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';

const DIGEST_MIGRATION = '20261126100100_erased_author_digest';
const events = createCatalogEvents(
  createEventProducer({
    registry: loadSchemaRegistry(),
    clock: systemClock,
    source: { service: 'catalog', instance: 'test', commit: 'test' },
    dualPublishDays: 30,
  }),
);
const deps = { zeroingClasses: ['operational'], logger: silentLogger, events };

/**
 * An erasure recorded before the catalog reached every copy of the subject zeroed course authors
 * only. After the upgrade the catalog carries it to the other copies (versions, taxonomy
 * versions, stored events) with the retention classes configured now, and the record forgets the
 * id, keeping its digest.
 */
describe.each(databaseKinds())('erasures recorded before every copy was covered, on %s', (kind) => {
  let db: TestDatabase;
  let removeEarlier: (() => void) | undefined;
  const tenant = newId('tenant');
  const w = newId('user');
  const survivor = newId('user');

  beforeAll(async () => {
    db = await createTestDatabase(kind, { migrate: false });
    removeEarlier = await applyMigrationsBefore(db.url, DIGEST_MIGRATION);
    await db.prisma.$executeRawUnsafe(
      `INSERT INTO "ErasedAuthor" ("tenantId", "userId", "requestId") VALUES ('${tenant}', '${w}', 'gdpr-1')`,
    );
    expect(await applyMigrations(db.url)).toContain(DIGEST_MIGRATION);

    // What the erasure left behind before: authors zeroed, every other copy intact.
    const course = courseRow(tenant, { authors: [{ userId: ERASED_USER_ID, role: 'author', displayName: '[redacted]' }] });
    await db.prisma.course.create({ data: course });
    const version = {
      tenantId: tenant,
      courseId: course.id,
      major: 1,
      minor: 0,
      patch: 0,
      durationMinutes: 5,
      locales: ['en'],
      playPackageId: newId('playPackage'),
      playPackageSha256: 'a'.repeat(64),
      playPackageFormat: 'v1',
    };
    await db.prisma.courseVersion.createMany({
      data: [
        { ...version, id: newId('courseVersion'), versionLabel: '1.0.0', sequence: 1, publishedBy: w },
        { ...version, id: newId('courseVersion'), versionLabel: '1.0.1', sequence: 2, publishedBy: survivor },
      ],
    });
    const eventId = newUlid();
    await db.prisma.outboxEvent.create({
      data: {
        eventId,
        eventType: 'catalog.course_version.published',
        eventVersion: 1,
        subject: 'catalog.course_version.published.v1',
        tenantId: tenant,
        partitionKey: course.id,
        envelope: { eventId, actor: { type: 'user', id: w }, retentionClass: 'operational', payload: { publishedBy: w } },
        headers: {},
        publishedAt: new Date(),
      },
    });
  });
  afterAll(async () => {
    await db?.close();
    removeEarlier?.();
  });

  it('keeps the recorded id, beside its digest, until the erasure reached every copy', async () => {
    expect(await db.prisma.erasedAuthor.findMany({ select: { userId: true, userIdSha256: true } })).toEqual([
      { userId: w, userIdSha256: erasureKey(w) },
    ]);
  });

  it('zeroes the versions and stored events, then forgets the id; a second run finds nothing to do', async () => {
    expect(await completeRecordedErasures(db.prisma, deps)).toBe(1);
    const versions = await db.prisma.courseVersion.findMany({ where: { tenantId: tenant }, orderBy: { sequence: 'asc' } });
    expect(versions.map((v) => v.publishedBy)).toEqual([ERASED_USER_ID, survivor]);
    const [stored, redacted] = await db.prisma.outboxEvent.findMany({ where: { tenantId: tenant }, orderBy: { id: 'asc' } });
    expect(stored.envelope).toMatchObject({ actor: { id: ERASED_USER_ID }, payload: { publishedBy: ERASED_USER_ID } });
    // The changed version is announced, in the correlation of the request that recorded the erasure.
    expect(redacted.envelope).toMatchObject({
      eventType: 'catalog.course_version.redacted',
      correlationId: 'gdpr-1',
      partitionKey: versions[0].courseId,
      payload: { courseVersionId: versions[0].id, redactedFields: ['publishedBy'], publishedBy: ERASED_USER_ID },
    });
    expect(await db.prisma.erasedAuthor.findMany({ select: { userId: true, userIdSha256: true } })).toEqual([
      { userId: null, userIdSha256: erasureKey(w) },
    ]);
    expect(await completeRecordedErasures(db.prisma, deps)).toBe(0);
  });
});
