import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, newUlid } from '../../../platform/ids.js';
import type { EventEnvelope } from '../../../events/envelope.js';
import { stacks } from '../events/helpers.js';
import { builtPayload, consumedEnvelope, draftPayload, startCatalogHarness, type CatalogHarness } from './harness.js';

/**
 * Producers choose event ids, and two tenants' producers can choose the same one: the inbox is
 * keyed by (consumer, tenant, event id), so each is its own event, while a repeat within a tenant
 * stays a duplicate.
 */
describe.each(stacks())('inbox per tenant: $name', (stack) => {
  let h: CatalogHarness;
  beforeAll(async () => {
    h = await startCatalogHarness(stack);
  });
  afterAll(async () => h?.stop());

  const withEventId = (envelope: EventEnvelope, eventId: string): EventEnvelope => ({ ...envelope, eventId });
  const courseOf = (tenantId: string, slug: string) =>
    h.db.prisma.course.findUnique({ where: { tenantId_slug: { tenantId, slug } } });

  it('handles one event id in two tenants as two draft events, and a repeat within a tenant once', async () => {
    const [a, b] = [newId('tenant'), newId('tenant')];
    const eventId = newUlid();
    const before = h.stats();
    await h.send(withEventId(consumedEnvelope('draft', draftPayload(a, 'shared-id')), eventId));
    await h.send(withEventId(consumedEnvelope('draft', draftPayload(b, 'shared-id')), eventId));
    await h.settled();
    expect(await courseOf(a, 'shared-id')).not.toBeNull();
    expect(await courseOf(b, 'shared-id')).not.toBeNull();
    expect(h.stats().processed - before.processed).toBe(2);

    await h.send(withEventId(consumedEnvelope('draft', draftPayload(a, 'shared-id', { title: { en: 'again' } })), eventId));
    await h.settled();
    expect(h.stats().duplicates - before.duplicates).toBe(1);
    expect((await courseOf(a, 'shared-id'))!.title).toEqual({ en: 'shared-id (draft)' });
    expect(
      (await h.db.prisma.inboxEvent.findMany({ where: { eventId }, select: { tenantId: true } })).map((r) => r.tenantId).sort(),
    ).toEqual([a, b].sort());
  });

  it('handles one event id in two tenants as two built events when they arrive in one batch', async () => {
    const [a, b] = [newId('tenant'), newId('tenant')];
    const eventId = newUlid();
    const before = h.stats();
    const first = await h.send(withEventId(consumedEnvelope('built', builtPayload(a, 'batched', '1.0.0')), eventId));
    await h.send(withEventId(consumedEnvelope('built', builtPayload(b, 'batched', '1.0.0')), eventId));
    await h.send(first);
    await h.settled();
    expect(h.stats().processed - before.processed).toBe(2);
    expect(h.stats().duplicates - before.duplicates).toBe(1);
    for (const tenantId of [a, b]) {
      const course = await courseOf(tenantId, 'batched');
      expect(course, tenantId).not.toBeNull();
      const versions = await h.db.prisma.courseVersion.findMany({ where: { courseId: course!.id } });
      expect(versions.map((v) => v.versionLabel)).toEqual(['1.0.0']);
    }
  });
});
