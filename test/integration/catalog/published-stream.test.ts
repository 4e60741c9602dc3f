import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSystemConfig } from '../../../processes/config.js';
import { systemClock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { createInProcessBus } from '../../../events/bus/in-process-bus.js';
import type { EventEnvelope } from '../../../events/envelope.js';
import { createOutboxRelay } from '../../../events/publish/outbox-relay.js';
import { ensureStreams } from '../../../events/streams.js';
import { createCatalogEvents } from '../../../subgraphs/catalog/outbox-port.js';
import { publishCourseVersion } from '../../../subgraphs/catalog/use-cases/publish-course-version.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';
import { builtPayload, catalogProducer, consumedEnvelope, registry } from './harness.js';

/**
 * What leaves the service: the relay publishes the catalog's outbox rows on the CATALOG stream
 * under `<eventType>.v<eventVersion>`, with the event id as Nats-Msg-Id, in per-course order.
 * (The stream holds `catalog.>` unprefixed, so this runs on the in-process bus: a shared NATS
 * server cannot give one test run that subject space to itself.)
 */
describe.each(databaseKinds())('catalog events on the CATALOG stream, database %s', (kind) => {
  let db: TestDatabase;
  const config = loadSystemConfig({});
  const bus = createInProcessBus();
  beforeAll(async () => {
    db = await createTestDatabase(kind);
    await ensureStreams(bus, config, { storage: 'memory' });
  });
  afterAll(async () => {
    await bus.close();
    await db?.close();
  });

  it('publishes every row once, under its subject, in order per course', async () => {
    const events = createCatalogEvents(catalogProducer());
    const tenantId = newId('tenant');
    for (const [slug, label] of [
      ['a', '1.0.0'],
      ['b', '1.0.0'],
      ['a', '1.1.0'],
      ['a', '0.9.0'],
    ]) {
      const envelope = consumedEnvelope('built', builtPayload(tenantId, slug, label));
      await db.prisma.$transaction((tx) =>
        publishCourseVersion(tx, envelope, {
          events: events.forRequest(tx, { correlationId: envelope.correlationId }),
          logger: silentLogger,
          gdprZeroingRetentionClasses: ['operational'],
          clock: systemClock,
        }),
      );
    }
    const relay = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger });
    expect((await relay.runOnce()).published).toBe(6);
    expect((await relay.runOnce()).published).toBe(0);

    const rows = await db.prisma.outboxEvent.findMany({ where: { tenantId }, orderBy: { id: 'asc' } });
    const stored = await bus.readStream(config.events.catalogStream);
    // The relay sends the courses of a batch side by side, so the stream interleaves courses;
    // within one course (partition) it holds the outbox order.
    const partitionOf = (m: (typeof stored)[number]) =>
      (JSON.parse(Buffer.from(m.data).toString()) as EventEnvelope).partitionKey;
    for (const partition of new Set(rows.map((row) => row.partitionKey))) {
      const ofRows = rows.filter((row) => row.partitionKey === partition);
      const ofStream = stored.filter((m) => partitionOf(m) === partition);
      expect(ofStream.map((m) => m.subject)).toEqual(ofRows.map((row) => `${row.eventType}.v1`));
      expect(ofStream.map((m) => m.headers['Nats-Msg-Id'])).toEqual(ofRows.map((row) => row.eventId));
    }
    expect(stored).toHaveLength(rows.length);
    const envelopes = stored.map((m) => JSON.parse(Buffer.from(m.data).toString('utf8')) as EventEnvelope);
    for (const envelope of envelopes) {
      registry.validateEnvelope(envelope);
      registry.validate(envelope.eventType, envelope.eventVersion, envelope.payload, 'produce');
    }
    const courseA = (await db.prisma.course.findUniqueOrThrow({ where: { tenantId_slug: { tenantId, slug: 'a' } } })).id;
    const publishedA = stored.filter(
      (m) =>
        m.subject === 'catalog.course_version.published.v1' &&
        JSON.parse(Buffer.from(m.data).toString()).partitionKey === courseA,
    );
    expect(publishedA.map((m) => m.headers['x-course-version-seq'])).toEqual(['1', '2', '3']);
    expect(
      publishedA.map(
        (m) => (JSON.parse(Buffer.from(m.data).toString()) as EventEnvelope<{ becameLatest: boolean }>).payload.becameLatest,
      ),
    ).toEqual([true, true, false]);
  });
});
