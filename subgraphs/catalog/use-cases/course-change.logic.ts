import type { Prisma } from '../../../platform/db/database.js';
import { diffMetadata, type StampedState } from '../course/course-metadata.logic.js';
import type { CourseRow } from '../course/course.repo.js';
import { withFreshEtag } from '../course/course-etag.logic.js';
import type { CatalogEvent } from '../outbox-port.js';
import { metadataUpdatedPayload, visibilityChangedPayload } from './course-payloads.logic.js';
import { metadataRow, stampedStateOf } from './course-state.logic.js';

export type CourseEventFacts = Pick<CatalogEvent, 'eventType' | 'payload'>;

/**
 * A course's next state as a row, with the tag of what it now holds, and the events saying what
 * changed: `metadata_updated` (changedFields, previous, next, the new etag) and/or
 * `visibility_changed`. `alsoChange` adds the rest of the same event's change (a new version) to
 * the row before the tag is taken. Null when nothing, not even a stamp, changed.
 */
export function courseStateChange(
  existing: CourseRow,
  next: StampedState,
  options: { visibilityReason: string; now: Date; alsoChange?: (row: CourseRow) => CourseRow },
): { row: CourseRow; events: CourseEventFacts[] } | null {
  const previous = stampedStateOf(existing);
  const diff = diffMetadata(previous.metadata, next.metadata);
  const visibilityChanged = next.visibility !== previous.visibility;
  const stampsChanged = JSON.stringify(next.provenance) !== JSON.stringify(previous.provenance);
  const merged = diff.changedFields.length || visibilityChanged || stampsChanged || next.sourceDraftId !== previous.sourceDraftId;
  if (!merged && !options.alsoChange) return null;

  const changed: CourseRow = {
    ...existing,
    ...metadataRow(next.metadata),
    visibility: next.visibility,
    sourceDraftId: next.sourceDraftId,
    metadataProvenance: next.provenance as Prisma.JsonObject,
    updatedAt: options.now,
  };
  const row = withFreshEtag(options.alsoChange ? options.alsoChange(changed) : changed);
  const events: CourseEventFacts[] = [];
  if (diff.changedFields.length) {
    events.push({ eventType: 'catalog.course.metadata_updated', payload: metadataUpdatedPayload(row, diff) });
  }
  if (visibilityChanged) {
    events.push({
      eventType: 'catalog.course.visibility_changed',
      payload: visibilityChangedPayload(row, previous.visibility, next.visibility, options.visibilityReason),
    });
  }
  return { row, events };
}
