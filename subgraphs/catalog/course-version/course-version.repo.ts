import type { Db, Prisma, Tx } from '../../../platform/db/database.js';
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

export function findVersionByLabel(tx: Tx, courseId: string, versionLabel: string): Promise<CourseVersionRow | null> {
  return tx.courseVersion.findUnique({ where: { courseId_versionLabel: { courseId, versionLabel } } });
}

export function createVersion(tx: Tx, data: Prisma.CourseVersionUncheckedCreateInput): Promise<CourseVersionRow> {
  return tx.courseVersion.create({ data });
}

export async function lockVersion(tx: Tx, tenantId: string, id: string): Promise<CourseVersionRow | null> {
  const locked = await tx.$queryRaw<Array<{ id: string }>>`
    SELECT id FROM "CourseVersion" WHERE "tenantId" = ${tenantId} AND id = ${id} FOR UPDATE`;
  return locked.length ? tx.courseVersion.findUnique({ where: { id } }) : null;
}

export function setVersionState(tx: Tx, id: string, state: string): Promise<CourseVersionRow> {
  return tx.courseVersion.update({ where: { id }, data: { state } });
}
