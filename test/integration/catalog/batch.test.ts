import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import type { EventEnvelope } from '../../../events/envelope.js';
import { createCatalogEvents } from '../../../subgraphs/catalog/outbox-port.js';
import { recordErasure } from '../../../subgraphs/catalog/gdpr/gdpr.repo.js';
import {
  publishCourseVersion,
  publishCourseVersions,
  type BuiltEvent,
} from '../../../subgraphs/catalog/use-cases/publish-course-version.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';
import { builtPayload, catalogProducer, consumedEnvelope } from './harness.js';

const deps = { logger: silentLogger, gdprZeroingRetentionClasses: ['operational'], clock: systemClock };
const events = createCatalogEvents(catalogProducer());
/** Ids the two tenants of a comparison share (schemas require real ids). */
const stable = new Map<string, string>();
const idFor = (key: string, kind: 'playPackage' | 'courseDraft' | 'user') => {
  if (!stable.has(key)) stable.set(key, newId(kind));
  return stable.get(key)!;
};
const pkg = (n: number) => ({
  playPackageId: idFor(`pkg${n}`, 'playPackage'),
  sha256: n.toString(16).padStart(64, '0'),
  format: 'v1',
});
const draft = (slug: string) => idFor(`draft:${slug}`, 'courseDraft');
const publisher = idFor('publisher', 'user');
const erased = newId('user');
const kept = newId('user');

/**
 * One scenario, as built events of a tenant: two new courses, a course that existed before,
 * a newer title, an older label after a newer one, a repeated package, an erased author.
 */
function scenario(tenantId: string): EventEnvelope[] {
  const at = (minute: number) => new Date(Date.UTC(2026, 10, 1, 8, minute)).toISOString();
  const steps: Array<[string, string, number, Record<string, unknown>]> = [
    [
      'alpha',
      '1.0.0',
      1,
      {
        authors: [
          { userId: erased, displayName: 'Erased Person' },
          { userId: kept, displayName: 'Kept Person', role: 'reviewer' },
        ],
      },
    ],
    ['beta', '1.0.0', 2, {}],
    ['alpha', '1.2.0', 3, { title: { en: 'Alpha, second edition' }, tags: ['cardiology'] }],
    ['gamma', '2.0.0', 4, { description: { en: 'Now with a description' } }],
    ['alpha', '1.1.0', 5, {}],
    ['beta', '1.0.0', 2, {}],
    ['gamma', '1.5.0', 6, { authors: [{ userId: erased, displayName: 'Erased Person' }] }],
  ];
  return steps.map(([slug, label, n, overrides], i) =>
    consumedEnvelope(
      'built',
      builtPayload(tenantId, slug, label, {
        courseDraftId: draft(slug),
        publishedBy: publisher,
        playPackage: pkg(n),
        ...overrides,
      }),
      { occurredAt: at(10 + i) },
    ),
  );
}

/** Everything a tenant's catalog holds, with ids replaced by names, so two tenants compare. */
async function snapshot(db: TestDatabase['prisma'], tenantId: string, envelopes: EventEnvelope[]) {
  const courses = await db.course.findMany({ where: { tenantId }, orderBy: { slug: 'asc' } });
  const versions = await db.courseVersion.findMany({ where: { tenantId }, orderBy: [{ courseId: 'asc' }, { sequence: 'asc' }] });
  const outbox = await db.outboxEvent.findMany({ where: { tenantId }, orderBy: { id: 'asc' } });
  const names = new Map<string, string>([[tenantId, 'TENANT']]);
  for (const c of courses) names.set(c.id, `course:${c.slug}`);
  for (const v of versions) names.set(v.id, `version:${names.get(v.courseId)}@${v.versionLabel}`);
  envelopes.forEach((e, i) => names.set(e.eventId, `event:${i}`));
  const scrub = (value: unknown) => {
    let json = JSON.stringify(value);
    for (const [id, name] of names) json = json.split(id).join(name);
    return JSON.parse(json) as unknown;
  };
  // Instants differ between two runs by construction; everything else must not.
  const dropTimes = <R extends { createdAt: Date; updatedAt: Date }>({ createdAt: _c, updatedAt: _u, ...rest }: R) => rest;
  return {
    courses: courses.map((c) => scrub(dropTimes(c))),
    versions: versions.map((v) => scrub(dropTimes(v))),
    events: outbox.map((row) => {
      const envelope = row.envelope as unknown as EventEnvelope;
      return scrub({
        eventType: row.eventType,
        partitionKey: row.partitionKey,
        payload: envelope.payload,
        seq: (row.headers as Record<string, string>)['x-course-version-seq'],
      });
    }),
  };
}

