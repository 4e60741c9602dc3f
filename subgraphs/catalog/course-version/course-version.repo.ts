import { insertSql, keyTuplesSql, type Column } from '../../../platform/db/bulk-sql.js';
import { Prisma, type Db, type Tx } from '../../../platform/db/database.js';
import { columnList, poolReadsOf, type PoolRead } from '../../../platform/db/pool-reads.js';
import type { CourseVersion } from '../../../prisma/generated/client.js';

export type CourseVersionRow = CourseVersion;

/**
 * The versions of a page of courses (the `versionsOfCourse` loader, one statement per page): a
 * fixed text with the ids as one array, so it is prepared once per connection, on the pool past
 * Prisma's runtime (platform/db/pool-reads.ts), which cost most per row.
 */
const VERSIONS_OF_COURSES: PoolRead = {
  name: 'catalog_versions_of_courses',
  summary: 'SELECT CourseVersion',
  text: `SELECT ${columnList(Prisma.CourseVersionScalarFieldEnum)} FROM "CourseVersion"
    WHERE "tenantId" = $1 AND "courseId" = ANY($2::text[]) ORDER BY "courseId" ASC, sequence ASC`,
};

export function findVersionsByCourseIds(db: Db, tenantId: string, courseIds: readonly string[]): Promise<CourseVersionRow[]> {
  return poolReadsOf(db).rows<CourseVersionRow>(VERSIONS_OF_COURSES, [tenantId, [...courseIds]]);
}

export function findVersionsByIds(db: Db, tenantId: string, ids: readonly string[]): Promise<CourseVersionRow[]> {
  return db.courseVersion.findMany({ where: { tenantId, id: { in: [...ids] } } });
}

export async function lockVersion(tx: Tx, tenantId: string, id: string): Promise<CourseVersionRow | null> {
  const locked = await tx.$queryRaw<Array<{ id: string }>>`
    SELECT id FROM "CourseVersion" WHERE "tenantId" = ${tenantId} AND id = ${id} FOR UPDATE`;
  return locked.length ? tx.courseVersion.findUnique({ where: { id } }) : null;
}

export function setVersionState(tx: Tx, id: string, state: string): Promise<CourseVersionRow> {
  return tx.courseVersion.update({ where: { id }, data: { state } });
}

// ------------------------------------------------------------------ set-based writes (a batch of consumed events)

export interface VersionKey {
  courseId: string;
  versionLabel: string;
}

const COLUMNS: readonly Column<CourseVersionRow>[] = [
  { name: 'id', type: 'text', value: (r) => r.id },
  { name: 'tenantId', type: 'text', value: (r) => r.tenantId },
  { name: 'courseId', type: 'text', value: (r) => r.courseId },
  { name: 'versionLabel', type: 'text', value: (r) => r.versionLabel },
  { name: 'major', type: 'int', value: (r) => r.major },
  { name: 'minor', type: 'int', value: (r) => r.minor },
  { name: 'patch', type: 'int', value: (r) => r.patch },
  { name: 'publishedBy', type: 'text', value: (r) => r.publishedBy },
  { name: 'durationMinutes', type: 'int', value: (r) => r.durationMinutes },
  { name: 'estimatedReadingMinutes', type: 'int', value: (r) => r.estimatedReadingMinutes },
  { name: 'locales', type: 'text[]', value: (r) => r.locales },
  { name: 'moduleSummaries', type: 'jsonb', value: (r) => r.moduleSummaries },
  { name: 'playPackageId', type: 'text', value: (r) => r.playPackageId },
  { name: 'playPackageSha256', type: 'text', value: (r) => r.playPackageSha256 },
  { name: 'playPackageFormat', type: 'text', value: (r) => r.playPackageFormat },
  { name: 'changelog', type: 'jsonb', value: (r) => r.changelog },
  { name: 'state', type: 'text', value: (r) => r.state },
  { name: 'becameLatest', type: 'bool', value: (r) => r.becameLatest },
  { name: 'sequence', type: 'int', value: (r) => r.sequence },
  { name: 'sourceEventId', type: 'text', value: (r) => r.sourceEventId },
  { name: 'createdAt', type: 'timestamp', value: (r) => r.createdAt },
  { name: 'updatedAt', type: 'timestamp', value: (r) => r.updatedAt },
];

export async function findVersionsByLabels(tx: Tx, keys: readonly VersionKey[]): Promise<CourseVersionRow[]> {
  if (!keys.length) return [];
  return tx.$queryRaw<CourseVersionRow[]>`
    SELECT * FROM "CourseVersion" WHERE ("courseId", "versionLabel") IN (VALUES ${keyTuplesSql(
      keys,
      (k) => k.courseId,
      (k) => k.versionLabel,
    )})`;
}

/** Inserts the rows as given, in one statement. */
export async function insertVersions(tx: Tx, rows: readonly CourseVersionRow[]): Promise<void> {
  if (rows.length) await tx.$executeRaw(insertSql('CourseVersion', COLUMNS, rows));
}
