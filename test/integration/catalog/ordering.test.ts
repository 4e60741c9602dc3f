import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../platform/ids.js';
import { systemClock } from '../../../platform/clock.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { listDeadLetters } from '../../../events/dead-letters/dead-letters.js';
import { permanentFailure } from '../../../events/consume/verdict.logic.js';
import type { EventEnvelope } from '../../../events/envelope.js';
import { compareVersions, parseVersionLabel } from '../../../subgraphs/catalog/course-version/semver.logic.js';
import { validateDeadLetterFilter } from '../../../subgraphs/catalog/dead-letters/dead-letter.logic.js';
import { replayTenantDeadLetters } from '../../../subgraphs/catalog/dead-letters/tenant-dead-letters.js';
import { createCatalogEvents } from '../../../subgraphs/catalog/outbox-port.js';
import { publishCourseVersion } from '../../../subgraphs/catalog/use-cases/publish-course-version.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';
import { deferred, recorder, stacks } from '../events/helpers.js';
import { builtPayload, catalogProducer, consumedEnvelope, startCatalogHarness, type CatalogHarness } from './harness.js';

const pkg = (n: number) => ({ playPackageId: newId('playPackage'), sha256: n.toString(16).padStart(64, '0'), format: 'v1' });

/** Per course: versions by sequence, and its published events in outbox (= publish) order. */
async function publishOrder(db: TestDatabase['prisma'], courseId: string) {
  const versions = await db.courseVersion.findMany({ where: { courseId }, orderBy: { sequence: 'asc' } });
  const events = (
    await db.outboxEvent.findMany({
      where: { partitionKey: courseId, eventType: 'catalog.course_version.published' },
      orderBy: { id: 'asc' },
    })
  ).map((row) => ({
    seq: Number((row.headers as Record<string, string>)['x-course-version-seq']),
    payload: (row.envelope as unknown as EventEnvelope<{ versionLabel: string; becameLatest: boolean }>).payload,
  }));
  return { versions, events };
}

