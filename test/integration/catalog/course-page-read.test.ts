import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPrismaClient, type Db } from '../../../platform/db/database.js';
import { poolReadsOf } from '../../../platform/db/pool-reads.js';
import { newId } from '../../../platform/ids.js';
import { listCourses } from '../../../subgraphs/catalog/course/course.repo.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';

/**
 * The catalog's page read runs on the pool past Prisma's runtime (platform/db/pool-reads.ts): its
 * rows must be what Prisma's findMany returns, column for column, in any time zone of the process.
 */
describe.each(databaseKinds())('the course page read on the pool, on %s', (kind) => {
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

  it('reads timestamps as UTC whatever the time zone of the process', async () => {
    // node-postgres reads a `timestamp` in the local zone; Prisma stores and returns UTC.
    process.env.TZ = 'America/New_York';
    try {
      const rows = await listCourses(db.prisma, tenantId, 10);
      expect(rows[0].createdAt.toISOString()).toBe('2026-03-04T23:06:07.089Z');
      expect(rows[4].updatedAt.toISOString()).toBe('2026-12-31T23:59:59.995Z');
      expect(rows).toEqual(await throughPrisma(db.prisma, 10));
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
