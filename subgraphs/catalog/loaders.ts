import DataLoader from 'dataloader';
import type { Db } from '../../platform/db/database.js';
import type { Taxonomy as TaxonomyRow } from '../../prisma/generated/client.js';
import { findCoursesByIds, type CourseRow } from './course/course.repo.js';
import { findVersionsByCourseIds, findVersionsByIds, type CourseVersionRow } from './course-version/course-version.repo.js';
import { findTaxonomiesByIds } from './taxonomy/taxonomy.repo.js';

/**
 * Per-request batching: every list field and every `__resolveReference` goes through a loader, so
 * a federated query for N courses costs one query per level, never N. Loaders are tenant-bound:
 * an id of another tenant simply resolves to null.
 */
export interface CatalogLoaders {
  course: DataLoader<string, CourseRow | null>;
  courseVersion: DataLoader<string, CourseVersionRow | null>;
  versionsOfCourse: DataLoader<string, CourseVersionRow[]>;
  taxonomy: DataLoader<string, TaxonomyRow | null>;
}

function byId<T extends { id: string }>(rows: T[], ids: readonly string[]): Array<T | null> {
  const map = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => map.get(id) ?? null);
}

export function createCatalogLoaders(db: Db, tenantId: string): CatalogLoaders {
  return {
    course: new DataLoader(async (ids) => byId(await findCoursesByIds(db, tenantId, ids), ids)),
    courseVersion: new DataLoader(async (ids) => byId(await findVersionsByIds(db, tenantId, ids), ids)),
    versionsOfCourse: new DataLoader(async (courseIds) => {
      const rows = await findVersionsByCourseIds(db, tenantId, courseIds);
      const grouped = new Map<string, CourseVersionRow[]>();
      for (const row of rows) {
        const versions = grouped.get(row.courseId);
        if (versions) versions.push(row);
        else grouped.set(row.courseId, [row]);
      }
      return courseIds.map((id) => grouped.get(id) ?? []);
    }),
    taxonomy: new DataLoader(async (ids) => byId(await findTaxonomiesByIds(db, tenantId, ids), ids)),
  };
}
