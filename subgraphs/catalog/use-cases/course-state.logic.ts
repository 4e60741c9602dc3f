import type { Prisma } from '../../../platform/db/database.js';
import type { Author, CourseMetadata, Provenance, StampedState } from '../course/course-metadata.logic.js';
import type { CourseRow } from '../course/course.repo.js';

/**
 * A course row and the state the metadata rules work on, in both directions: the row keeps its
 * metadata as JSON columns, the rules (course-metadata.logic.ts) take typed values.
 */
export function metadataOf(row: CourseRow): CourseMetadata {
  return {
    title: row.title as Record<string, string>,
    description: row.description as Record<string, string>,
    defaultLocale: row.defaultLocale,
    authors: row.authors as unknown as Author[],
    taxonomy: row.taxonomy as unknown as CourseMetadata['taxonomy'],
    tags: row.tags,
    cover: (row.cover as CourseMetadata['cover']) ?? null,
  };
}

export function stampedStateOf(row: CourseRow): StampedState {
  return {
    metadata: metadataOf(row),
    visibility: row.visibility,
    sourceDraftId: row.sourceDraftId,
    provenance: (row.metadataProvenance ?? {}) as Provenance,
  };
}

/** The row's metadata columns holding `metadata` (the inverse of metadataOf). */
export function metadataRow(metadata: CourseMetadata) {
  return {
    title: metadata.title,
    description: metadata.description,
    defaultLocale: metadata.defaultLocale,
    authors: metadata.authors as unknown as Prisma.JsonArray,
    taxonomy: metadata.taxonomy as unknown as Prisma.JsonArray,
    tags: metadata.tags,
    cover: (metadata.cover as unknown as Prisma.JsonObject | null) ?? null,
  };
}
