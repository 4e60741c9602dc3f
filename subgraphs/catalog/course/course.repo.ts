import type { Db } from '../../../platform/db/database.js';
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