/** Gap-free sequence, events in sequence order, becameLatest = greater than every earlier label. */
function expectOrdered({ versions, events }: Awaited<ReturnType<typeof publishOrder>>, count: number) {
  expect(versions.map((v) => v.sequence)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
  expect(events.map((e) => e.seq)).toEqual(versions.map((v) => v.sequence));
  expect(events.map((e) => e.payload.versionLabel)).toEqual(versions.map((v) => v.versionLabel));
  let highest: string | undefined;
  for (const event of events) {
    const expected = !highest || compareVersions(parseVersionLabel(event.payload.versionLabel), parseVersionLabel(highest)) > 0;
    expect(event.payload.becameLatest).toBe(expected);
    if (expected) highest = event.payload.versionLabel;
  }
  return highest;
}

/** PublishCourseVersion in its own transaction, as the consumer runner would run it. */
function publisher(db: () => TestDatabase) {
  const events = createCatalogEvents(catalogProducer());
  return (envelope: EventEnvelope) =>
    db().prisma.$transaction(
      (tx) =>
        publishCourseVersion(tx, envelope, {
          events: events.forRequest(tx, { correlationId: envelope.correlationId }),
          logger: silentLogger,
          gdprZeroingRetentionClasses: ['operational'],
          clock: systemClock,
        }),
      { timeout: 30_000, maxWait: 30_000 },
    );
}

describe.each(stacks())('per-course order: $name', (stack) => {
  describe('under concurrent consumers', () => {
    let h: CatalogHarness;
    let failing = new Set<string>();
    beforeAll(async () => {
      // Three consumers on each durable: messages of one course can be handled at the same time.
      h = await startCatalogHarness(stack, {
        replicas: 3,
        intercept: (envelope) => {
          if (failing.has(envelope.eventId)) throw new Error('content store briefly unavailable');
        },
      });
    });
    afterAll(async () => h?.stop());

    it('keeps every course gap-free and in order while many courses publish at once', async () => {
      const tenantId = newId('tenant');
      const courses = Array.from({ length: 8 }, (_, i) => `course-${i}`);
      const labels = ['1.0.0', '1.3.0', '1.1.0', '2.0.0', '1.2.5'];
      for (const label of labels) {
        for (const [index, slug] of courses.entries()) {
          await h.send(consumedEnvelope('built', builtPayload(tenantId, slug, label, { playPackage: pkg(index) })));
        }
      }
      await h.settled();
      expect(h.stats().deadLettered).toBe(0);
      for (const slug of courses) {
        const course = await h.db.prisma.course.findUniqueOrThrow({ where: { tenantId_slug: { tenantId, slug } } });
        const order = await publishOrder(h.db.prisma, course.id);
        expect(expectOrdered(order, labels.length)).toBe('2.0.0');
        expect(course).toMatchObject({ versionSeq: labels.length, latestVersionLabel: '2.0.0' });
      }
      expect(await h.db.prisma.outboxEvent.count({ where: { tenantId, eventType: 'catalog.course.registered' } })).toBe(
        courses.length,
      );
    });

    it('keeps the order guard when a dead letter is replayed later, and a replay is processed once', async () => {
      const tenantId = newId('tenant');
      const otherTenant = newId('tenant');
      const first = consumedEnvelope('built', builtPayload(tenantId, 'replayed', '1.0.0', { playPackage: pkg(1) }));
      const stuck = consumedEnvelope('built', builtPayload(tenantId, 'replayed', '1.1.0', { playPackage: pkg(2) }));
      const later = consumedEnvelope('built', builtPayload(tenantId, 'replayed', '1.2.0', { playPackage: pkg(3) }));
      const foreign = consumedEnvelope('built', builtPayload(otherTenant, 'replayed', '1.0.0', { playPackage: pkg(4) }));
      failing = new Set([stuck.eventId, foreign.eventId]);
      const deadBefore = h.stats().deadLettered;
      await h.send(first);
      await h.settled();
      await h.send(stuck);
      await h.send(foreign);
      await h.send(later);
      await h.settled();
      expect(h.stats().deadLettered).toBe(deadBefore + 2);
      const course = await h.db.prisma.course.findUniqueOrThrow({ where: { tenantId_slug: { tenantId, slug: 'replayed' } } });
      expect((await publishOrder(h.db.prisma, course.id)).versions.map((v) => v.versionLabel)).toEqual(['1.0.0', '1.2.0']);

      failing = new Set();
      const dry = await replayTenantDeadLetters(h.bus, h.deadLetterStream, tenantId, validateDeadLetterFilter({ dryRun: true }));
      expect(dry).toMatchObject({ matched: 1, replayed: 0, dryRun: true, letters: [{ eventId: stuck.eventId, retries: 5 }] });
      const replay = await replayTenantDeadLetters(
        h.bus,
        h.deadLetterStream,
        tenantId,
        validateDeadLetterFilter({ subject: '>' }),
      );
      expect(replay).toMatchObject({ matched: 1, replayed: 1 });
      h.expectMore(1);
      await h.settled();

      const order = await publishOrder(h.db.prisma, course.id);
      expect(order.versions.map((v) => [v.versionLabel, v.sequence, v.becameLatest])).toEqual([
        ['1.0.0', 1, true],
        ['1.2.0', 2, true],
        ['1.1.0', 3, false],
      ]);
      expectOrdered(order, 3);
      expect(await h.db.prisma.inboxEvent.count({ where: { eventId: stuck.eventId } })).toBe(1);
      // Replayed once: nothing of this tenant is left, and the other tenant's letter was not touched.
      expect(
        await replayTenantDeadLetters(h.bus, h.deadLetterStream, tenantId, validateDeadLetterFilter({ subject: '>' })),
      ).toMatchObject({
        matched: 0,
        replayed: 0,
      });
      expect((await listDeadLetters(h.bus, h.deadLetterStream, { eventIds: [foreign.eventId] })).map((l) => l.eventId)).toEqual([
        foreign.eventId,
      ]);
    });
  });
});

describe.each(stacks())('producer order after a worker dies with messages in hand: $name', (stack) => {
  let h: CatalogHarness;
  // Short, so the dead worker's messages come back quickly; on JetStream long enough for pulls.
  const ackWaitMs = stack.bus.name === 'jetstream' ? 2_000 : 500;
  const poisoned = new Set<string>();
  beforeAll(async () => {
    h = await startCatalogHarness(stack, {
      deferConsumers: true,
      ackWaitMs,
      replicas: 2,
      intercept: (envelope) => {
        if (poisoned.has(envelope.eventId)) throw permanentFailure('the package store refuses this package');
      },
    });
  });

  /** Sends `events`, of which a dying worker first takes (and never settles) the first `dead`. */
  async function afterACrash(events: EventEnvelope[], dead: number) {
    const built = h.specs.find((spec) => spec.eventType === 'content.play_package.built')!;
    const taken = recorder<number>();
    const dying = await h.bus.consume(
      {
        stream: built.stream,
        durable: built.durable,
        filterSubject: built.subject,
        ackWaitMs,
        maxDeliver: built.maxDeliver!,
        concurrency: 10,
      },
      async (m) => taken.push(m.seq),
    );
    for (const event of events.slice(0, dead)) await h.send(event);
    await taken.until((items) => items.length === dead, "the dead worker's messages");
    await dying.stop();
    // The rest arrive at the survivors at once; the dead worker's only after their ack wait.
    for (const event of events.slice(dead)) await h.send(event);
  }
  afterAll(async () => h?.stop());

  it("applies a course's versions in the stream order of its built events: later ones wait for the dead worker's", async () => {
    const tenantId = newId('tenant');
    const labels = ['1.0.0', '1.1.0', '1.2.0', '1.3.0', '1.4.0', '1.5.0'];
    const crash = labels.map((label, i) =>
      consumedEnvelope('built', builtPayload(tenantId, 'crash', label, { playPackage: pkg(i) })),
    );
    // A second course whose first version, in the dead worker's hands, ends in the DLQ.
    const poison = ['2.0.0', '2.1.0', '2.2.0'].map((label, i) =>
      consumedEnvelope('built', builtPayload(tenantId, 'poisoned', label, { playPackage: pkg(20 + i) })),
    );
    poisoned.add(poison[0].eventId);
    const unrelated = consumedEnvelope('built', builtPayload(tenantId, 'unrelated', '1.0.0', { playPackage: pkg(9) }));

    await afterACrash([...crash.slice(0, 3), poison[0], ...crash.slice(3), ...poison.slice(1), unrelated], 4);
    await h.startConsumers();
    await h.settled();

    const course = await h.db.prisma.course.findUniqueOrThrow({ where: { tenantId_slug: { tenantId, slug: 'crash' } } });
    const order = await publishOrder(h.db.prisma, course.id);
    expect(order.versions.map((v) => v.versionLabel)).toEqual(labels);
    expect(order.events.map((e) => e.payload.versionLabel)).toEqual(labels);
    expectOrdered(order, labels.length);
    // The dead letter released the hold on the versions after it (a replay of it later is out of
    // order by nature; becameLatest is decided by label, so it stays right).
    expect(h.stats().deadLettered).toBe(1);
    const afterPoison = await h.db.prisma.course.findUniqueOrThrow({ where: { tenantId_slug: { tenantId, slug: 'poisoned' } } });
    expect((await publishOrder(h.db.prisma, afterPoison.id)).versions.map((v) => v.versionLabel)).toEqual(['2.1.0', '2.2.0']);
    expect(h.handles.reduce((sum, c) => sum + c.stats().heldPastLimit, 0)).toBe(0);
    // Another course does not wait for this one.
    const [first] = order.versions;
    const other = await h.db.prisma.courseVersion.findFirstOrThrow({
      where: { tenantId, versionLabel: '1.0.0', NOT: { courseId: course.id } },
    });
    expect(other.createdAt.getTime()).toBeLessThan(first.createdAt.getTime());
  });
});

describe.each(databaseKinds())('PublishCourseVersion transactions on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(kind, { poolSize: 12 });
  });
  afterAll(async () => db?.close());
  const run = publisher(() => db);

  it('registers a slug once when two packages of a new course arrive at the same time', async () => {
    const tenantId = newId('tenant');
    await Promise.all(
      ['1.0.0', '1.1.0', '0.1.0'].map((label, i) =>
        run(consumedEnvelope('built', builtPayload(tenantId, 'race', label, { playPackage: pkg(i) }))),
      ),
    );
    const courses = await db.prisma.course.findMany({ where: { tenantId } });
    expect(courses).toHaveLength(1);
    expect(await db.prisma.outboxEvent.count({ where: { tenantId, eventType: 'catalog.course.registered' } })).toBe(1);
    expect(expectOrdered(await publishOrder(db.prisma, courses[0].id), 3)).toBe('1.1.0');
    expect(courses[0].latestVersionLabel).toBe('1.1.0');
  });

  it('keeps many courses gap-free under concurrent transactions', async () => {
    const tenantId = newId('tenant');
    const work = [];
    for (const label of ['3.0.0', '1.0.0', '3.1.0', '2.0.0']) {
      for (let c = 0; c < 6; c++)
        work.push(run(consumedEnvelope('built', builtPayload(tenantId, `c${c}`, label, { playPackage: pkg(c) }))));
    }
    await Promise.all(work);
    for (let c = 0; c < 6; c++) {
      const course = await db.prisma.course.findUniqueOrThrow({ where: { tenantId_slug: { tenantId, slug: `c${c}` } } });
      expect(expectOrdered(await publishOrder(db.prisma, course.id), 4)).toBe('3.1.0');
    }
  });
});

