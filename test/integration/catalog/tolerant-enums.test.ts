import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventEnvelope } from '../../../events/envelope.js';
import { systemClock } from '../../../platform/clock.js';
import { newId, newUlid } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { createMetrics } from '../../../platform/observability/metrics.js';
import { feedCatalogMetrics } from '../../../subgraphs/catalog/metrics.js';
import { createCatalogEvents } from '../../../subgraphs/catalog/outbox-port.js';
import { releaseHeldPlayPackages } from '../../../subgraphs/catalog/use-cases/release-held-packages.js';
import { stacks } from '../events/helpers.js';
import {
  catalogProducer,
  consumedEnvelope,
  fixtureEnvelope,
  gdprPayload,
  startCatalogHarness,
  type CatalogHarness,
} from './harness.js';

type Payload = Record<string, unknown>;

/** A fixture (exactly the spec's fields) of `tenantId`, with a new event id and some payload fields replaced. */
function fixtureWith(kind: 'built' | 'gdpr', tenantId: string, change: (payload: Payload) => Payload): EventEnvelope {
  const envelope = fixtureEnvelope(kind, tenantId);
  return { ...envelope, eventId: newUlid(), payload: change(structuredClone(envelope.payload) as Payload) };
}
const withFormat = (format: unknown) => (p: Payload) => ({ ...p, playPackage: { ...(p.playPackage as Payload), format } });

/**
 * The spec's versioning table: "Enum widening: minor; consumers must tolerate unknown enum values".
 * An unknown GDPR request type is acknowledged, recorded and counted; a play package of an unknown
 * format is held until the catalog knows the format. Values that cannot be enum values at all are
 * still dead-lettered. (The harness plays a build that publishes only v1, so a v2 package is one of
 * an unknown format that a later build knows.)
 */
