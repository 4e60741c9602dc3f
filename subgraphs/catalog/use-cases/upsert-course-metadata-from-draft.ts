import type { ConsumedEnvelope } from '../../../events/envelope.js';
import type { Tx } from '../../../platform/db/database.js';
import { normalizeAuthors, type Cover, type LocaleMap, type TaxonomyRef } from '../course/course-metadata.logic.js';
import type { CourseRow } from '../course/course.repo.js';
import { CATALOG_SYSTEM_ACTOR } from '../outbox-port.js';
import { registerOrMergeCourse } from './course-writes.js';
import { requireSameTenant, requireValidLocales, consumedEventStamp, type ConsumedEventDeps } from './consumed-event-rules.js';
import { draftLocaleFields } from './consumed-payload.logic.js';

/** authoring.course_draft.published v1, as its schema admits it (the runner validated it). */
export interface CourseDraftPublished {
  courseDraftId: string;
  tenantId: string;
  slug: string;
  defaultLocale: string;
  metadata: {
    title: LocaleMap;
    description?: LocaleMap;
    authors?: Array<{ userId: string; role?: string; displayName?: string }>;
    taxonomy?: TaxonomyRef[];
  };
  tags?: string[];
  cover?: Cover;
  visibility?: string;
}

/**
 * UpsertCourseMetadataFromDraft: creates the course when the slug is new (emitting `registered`),
 * otherwise merges the draft's fields (absent ones stay as they are) and emits
 * `metadata_updated` / `visibility_changed` for what changed. Never creates a version.
 */
export async function upsertCourseMetadataFromDraft(
  tx: Tx,
  envelope: ConsumedEnvelope,
  deps: ConsumedEventDeps,
): Promise<CourseRow> {
  const p = envelope.payload as unknown as CourseDraftPublished;
  const tenantId = requireSameTenant(envelope, p.tenantId);
  requireValidLocales(envelope, draftLocaleFields(p));
  const { course } = await registerOrMergeCourse(
    tx,
    {
      tenantId,
      slug: p.slug,
      values: {
        title: p.metadata.title,
        defaultLocale: p.defaultLocale,
        description: p.metadata.description,
        authors: p.metadata.authors ? normalizeAuthors(p.metadata.authors) : undefined,
        taxonomy: p.metadata.taxonomy,
        tags: p.tags,
        cover: p.cover,
        visibility: p.visibility,
        sourceDraftId: p.courseDraftId,
      },
      stamp: consumedEventStamp(envelope, 'draft'),
      actor: CATALOG_SYSTEM_ACTOR,
    },
    deps,
  );
  return course;
}
