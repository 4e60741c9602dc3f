import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERASED_USER_ID, newId } from '../../../platform/ids.js';
import type { EventEnvelope } from '../../../events/envelope.js';
import { erasureKey } from '../../../subgraphs/catalog/gdpr/redaction.logic.js';
import { stacks } from '../events/helpers.js';
import {
  builtPayload,
  consumedEnvelope,
  draftPayload,
  gdprPayload,
  registry,
  startCatalogHarness,
  type CatalogHarness,
} from './harness.js';

const NAME = 'Ada Lovelace';

describe.each(stacks())('HandleGdprRequest: $name', (stack) => {
  let h: CatalogHarness;
  const tenant = newId('tenant');
  const otherTenant = newId('tenant');
  const ada = newId('user');
  const bob = { userId: newId('user'), role: 'reviewer', displayName: 'Bob' };
  const adaAuthor = { userId: ada, role: 'author', displayName: NAME };

  beforeAll(async () => {
    h = await startCatalogHarness(stack);
    await h.send(consumedEnvelope('draft', draftPayload(tenant, 'open-course', { authors: [adaAuthor, bob] })));
    await h.send(consumedEnvelope('draft', draftPayload(tenant, 'held-course', { authors: [adaAuthor] })));
    await h.send(consumedEnvelope('draft', draftPayload(otherTenant, 'open-course', { authors: [adaAuthor] })));
    await h.settled();
    // A retention class that does not permit zeroing (policy table: only `operational` does).
    await h.db.prisma.course.update({
      where: { tenantId_slug: { tenantId: tenant, slug: 'held-course' } },
      data: { retentionClass: 'legal_hold' },
    });
    // The relay already sent the open course's registration: the archived copy is history too.
    const open = await course(tenant, 'open-course');
    await h.db.prisma.outboxEvent.updateMany({ where: { partitionKey: open.id }, data: { publishedAt: new Date() } });
  });
  afterAll(async () => h?.stop());

  const course = (tenantId: string, slug: string) =>
    h.db.prisma.course.findUniqueOrThrow({ where: { tenantId_slug: { tenantId, slug } } });
  const rowsOf = async (tenantId: string) =>
    (await h.db.prisma.outboxEvent.findMany({ where: { tenantId }, orderBy: { id: 'asc' } })).map((row) => ({
      row,
      envelope: row.envelope as unknown as EventEnvelope,
    }));

  it('redacts display names on access, keeps ids, emits one metadata_updated per course and reaches stored events', async () => {
    const request = consumedEnvelope('gdpr', gdprPayload(tenant, ada, 'access'));
    await h.send(request);
    await h.settled();

    const open = await course(tenant, 'open-course');
    const held = await course(tenant, 'held-course');
    expect(open.authors).toEqual([{ userId: ada, role: 'author', displayName: '[redacted]' }, bob]);
    expect(held.authors).toEqual([{ userId: ada, role: 'author', displayName: '[redacted]' }]);

    const caused = (await rowsOf(tenant)).filter((e) => e.envelope.causationId === request.eventId);
    expect(caused.map((e) => [e.envelope.eventType, e.envelope.partitionKey]).sort()).toEqual(
      [
        ['catalog.course.metadata_updated', open.id],
        ['catalog.course.metadata_updated', held.id],
      ].sort(),
    );
    const forOpen = caused.find((e) => e.envelope.partitionKey === open.id)!.envelope;
    registry.validate(forOpen.eventType, 1, forOpen.payload, 'produce');
    expect(forOpen.payload).toEqual({
      courseId: open.id,
      changedFields: ['authors'],
      // The old values are withheld by design (docs/catalog-and-events.md, GDPR).
      previous: {},
      next: { authors: open.authors },
      etag: open.etag,
    });
    expect(forOpen.actor).toEqual({ type: 'system', id: 'catalog-svc' });

    // Stored history of the tenant, published or not, no longer carries the name.
    const stored = await rowsOf(tenant);
    expect(stored.some((e) => e.row.publishedAt !== null)).toBe(true);
    expect(stored.some((e) => e.row.publishedAt === null && e.envelope.eventType === 'catalog.course.registered')).toBe(true);
    for (const { row } of stored) expect(JSON.stringify(row.envelope)).not.toContain(NAME);
    // The other tenant's course and events are not touched.
    expect((await course(otherTenant, 'open-course')).authors).toEqual([adaAuthor]);
    expect((await rowsOf(otherTenant)).some((e) => JSON.stringify(e.row.envelope).includes(NAME))).toBe(true);
    expect(await h.db.prisma.erasedAuthor.count()).toBe(0);
  });

  it('zeroes the author id on erasure only where the retention class permits, and keeps later authors erased', async () => {
    const heldBefore = await course(tenant, 'held-course');
    const request = consumedEnvelope('gdpr', gdprPayload(tenant, ada, 'erasure'));
    await h.send(request);
    await h.settled();

    const open = await course(tenant, 'open-course');
    expect(open.authors).toEqual([{ userId: ERASED_USER_ID, role: 'author', displayName: '[redacted]' }, bob]);
    const held = await course(tenant, 'held-course');
    expect(held.authors).toEqual(heldBefore.authors);
    expect(held.etag).toBe(heldBefore.etag);
    const caused = (await rowsOf(tenant)).filter((e) => e.envelope.causationId === request.eventId);
    expect(caused.map((e) => e.envelope.partitionKey)).toEqual([open.id]);
    expect(await h.db.prisma.erasedAuthor.findMany({ select: { tenantId: true, userIdSha256: true, userId: true } })).toEqual([
      { tenantId: tenant, userIdSha256: erasureKey(ada), userId: null },
    ]);

    // Stored events under a permitting retention class lose the id in every author entry.
    for (const { envelope } of await rowsOf(tenant)) {
      if (envelope.retentionClass !== 'operational' || envelope.partitionKey !== open.id) continue;
      expect(JSON.stringify(envelope.payload)).not.toContain(ada);
    }

    // A later draft that still lists the erased author by name cannot bring the name back.
    const later = consumedEnvelope(
      'draft',
      draftPayload(tenant, 'open-course', { authors: [adaAuthor, bob], title: { en: 'Open course v2' } }),
      {
        occurredAt: new Date(Date.now() + 60_000).toISOString(),
      },
    );
    await h.send(later);
    await h.settled();
    const after = await course(tenant, 'open-course');
    expect(after.title).toEqual({ en: 'Open course v2' });
    expect(after.authors).toEqual([{ userId: ERASED_USER_ID, role: 'author', displayName: '[redacted]' }, bob]);
    for (const { row } of await rowsOf(tenant)) expect(JSON.stringify(row.envelope)).not.toContain(NAME);
  });

  it('keeps an erased author erased when a package for a new slug lists them', async () => {
    await h.send(consumedEnvelope('built', builtPayload(tenant, 'new-course', '1.0.0', { authors: [adaAuthor] })));
    await h.settled();
    expect((await course(tenant, 'new-course')).authors).toEqual([
      { userId: ERASED_USER_ID, role: 'author', displayName: '[redacted]' },
    ]);
  });

  it('acknowledges and records subjects that are not users and request types it does not know', async () => {
    const before = h.stats();
    const ignored = consumedEnvelope('gdpr', gdprPayload(otherTenant, ada, 'erasure', 'organisation'));
    await h.send(ignored);
    await h.send(consumedEnvelope('gdpr', gdprPayload(otherTenant, ada, 'restriction')));
    await h.settled();
    expect(h.stats().processed).toBe(before.processed + 2);
    expect(h.stats().deadLettered).toBe(before.deadLettered);
    const recorded = await h.db.prisma.gdprRequestNotApplied.findMany({ where: { tenantId: otherTenant } });
    expect(recorded.map((row) => row.reason).sort()).toEqual(['subject_type_not_held', 'unknown_request_type']);
    expect((await course(otherTenant, 'open-course')).authors).toEqual([adaAuthor]);
    expect(await h.db.prisma.inboxEvent.count({ where: { eventId: ignored.eventId } })).toBe(1);
  });
});
