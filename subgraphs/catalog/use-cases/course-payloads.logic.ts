import type { MetadataDiff } from '../course/course-metadata.logic.js';
import type { CourseRow } from '../course/course.repo.js';
import type { Actor } from '../outbox-port.js';

/** catalog.course.registered v1: the course as RegisterCourse created it. */
export function registeredPayload(course: CourseRow): object {
  return {
    courseId: course.id,
    slug: course.slug,
    title: course.title,
    defaultLocale: course.defaultLocale,
    visibility: course.visibility,
    authors: course.authors,
    taxonomy: course.taxonomy,
    ...(course.sourceDraftId ? { sourceDraftId: course.sourceDraftId } : {}),
  };
}

/** catalog.course.metadata_updated v1: what changed, and the tag the course now carries. */
export function metadataUpdatedPayload(course: CourseRow, diff: MetadataDiff): object {
  return { courseId: course.id, changedFields: diff.changedFields, previous: diff.previous, next: diff.next, etag: course.etag };
}

/** catalog.course.visibility_changed v1. */
export function visibilityChangedPayload(course: CourseRow, from: string, to: string, reason: string): object {
  return { courseId: course.id, from, to, reason };
}

/** The envelope facts every course event shares: tenant, partition (the course), actor, retention, residency. */
export function courseEvent(course: CourseRow, actor: Actor) {
  return {
    tenantId: course.tenantId,
    partitionKey: course.id,
    actor,
    retentionClass: course.retentionClass,
    dataResidency: course.dataResidency,
  };
}
