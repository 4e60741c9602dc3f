import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPrismaClient, type Db } from '../../../platform/db/database.js';
import { poolReadsOf } from '../../../platform/db/pool-reads.js';
import { newId } from '../../../platform/ids.js';
import { listCourses } from '../../../subgraphs/catalog/course/course.repo.js';
import { findVersionsByCourseIds } from '../../../subgraphs/catalog/course-version/course-version.repo.js';
import { findLatestProvenanceBySubjects } from '../../../subgraphs/ai/provenance/provenance.repo.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';

/**
 * The hot reads that run on the pool past Prisma's runtime (platform/db/pool-reads.ts): the
 * catalog's page of courses and their versions, the AI subgraph's newest provenance per course.
 * Their rows must be what Prisma returns, column for column, in any time zone of the process.
 */
describe.each(databaseKinds())('reads on the pool, on %s', (kind) => {
  let db: TestDatabase;
  const tenantId = newId('tenant');
  const otherTenant = newId('tenant');
  const zone = process.env.TZ;

  beforeAll(async () => {
    db = await createTestDatabase(kind, { poolSize: 2 });
    // Ids in a known order; every nullable column both null and set; timestamps with milliseconds.
    const ids = Array.from({ length: 5 }, (_, i) => `crs_PAGEREAD${String(i).padStart(17, '0')}`);
    for (const [i, id] of ids.entries()) {
      await db.prisma.course.create({
        data: {
          id,
          tenantId,
          slug: `page-read-${i}`,
          title: { en: `Course ${i}`, fr: `Cours ${i}` },
          description: { en: 'd' },
          defaultLocale: 'en',
          visibility: i % 2 ? 'marketplace' : 'org',
          authors: [{ userId: `usr_${i}`, role: 'author' }],
          taxonomy: i ? [{ scheme: 'specialty', code: 'cardio' }] : [],
          tags: i ? ['a', `t${i}`] : [],
          cover: i % 2 ? { url: `https://cdn.example/${i}.png` } : undefined,
          etag: `W/"${i}"`,
          sourceDraftId: i % 2 ? null : `drf_${i}`,
          versionSeq: i,
          latestVersionLabel: i ? `1.${i}.0` : null,
          metadataProvenance: { title: { source: 'draft', at: '2026-01-01T00:00:00.000Z' } },
          // Postgres writes .09, .08, .1 and no fraction at all for 90, 80, 100 and 0 ms.
          createdAt: new Date(Date.UTC(2026, 2, 4, 23, 6, 7, [89, 90, 80, 100, 0][i])),
          updatedAt: new Date(Date.UTC(2026, 11, 31, 23, 59, 59, 999 - i)),
        },
      });
    }
    for (const [c, courseId] of ids.slice(0, 2).entries())
      for (let v = 1; v <= 3; v++)
        await db.prisma.courseVersion.create({
          data: {
            id: `crv_PAGEREAD${c}${v}`,
            tenantId,
            courseId,
            versionLabel: `1.${v}.0`,
            major: 1,
            minor: v,
            patch: 0,
            publishedBy: 'usr_1',
            durationMinutes: 10 * v,
            estimatedReadingMinutes: v === 2 ? null : v,
            locales: v === 1 ? [] : ['en', 'fr'],
            moduleSummaries: v === 3 ? [{ title: 'm', minutes: 3 }] : undefined,
            playPackageId: `pkg_${c}${v}`,
            playPackageSha256: 'a'.repeat(64),
            playPackageFormat: 'scorm',
            changelog: v === 2 ? { en: 'Fixed' } : undefined,
            becameLatest: v === 3,
            sequence: v,
            sourceEventId: v === 1 ? null : `evt_${c}${v}`,
            createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, v * 10)),
          },
        });
    for (const [c, courseId] of ids.slice(0, 2).entries())
      for (let r = 0; r < 4; r++)
        await db.prisma.aIProvenance.create({
          data: {
            id: `prv_PAGEREAD${c}${r}`,
            tenantId,
            actorType: 'user',
            actorId: 'usr_1',
            featureKey: 'catalog.summary',
            status: r === 3 ? 'failed' : 'completed',
            templateVersion: r === 3 ? null : 2,
            attempts: [{ provider: 'openai', outcome: 'ok', latencyMs: 12 }],
            moderation: r === 1 ? { flagged: false, categories: [] } : undefined,
            review: r === 2 ? { decision: 'approved', by: 'usr_2' } : undefined,
            inputTokens: r === 3 ? null : 100 + r,
            subjectRef: courseId,
            legacyBackfill: r === 0,
            heldText: r === 2 ? 'held' : null,
            heldTextExpiresAt: r === 2 ? new Date(Date.UTC(2026, 5, 1, 12, 0, 0, 5)) : null,
            createdAt: new Date(Date.UTC(2026, 1, 1, 0, 0, r, 7)),
            completedAt: r === 3 ? null : new Date(Date.UTC(2026, 1, 1, 0, 0, r, 900)),
          },
        });
    await db.prisma.course.create({
      data: {
        id: 'crs_PAGEREAD00000000000000002b',
        tenantId: otherTenant,
        slug: 'other',
        title: { en: 'Other' },
        description: {},
        defaultLocale: 'en',
        visibility: 'org',
        authors: [],
        taxonomy: [],
        tags: [],
        etag: 'x',
      },
    });
  });
  afterAll(async () => {
    process.env.TZ = zone;
    await db?.close();
  });

  /** What listCourses returned when it went through Prisma. */
  const throughPrisma = (client: Db, limit: number, afterId?: string) =>
    client.course.findMany({
      where: { tenantId, ...(afterId ? { id: { gt: afterId } } : {}) },
      orderBy: { id: 'asc' },
      take: limit + 1,
    });

  it("returns Prisma's rows, first page and after a cursor, only the tenant's", async () => {
    const first = await listCourses(db.prisma, tenantId, 2);
    expect(first).toEqual(await throughPrisma(db.prisma, 2));
    expect(first.map((row) => row.slug)).toEqual(['page-read-0', 'page-read-1', 'page-read-2']);
    const next = await listCourses(db.prisma, tenantId, 2, first[1].id);
    expect(next).toEqual(await throughPrisma(db.prisma, 2, first[1].id));
    expect(next.every((row) => row.tenantId === tenantId)).toBe(true);
    expect(next.map((row) => row.slug)).toEqual(['page-read-2', 'page-read-3', 'page-read-4']);
  });

  it("returns Prisma's versions of a page of courses, in course and sequence order", async () => {
    const courseIds = (await listCourses(db.prisma, tenantId, 10)).map((row) => row.id);
    const rows = await findVersionsByCourseIds(db.prisma, tenantId, courseIds);
    expect(rows).toEqual(
      await db.prisma.courseVersion.findMany({
        where: { tenantId, courseId: { in: courseIds } },
        orderBy: [{ courseId: 'asc' }, { sequence: 'asc' }],
      }),
    );
    expect(rows.map((row) => row.id)).toEqual([
      'crv_PAGEREAD01',
      'crv_PAGEREAD02',
      'crv_PAGEREAD03',
      'crv_PAGEREAD11',
      'crv_PAGEREAD12',
      'crv_PAGEREAD13',
    ]);
    expect(await findVersionsByCourseIds(db.prisma, otherTenant, courseIds)).toEqual([]);
  });

  it("returns Prisma's newest provenance rows of each course, at most `first` per course", async () => {
    const courseIds = (await listCourses(db.prisma, tenantId, 10)).map((row) => row.id);
    const rows = await findLatestProvenanceBySubjects(db.prisma, tenantId, courseIds, 3);
    const expected = [];
    for (const subjectRef of courseIds)
      expected.push(
        ...(await db.prisma.aIProvenance.findMany({ where: { tenantId, subjectRef }, orderBy: { createdAt: 'desc' }, take: 3 })),
      );
    const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
    expect([...rows].sort(byId)).toEqual(expected.sort(byId));
    expect(rows).toHaveLength(6);
    expect(await findLatestProvenanceBySubjects(db.prisma, otherTenant, courseIds, 3)).toEqual([]);
  });

  it('reads timestamps as UTC whatever the time zone of the process', async () => {
    // node-postgres reads a `timestamp` in the local zone; Prisma stores and returns UTC.
    process.env.TZ = 'America/New_York';
    try {
      const rows = await listCourses(db.prisma, tenantId, 10);
      expect(rows[0].createdAt.toISOString()).toBe('2026-03-04T23:06:07.089Z');
      expect(rows[4].updatedAt.toISOString()).toBe('2026-12-31T23:59:59.995Z');
      expect(rows).toEqual(await throughPrisma(db.prisma, 10));
      const versions = await findVersionsByCourseIds(db.prisma, tenantId, [rows[0].id]);
      expect(versions.map((v) => v.createdAt.toISOString())).toEqual([
        '2026-01-01T00:00:00.010Z',
        '2026-01-01T00:00:00.020Z',
        '2026-01-01T00:00:00.030Z',
      ]);
      const [, held] = await findLatestProvenanceBySubjects(db.prisma, tenantId, [rows[0].id], 2);
      expect(held.completedAt?.toISOString()).toBe('2026-02-01T00:00:02.900Z');
      expect(held.heldTextExpiresAt?.toISOString()).toBe('2026-06-01T12:00:00.005Z');
    } finally {
      process.env.TZ = zone;
    }
  });

  it('prepares each of its two statements once per connection, or none with prepared statements off', async () => {
    const names = async (client: Db) =>
      (await client.$queryRaw<Array<{ name: string }>>`SELECT name FROM pg_prepared_statements`).map((row) => row.name);
    // One connection, so the session's prepared statements are the read's.
    const named = createPrismaClient(db.url, 1);
    const unnamed = createPrismaClient(db.url, 1, { preparedStatements: false });
    try {
      for (let i = 0; i < 3; i++) await listCourses(named, tenantId, 1, i ? 'crs_PAGEREAD00000000000000000' : undefined);
      expect(await names(named)).toEqual(expect.arrayContaining(['catalog_courses_first', 'catalog_courses_after']));
      await listCourses(unnamed, tenantId, 1);
      await listCourses(unnamed, tenantId, 1, 'crs_PAGEREAD00000000000000000');
      expect((await names(unnamed)).filter((name) => name.startsWith('catalog_courses'))).toEqual([]);
    } finally {
      await named.$disconnect();
      await unnamed.$disconnect();
    }
  });

  it("refuses to read past a transaction's client", async () => {
    await db.prisma.$transaction(async (tx) => {
      expect(() => poolReadsOf(tx)).toThrow(/not inside a transaction/);
    });
  });
});
