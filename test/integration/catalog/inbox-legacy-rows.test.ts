import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventKey } from '../../../events/ledger/event-key.logic.js';
import { inboxHas, recordInbox, settledAmong } from '../../../events/ledger/inbox.js';
import { newId, newUlid } from '../../../platform/ids.js';
import { applyMigrations } from '../../../prisma/migrate.js';
import { applyMigrationsBefore } from './earlier-migrations.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';

const INBOX_TENANT_MIGRATION = '20261126100000_inbox_tenant';
const CONSUMER = 'catalog-svc-course-draft-published';

/**
 * Inbox rows written before the tenant was recorded name no tenant, and nothing in them can say
 * which: after the migration they keep matching their event id in every tenant, so an event the
 * consumer handled before the upgrade is not applied again when it comes back after it.
 */
describe.each(databaseKinds())('inbox rows from before the tenant key on %s', (kind) => {
  let db: TestDatabase;
  let removeEarlier: (() => void) | undefined;
  const legacyId = newUlid();

  beforeAll(async () => {
    db = await createTestDatabase(kind, { migrate: false });
    removeEarlier = await applyMigrationsBefore(db.url, INBOX_TENANT_MIGRATION);
    await db.prisma.$executeRawUnsafe(
      `INSERT INTO "InboxEvent" (consumer, "eventId", subject) VALUES ('${CONSUMER}', '${legacyId}', 'authoring.course_draft.published.v1')`,
    );
    expect(await applyMigrations(db.url)).toContain(INBOX_TENANT_MIGRATION);
  });
  afterAll(async () => {
    await db?.close();
    removeEarlier?.();
  });

  it('keeps the row, with no tenant', async () => {
    expect(await db.prisma.inboxEvent.findMany({ select: { consumer: true, tenantId: true, eventId: true } })).toEqual([
      { consumer: CONSUMER, tenantId: '', eventId: legacyId },
    ]);
  });

  it('treats the old event id as handled in any tenant, and a new id per tenant', async () => {
    const tenant = newId('tenant');
    const subject = 'authoring.course_draft.published.v1';
    expect(await inboxHas(db.prisma, CONSUMER, { tenantId: tenant, eventId: legacyId })).toBe(true);
    const again = await db.prisma.$transaction((tx) =>
      recordInbox(tx, { consumer: CONSUMER, tenantId: tenant, eventId: legacyId, subject }),
    );
    expect(again).toBe(false);

    const fresh = newUlid();
    const other = newId('tenant');
    for (const tenantId of [tenant, other]) {
      const first = await db.prisma.$transaction((tx) =>
        recordInbox(tx, { consumer: CONSUMER, tenantId, eventId: fresh, subject }),
      );
      expect(first, tenantId).toBe(true);
    }
    const { handled } = await settledAmong(
      db.prisma,
      CONSUMER,
      [
        { tenantId: tenant, eventId: legacyId },
        { tenantId: other, eventId: fresh },
        { tenantId: newId('tenant'), eventId: fresh },
      ],
      [],
    );
    expect([...handled].sort()).toEqual(
      [eventKey({ tenantId: tenant, eventId: legacyId }), eventKey({ tenantId: other, eventId: fresh })].sort(),
    );
  });
});
