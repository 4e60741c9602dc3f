import { insertSql, keyTuplesSql, updateSql, type Column } from '../../../platform/db/bulk-sql.js';
import { Prisma, type Db, type Tx } from '../../../platform/db/database.js';
import { columnList, poolReadsOf, type PoolRead } from '../../../platform/db/pool-reads.js';
import type { Course } from '../../../prisma/generated/client.js';

export type CourseRow = Course;

export function findCoursesByIds(db: Db, tenantId: string, ids: readonly string[]): Promise<CourseRow[]> {
  return db.course.findMany({ where: { tenantId, id: { in: [...ids] } } });
}

const COURSE_COLUMNS = columnList(Prisma.CourseScalarFieldEnum);

/**
 * The page read of `courses` (every gateway page of the catalog starts here): two statements of
 * fixed text, so each is prepared once per connection, on the pool past Prisma's runtime
 * (platform/db/pool-reads.ts: 99-198 µs of CPU per read through findMany, 44-56 µs here).
 */
const LIST_FIRST: PoolRead = {
  name: 'catalog_courses_first',
  summary: 'SELECT Course',
  text: `SELECT ${COURSE_COLUMNS} FROM "Course" WHERE "tenantId" = $1 ORDER BY id ASC LIMIT $2`,
};
const LIST_AFTER: PoolRead = {
  name: 'catalog_courses_after',
  summary: 'SELECT Course',
  text: `SELECT ${COURSE_COLUMNS} FROM "Course" WHERE "tenantId" = $1 AND id > $2 ORDER BY id ASC LIMIT $3`,
};

/** Keyset page: `limit + 1` courses of the tenant after `afterId`, in id order (the extra row tells whether another page exists). */
export function listCourses(db: Db, tenantId: string, limit: number, afterId?: string): Promise<CourseRow[]> {
  const reads = poolReadsOf(db);
  return afterId
    ? reads.rows<CourseRow>(LIST_AFTER, [tenantId, afterId, limit + 1])
    : reads.rows<CourseRow>(LIST_FIRST, [tenantId, limit + 1]);
}

// ------------------------------------------------------------------ writes (inside a transaction)

/**
 * Row locks serialise every write of one course (consumed events, admin mutations, GDPR): the
 * per-course version sequence is then gap-free and in commit order, and no write is lost to a
 * concurrent one. Other courses never wait.
 */
export async function lockCourse(tx: Tx, tenantId: string, courseId: string): Promise<CourseRow | null> {
  const locked = await tx.$queryRaw<Array<{ id: string }>>`
    SELECT id FROM "Course" WHERE "tenantId" = ${tenantId} AND id = ${courseId} FOR UPDATE`;
  return locked.length ? tx.course.findUnique({ where: { id: courseId } }) : null;
}

/** Courses of the tenant listing the user as an author, locked in id order (no deadlocks). */
export async function lockCoursesByAuthor(tx: Tx, tenantId: string, userId: string): Promise<CourseRow[]> {
  const probe = JSON.stringify([{ userId }]);
  const locked = await tx.$queryRaw<Array<{ id: string }>>`
    SELECT id FROM "Course" WHERE "tenantId" = ${tenantId} AND authors @> ${probe}::jsonb ORDER BY id FOR UPDATE`;
  if (!locked.length) return [];
  return tx.course.findMany({ where: { id: { in: locked.map((row) => row.id) } }, orderBy: { id: 'asc' } });
}

// ------------------------------------------------------------------ set-based writes (a batch of consumed events)

export interface CourseKey {
  tenantId: string;
  slug: string;
}

/** The columns a write may change; `id` first, as updateSql's key. */
const MUTABLE_COLUMNS: readonly Column<CourseRow>[] = [
  { name: 'id', type: 'text', value: (r) => r.id },
  { name: 'title', type: 'jsonb', value: (r) => r.title },
  { name: 'description', type: 'jsonb', value: (r) => r.description },
  { name: 'defaultLocale', type: 'text', value: (r) => r.defaultLocale },
  { name: 'visibility', type: 'text', value: (r) => r.visibility },
  { name: 'authors', type: 'jsonb', value: (r) => r.authors },
  { name: 'taxonomy', type: 'jsonb', value: (r) => r.taxonomy },
  { name: 'tags', type: 'text[]', value: (r) => r.tags },
  { name: 'cover', type: 'jsonb', value: (r) => r.cover },
  { name: 'etag', type: 'text', value: (r) => r.etag },
  { name: 'sourceDraftId', type: 'text', value: (r) => r.sourceDraftId },
  { name: 'state', type: 'text', value: (r) => r.state },
  { name: 'versionSeq', type: 'int', value: (r) => r.versionSeq },
  { name: 'latestVersionLabel', type: 'text', value: (r) => r.latestVersionLabel },
  { name: 'metadataProvenance', type: 'jsonb', value: (r) => r.metadataProvenance },
  { name: 'updatedAt', type: 'timestamp', value: (r) => r.updatedAt },
];

const ALL_COLUMNS: readonly Column<CourseRow>[] = [
  ...MUTABLE_COLUMNS,
  { name: 'tenantId', type: 'text', value: (r) => r.tenantId },
  { name: 'slug', type: 'text', value: (r) => r.slug },
  { name: 'retentionClass', type: 'text', value: (r) => r.retentionClass },
  { name: 'dataResidency', type: 'text', value: (r) => r.dataResidency },
  { name: 'createdAt', type: 'timestamp', value: (r) => r.createdAt },
];

/** The courses of these slugs, whole, locked in id order as every multi-course lock here (no deadlocks). */
export async function lockCoursesBySlugs(tx: Tx, keys: readonly CourseKey[]): Promise<CourseRow[]> {
  if (!keys.length) return [];
  return tx.$queryRaw<CourseRow[]>`
    SELECT * FROM "Course" WHERE ("tenantId", slug) IN (VALUES ${keyTuplesSql(
      keys,
      (k) => k.tenantId,
      (k) => k.slug,
    )}) ORDER BY id FOR UPDATE`;
}

/**
 * Inserts the courses whose slug is still free in their tenant and returns those it inserted. A
 * slug another transaction is inserting makes this one wait for it, then skips the row (the caller
 * locks that course instead), as insertCourseIfAbsent does for one.
 */
export async function insertCoursesIfAbsent(tx: Tx, rows: readonly CourseRow[]): Promise<CourseRow[]> {
  if (!rows.length) return [];
  return tx.$queryRaw<CourseRow[]>(
    Prisma.sql`${insertSql('Course', ALL_COLUMNS, rows)} ON CONFLICT ("tenantId", slug) DO NOTHING RETURNING *`,
  );
}

/** Writes each row's mutable columns (see MUTABLE_COLUMNS) in one statement; the caller holds the locks. */
export async function updateCourses(tx: Tx, rows: readonly CourseRow[]): Promise<void> {
  if (rows.length) await tx.$executeRaw(updateSql('Course', MUTABLE_COLUMNS, rows));
}
