import type { CourseRow } from './course.repo.js';
import type { Course, CourseAuthor, CourseCover, CourseTaxonomyRef } from './course.type.js';

export function toCourse(row: CourseRow): Course {
  return {
    courseId: row.id,
    tenantId: row.tenantId,
    slug: row.slug,
    title: row.title as Record<string, string>,
    description: row.description as Record<string, string>,
    defaultLocale: row.defaultLocale,
    visibility: row.visibility,
    authors: row.authors as unknown as CourseAuthor[],
    taxonomy: row.taxonomy as unknown as CourseTaxonomyRef[],
    tags: row.tags,
    cover: (row.cover as CourseCover | null) ?? null,
    etag: row.etag,
    sourceDraftId: row.sourceDraftId,
    state: row.state,
    latestVersionLabel: row.latestVersionLabel,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
