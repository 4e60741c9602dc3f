import { Prisma, type Tx } from '../../../platform/db/database.js';
import { newId } from '../../../platform/ids.js';
import {
  computeEtag,
  diffMetadata,
  initialProvenance,
  mergeStamped,
  type Author,
  type CourseMetadata,
  type FieldStamp,
  type IncomingValues,
  type Provenance,
  type StampedState,
} from '../course/course-metadata.logic.js';
import { insertCourseIfAbsent, lockCourseBySlug, updateCourse, type CourseRow } from '../course/course.repo.js';
import type { Actor, CatalogEmitter } from '../events.js';
import { erasedAmong } from '../gdpr/gdpr.repo.js';
import { redactAuthors, retentionPermitsZeroing } from '../gdpr/redaction.logic.js';
import { DEFAULT_VISIBILITY } from '../lifecycle.logic.js';
import { tenantPolicy } from '../tenant.repo.js';

/** What every catalog write needs besides the transaction. */
export interface WriteDeps {
  events: CatalogEmitter;
  /** Retention classes under which an erasure zeroes author ids (config policy table). */
  gdprZeroingRetentionClasses: readonly string[];
}

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

function metadataColumns(metadata: CourseMetadata) {
  return {
    title: metadata.title as Prisma.InputJsonValue,
    description: metadata.description as Prisma.InputJsonValue,
    defaultLocale: metadata.defaultLocale,
    authors: metadata.authors as unknown as Prisma.InputJsonValue,
    taxonomy: metadata.taxonomy as unknown as Prisma.InputJsonValue,
    tags: metadata.tags,
    cover: (metadata.cover as unknown as Prisma.InputJsonValue) ?? Prisma.DbNull,
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

/**
 * Authors arriving after an erasure (a later draft, a package, a dead letter replayed) are
 * redacted on the way in by the erasure registry, so an erased name never comes back.
 */
export async function redactErasedAuthors(
  tx: Tx,
  tenantId: string,
  authors: Author[] | undefined,
  retentionClass: string,
  deps: Pick<WriteDeps, 'gdprZeroingRetentionClasses'>,
): Promise<Author[] | undefined> {
  if (!authors?.length) return authors;
  const erased = await erasedAmong(
    tx,
    tenantId,
    authors.map((author) => author.userId),
  );
  if (!erased.size) return authors;
  return redactAuthors(authors, {
    userIds: erased,
    zeroIds: retentionPermitsZeroing(retentionClass, deps.gdprZeroingRetentionClasses),
  }).authors;
}

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

export function courseEvent(course: CourseRow, actor: Actor) {
  return {
    tenantId: course.tenantId,
    partitionKey: course.id,
    actor,
    retentionClass: course.retentionClass,
    dataResidency: course.dataResidency,
  };
}

export interface CourseSource {
  tenantId: string;
  slug: string;
  values: IncomingValues & { title: CourseMetadata['title']; defaultLocale: string };
  stamp: FieldStamp;
  actor: Actor;
}

/**
 * RegisterCourse, or the metadata part of an existing course, from a consumed event: creates the
 * course when the slug is new in the tenant (emitting `registered`), otherwise merges the event's
 * fields by the precedence rule. Returns the course locked for the rest of the transaction.
 */
export async function registerOrMergeCourse(
  tx: Tx,
  source: CourseSource,
  deps: WriteDeps,
): Promise<{ course: CourseRow; created: boolean }> {
  let existing = await lockCourseBySlug(tx, source.tenantId, source.slug);
  if (!existing) {
    const policy = await tenantPolicy(tx, source.tenantId);
    const values: IncomingValues = {
      ...source.values,
      authors: await redactErasedAuthors(tx, source.tenantId, source.values.authors, policy.retentionClass, deps),
    };
    const metadata: CourseMetadata = {
      title: source.values.title,
      description: values.description ?? {},
      defaultLocale: source.values.defaultLocale,
      authors: values.authors ?? [],
      taxonomy: values.taxonomy ?? [],
      tags: values.tags ?? [],
      cover: values.cover ?? null,
    };
    const inserted = await insertCourseIfAbsent(tx, {
      id: newId('course'),
      tenantId: source.tenantId,
      slug: source.slug,
      ...metadataColumns(metadata),
      visibility: values.visibility ?? DEFAULT_VISIBILITY,
      sourceDraftId: values.sourceDraftId ?? null,
      etag: computeEtag(metadata),
      retentionClass: policy.retentionClass,
      dataResidency: policy.dataResidency,
      metadataProvenance: initialProvenance(values, source.stamp) as Prisma.InputJsonValue,
    });
    existing = await lockCourseBySlug(tx, source.tenantId, source.slug);
    if (!existing) throw new Error(`course ${source.slug} vanished between insert and lock`);
    if (inserted) {
      await deps.events.emit({
        eventType: 'catalog.course.registered',
        payload: registeredPayload(existing),
        ...courseEvent(existing, source.actor),
      });
      return { course: existing, created: true };
    }
    // Another transaction registered the slug first: merge into its course like any update.
  }
  const values = {
    ...source.values,
    authors: await redactErasedAuthors(tx, source.tenantId, source.values.authors, existing.retentionClass, deps),
  };
  const merged = mergeStamped(stampedStateOf(existing), values, source.stamp);
  const course = await saveCourseState(tx, existing, merged, deps, {
    actor: source.actor,
    visibilityReason: `authoring draft ${source.values.sourceDraftId ?? 'update'} published`,
  });
  return { course, created: false };
}

/**
 * Writes a course's new metadata, visibility and stamps, and emits what changed:
 * `metadata_updated` (changedFields, previous, next, new etag) and/or `visibility_changed`.
 * Writes nothing when nothing (not even a stamp) changed.
 */
export async function saveCourseState(
  tx: Tx,
  existing: CourseRow,
  next: StampedState,
  deps: WriteDeps,
  options: { actor: Actor; visibilityReason: string },
): Promise<CourseRow> {
  const previous = stampedStateOf(existing);
  const diff = diffMetadata(previous.metadata, next.metadata);
  const visibilityChanged = next.visibility !== previous.visibility;
  const stampsChanged = JSON.stringify(next.provenance) !== JSON.stringify(previous.provenance);
  if (!diff.changedFields.length && !visibilityChanged && !stampsChanged && next.sourceDraftId === previous.sourceDraftId)
    return existing;

  const etag = diff.changedFields.length ? computeEtag(next.metadata) : existing.etag;
  const course = await updateCourse(tx, existing.id, {
    ...metadataColumns(next.metadata),
    visibility: next.visibility,
    sourceDraftId: next.sourceDraftId,
    metadataProvenance: next.provenance as Prisma.InputJsonValue,
    etag,
  });
  if (diff.changedFields.length) {
    await deps.events.emit({
      eventType: 'catalog.course.metadata_updated',
      payload: { courseId: course.id, changedFields: diff.changedFields, previous: diff.previous, next: diff.next, etag },
      ...courseEvent(course, options.actor),
    });
  }
  if (visibilityChanged) {
    await deps.events.emit({
      eventType: 'catalog.course.visibility_changed',
      payload: { courseId: course.id, from: previous.visibility, to: next.visibility, reason: options.visibilityReason },
      ...courseEvent(course, options.actor),
    });
  }
  return course;
}
