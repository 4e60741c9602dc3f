import type { Db } from '../../../platform/db/database.js';
import type { CourseVersion } from '../../../prisma/generated/client.js';

export type CourseVersionRow = CourseVersion;

export function findVersionsByCourseIds(db: Db, tenantId: string, courseIds: readonly string[]): Promise<CourseVersionRow[]> {
  return db.courseVersion.findMany({
    where: { tenantId, courseId: { in: [...courseIds] } },
    orderBy: [{ courseId: 'asc' }, { sequence: 'asc' }],
  });
}

export function findVersionsByIds(db: Db, tenantId: string, ids: readonly string[]): Promise<CourseVersionRow[]> {
  return db.courseVersion.findMany({ where: { tenantId, id: { in: [...ids] } } });
}