describe.each(databaseKinds())('PublishCourseVersion in batches on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(kind, { poolSize: 4 });
  });
  afterAll(async () => db?.close());

  /** Each event in its own transaction, as the runner does without batching. */
  async function oneByOne(envelopes: EventEnvelope[]) {
    const results = [];
    for (const envelope of envelopes) {
      results.push(
        await db.prisma.$transaction((tx) =>
          publishCourseVersion(tx, envelope, {
            ...deps,
            events: events.forRequest(tx, { correlationId: envelope.correlationId }),
          }),
        ),
      );
    }
    return results;
  }

  function batchOf(tx: Parameters<Parameters<TestDatabase['prisma']['$transaction']>[0]>[0], envelopes: EventEnvelope[]) {
    return envelopes.map((envelope): BuiltEvent => ({
      envelope,
      events: events.forRequest(tx, { correlationId: envelope.correlationId }),
    }));
  }

  async function prepareTenant(envelopes: EventEnvelope[]) {
    const tenantId = envelopes[0].tenantId;
    await db.prisma.$transaction((tx) => recordErasure(tx, { tenantId, userId: erased, requestId: `gdpr-${tenantId}` }));
    // gamma exists before the batch, with a version of its own.
    const before = consumedEnvelope(
      'built',
      builtPayload(tenantId, 'gamma', '1.0.0', { courseDraftId: draft('gamma'), publishedBy: publisher, playPackage: pkg(9) }),
      { occurredAt: new Date(Date.UTC(2026, 10, 1, 8, 0)).toISOString() },
    );
    await oneByOne([before]);
    return [before, ...envelopes];
  }

  it('leaves exactly what handling the events one transaction at a time leaves, and emits the same events in the same order', async () => {
    const alone = await prepareTenant(scenario(newId('tenant')));
    const together = await prepareTenant(scenario(newId('tenant')));

    const aloneResults = await oneByOne(alone.slice(1));
    const togetherResults = await db.prisma.$transaction(
      (tx) => publishCourseVersions(tx, batchOf(tx, together.slice(1)), deps),
      { timeout: 30_000 },
    );

    expect(togetherResults.map((r) => r?.versionLabel ?? null)).toEqual(aloneResults.map((r) => r?.versionLabel ?? null));
    expect(togetherResults[5]).toBeNull();
    const expected = await snapshot(db.prisma, alone[0].tenantId, alone);
    const actual = await snapshot(db.prisma, together[0].tenantId, together);
    expect(actual).toEqual(expected);

    // What the scenario is meant to exercise did happen (else the comparison proves little).
    const [registered, published, updated] = [
      'catalog.course.registered',
      'catalog.course_version.published',
      'catalog.course.metadata_updated',
    ];
    expect(expected.events.map((e) => (e as { eventType: string }).eventType)).toEqual([
      ...[registered, published], // gamma 1.0.0, before the batch
      ...[registered, published], // alpha 1.0.0
      ...[registered, published], // beta 1.0.0
      ...[updated, published], // alpha 1.2.0: new title and tags
      ...[updated, published], // gamma 2.0.0: a description
      ...[updated, published], // alpha 1.1.0: the newest built fact, its title wins back
      // beta 1.0.0 again, same package: nothing
      ...[updated, published], // gamma 1.5.0: an author, the erased one redacted
    ]);
    const alpha = await db.prisma.course.findUniqueOrThrow({
      where: { tenantId_slug: { tenantId: together[0].tenantId, slug: 'alpha' } },
    });
    expect(alpha).toMatchObject({
      versionSeq: 3,
      latestVersionLabel: '1.2.0',
      title: { en: 'alpha (package)' },
      tags: ['cardiology'],
    });
    expect(JSON.stringify(alpha.authors)).not.toContain('Erased Person');
    const gamma = await db.prisma.course.findUniqueOrThrow({
      where: { tenantId_slug: { tenantId: together[0].tenantId, slug: 'gamma' } },
    });
    expect(gamma).toMatchObject({ versionSeq: 3, latestVersionLabel: '2.0.0' });
    expect(gamma.authors).toEqual([expect.objectContaining({ displayName: '[redacted]' })]);
  });

  it('fails the whole batch on a label its course already has with another package, writing nothing', async () => {
    const tenantId = newId('tenant');
    const first = consumedEnvelope('built', builtPayload(tenantId, 'delta', '1.0.0', { playPackage: pkg(1) }));
    await oneByOne([first]);
    const batch = [
      consumedEnvelope('built', builtPayload(tenantId, 'epsilon', '1.0.0', { playPackage: pkg(2) })),
      consumedEnvelope('built', builtPayload(tenantId, 'delta', '1.0.0', { playPackage: pkg(3) })),
    ];
    await expect(db.prisma.$transaction((tx) => publishCourseVersions(tx, batchOf(tx, batch), deps))).rejects.toMatchObject({
      code: 'events.permanent_failure',
      details: { versionLabel: '1.0.0' },
    });
    expect(await db.prisma.course.count({ where: { tenantId } })).toBe(1);
    expect(await db.prisma.outboxEvent.count({ where: { tenantId } })).toBe(2);
  });

  it('registers each new slug once when two batches create the same courses at the same time', async () => {
    const tenantId = newId('tenant');
    const slugs = ['zeta', 'eta', 'theta'];
    const batches = [0, 1].map((b) =>
      (b ? [...slugs].reverse() : slugs).map((slug, i) =>
        consumedEnvelope('built', builtPayload(tenantId, slug, `1.${b}.0`, { playPackage: pkg(10 * b + i) })),
      ),
    );
    await Promise.all(
      batches.map((batch) => db.prisma.$transaction((tx) => publishCourseVersions(tx, batchOf(tx, batch), deps))),
    );
    const courses = await db.prisma.course.findMany({ where: { tenantId }, include: { versions: true } });
    expect(courses.map((c) => c.slug).sort()).toEqual([...slugs].sort());
    for (const course of courses) {
      expect(course.versionSeq).toBe(2);
      expect(course.versions.map((v) => v.sequence).sort()).toEqual([1, 2]);
      expect(course.latestVersionLabel).toBe('1.1.0');
    }
    expect(await db.prisma.outboxEvent.count({ where: { tenantId, eventType: 'catalog.course.registered' } })).toBe(3);
  });
});
