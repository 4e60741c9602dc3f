import type { Db, Prisma, Tx } from '../../../platform/db/database.js';
import type { Course } from '../../../prisma/generated/client.js';

export type CourseRow = Course;

export function findCoursesByIds(db: Db, tenantId: string, ids: readonly string[]): Promise<CourseRow[]> {
  return db.course.findMany({ where: { tenantId, id: { in: [...ids] } } });
}

/** Keyset page: one more row than asked tells whether another page exists. */
export function listCourses(db: Db, tenantId: string, limit: number, afterId?: string): Promise<CourseRow[]> {
  return db.course.findMany({
    where: { tenantId, ...(afterId ? { id: { gt: afterId } } : {}) },
    orderBy: { id: 'asc' },
    take: limit + 1,
  });
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

export async function lockCourseBySlug(tx: Tx, tenantId: string, slug: string): Promise<CourseRow | null> {
  const locked = await tx.$queryRaw<Array<{ id: string }>>`
    SELECT id FROM "Course" WHERE "tenantId" = ${tenantId} AND slug = ${slug} FOR UPDATE`;
  return locked.length ? tx.course.findUnique({ where: { id: locked[0].id } }) : null;
}

/**
 * INSERT ... ON CONFLICT DO NOTHING on (tenantId, slug): two events creating the same new slug
 * at once both succeed, one inserts and the other waits for it and then finds its row.
 */
export async function insertCourseIfAbsent(tx: Tx, data: Prisma.CourseCreateManyInput): Promise<boolean> {
  const { count } = await tx.course.createMany({ data: [data], skipDuplicates: true });
  return count === 1;
}

export function updateCourse(tx: Tx, id: string, data: Prisma.CourseUpdateInput): Promise<CourseRow> {
  return tx.course.update({ where: { id }, data });
}

/** Courses of the tenant listing the user as an author, locked in id order (no deadlocks). */
export async function lockCoursesByAuthor(tx: Tx, tenantId: string, userId: string): Promise<CourseRow[]> {
  const probe = JSON.stringify([{ userId }]);
  const locked = await tx.$queryRaw<Array<{ id: string }>>`
    SELECT id FROM "Course" WHERE "tenantId" = ${tenantId} AND authors @> ${probe}::jsonb ORDER BY id FOR UPDATE`;
  if (!locked.length) return [];
  return tx.course.findMany({ where: { id: { in: locked.map((row) => row.id) } }, orderBy: { id: 'asc' } });
}