describe.each(stacks())('tolerant reading of enums: $name', (stack) => {
  let h: CatalogHarness;
  beforeAll(async () => {
    h = await startCatalogHarness(stack, { playPackageFormats: ['v1'] });
  });
  afterAll(async () => h?.stop());

  it('acknowledges and records a GDPR request of an unknown type, and counts it', async () => {
    const tenantId = newId('tenant');
    const before = h.stats();
    const restriction = fixtureWith('gdpr', tenantId, (p) => ({ ...p, requestType: 'restriction' }));
    await h.send(restriction);
    await h.settled();
    expect(h.stats().deadLettered).toBe(before.deadLettered);
    expect(h.stats().processed).toBe(before.processed + 1);
    expect(await h.db.prisma.gdprRequestNotApplied.findMany({ where: { tenantId } })).toEqual([
      expect.objectContaining({
        eventId: restriction.eventId,
        requestId: restriction.payload.requestId,
        reason: 'unknown_request_type',
        requestType: 'restriction',
        subjectType: 'user',
      }),
    ]);
    // The record is no copy of the subject.
    const [row] = await h.db.prisma.gdprRequestNotApplied.findMany({ where: { tenantId } });
    expect(JSON.stringify(row)).not.toContain(String(restriction.payload.subjectId));

    const metrics = createMetrics();
    const stop = feedCatalogMetrics(metrics, h.db.prisma, { cacheMs: 0 });
    const text = (await metrics.render()).body;
    stop();
    expect(text).toMatch(/^catalog_gdpr_requests_not_applied\{reason="unknown_request_type"\} [1-9]\d*$/m);
    expect(text).toMatch(/^catalog_gdpr_requests_not_applied\{reason="subject_not_a_user_id"\} \d+$/m);
  });

  it('dead-letters a GDPR request type that is no enum value (empty, not a string)', async () => {
    const tenantId = newId('tenant');
    const before = h.stats();
    await h.send(fixtureWith('gdpr', tenantId, (p) => ({ ...p, requestType: '' })));
    await h.send(fixtureWith('gdpr', tenantId, (p) => ({ ...p, requestType: 42 })));
    await h.settled();
    expect(h.stats().deadLettered).toBe(before.deadLettered + 2);
    expect(await h.db.prisma.gdprRequestNotApplied.count({ where: { tenantId } })).toBe(0);
  });

  it('holds a package of an unknown format: nothing registered or published, nothing dead-lettered', async () => {
    const tenantId = newId('tenant');
    const before = h.stats();
    const v2 = fixtureWith('built', tenantId, withFormat('v2'));
    await h.send(v2);
    await h.settled();
    expect(h.stats().deadLettered).toBe(before.deadLettered);
    expect(await h.db.prisma.course.count({ where: { tenantId } })).toBe(0);
    expect(await h.db.prisma.outboxEvent.count({ where: { tenantId } })).toBe(0);
    expect(await h.db.prisma.heldPlayPackage.findMany({ where: { tenantId }, select: { eventId: true, format: true } })).toEqual([
      { eventId: v2.eventId, format: 'v2' },
    ]);
    expect(await h.db.prisma.inboxEvent.count({ where: { tenantId, eventId: v2.eventId } })).toBe(1);
  });

  it('dead-letters a package format that is no enum value', async () => {
    const tenantId = newId('tenant');
    const before = h.stats();
    for (const format of ['', 'v 3', 3]) await h.send(fixtureWith('built', tenantId, withFormat(format)));
    await h.settled();
    expect(h.stats().deadLettered).toBe(before.deadLettered + 3);
    expect(await h.db.prisma.heldPlayPackage.count({ where: { tenantId } })).toBe(0);
  });

  it('redacts a held package on erasure and publishes it, erased, once a build knows its format', async () => {
    const tenantId = newId('tenant');
    const held = fixtureWith('built', tenantId, withFormat('v2'));
    const [, author] = held.payload.authors as Array<{ userId: string; displayName: string }>;
    await h.send(held);
    await h.send(consumedEnvelope('gdpr', gdprPayload(tenantId, author.userId, 'erasure')));
    await h.settled();
    const [stored] = await h.db.prisma.heldPlayPackage.findMany({ where: { tenantId } });
    expect(JSON.stringify(stored.envelope)).not.toContain(author.userId);
    expect(JSON.stringify(stored.envelope)).not.toContain(author.displayName);

    const events = createCatalogEvents(catalogProducer());
    const release = (formats: string[]) =>
      releaseHeldPlayPackages({
        db: h.db.prisma,
        events,
        logger: silentLogger,
        clock: systemClock,
        gdprZeroingRetentionClasses: ['operational'],
        playPackageFormats: formats,
      });
    // A build that still knows only v1 releases nothing.
    expect(await release(['v1'])).toEqual({ released: 0, failed: 0 });
    const result = await release(['v1', 'v2']);
    expect(result.failed).toBe(0);
    expect(result.released).toBeGreaterThanOrEqual(1);

    expect(await h.db.prisma.heldPlayPackage.count({ where: { tenantId } })).toBe(0);
    const course = await h.db.prisma.course.findUniqueOrThrow({
      where: { tenantId_slug: { tenantId, slug: String(held.payload.slug) } },
    });
    const [version] = await h.db.prisma.courseVersion.findMany({ where: { courseId: course.id } });
    expect(version).toMatchObject({ versionLabel: '1.0.0', playPackageFormat: 'v2', sourceEventId: held.eventId });
    const rows = await h.db.prisma.outboxEvent.findMany({ where: { tenantId }, orderBy: { id: 'asc' } });
    expect(rows.map((row) => row.eventType)).toEqual(['catalog.course.registered', 'catalog.course_version.published']);
    for (const row of rows) {
      expect(row.envelope).toMatchObject({ causationId: held.eventId, correlationId: held.correlationId });
      expect(JSON.stringify(row.envelope)).not.toContain(author.userId);
      expect(JSON.stringify(row.envelope)).not.toContain(author.displayName);
    }
  });
});