describe.each(databaseKinds().filter((kind) => kind === 'postgres'))('course locks on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });
  afterAll(async () => db?.close());
  const run = publisher(() => db);

  it('do not make one course wait for another course that is locked', async () => {
    const tenantId = newId('tenant');
    await run(consumedEnvelope('built', builtPayload(tenantId, 'locked', '1.0.0', { playPackage: pkg(1) })));
    await run(consumedEnvelope('built', builtPayload(tenantId, 'free', '1.0.0', { playPackage: pkg(2) })));
    const locked = await db.prisma.course.findUniqueOrThrow({ where: { tenantId_slug: { tenantId, slug: 'locked' } } });
    const held = deferred();
    const release = deferred();
    const holder = db.prisma.$transaction(
      async (tx) => {
        await tx.$queryRaw`SELECT id FROM "Course" WHERE id = ${locked.id} FOR UPDATE`;
        held.resolve();
        await release.promise;
      },
      { timeout: 30_000 },
    );
    await held.promise;
    let lockedDone = false;
    const waiting = run(consumedEnvelope('built', builtPayload(tenantId, 'locked', '1.1.0', { playPackage: pkg(3) }))).then(
      () => {
        lockedDone = true;
      },
    );
    await run(consumedEnvelope('built', builtPayload(tenantId, 'free', '1.1.0', { playPackage: pkg(4) })));
    expect(lockedDone).toBe(false);
    release.resolve();
    await Promise.all([holder, waiting]);
    expect(lockedDone).toBe(true);
    expect(await db.prisma.courseVersion.count({ where: { courseId: locked.id } })).toBe(2);
  });
});
