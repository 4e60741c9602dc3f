import type { ConsumedEnvelope } from '../../../events/envelope.js';
import { permanentFailure } from '../../../events/verdict.logic.js';
import type { Prisma, Tx } from '../../../platform/db/database.js';
import { isId } from '../../../platform/ids.js';
import { computeEtag } from '../course/course-metadata.logic.js';
import { lockCoursesByAuthor, updateCourse } from '../course/course.repo.js';
import { CATALOG_SYSTEM_ACTOR } from '../outbox-port.js';
import { lockStoredEventsMentioning, recordErasure, replaceStoredEnvelope } from '../gdpr/gdpr.repo.js';
import { redactAuthors, redactPayload, retentionPermitsZeroing, type GdprRequestType } from '../gdpr/redaction.logic.js';
import { courseEvent, metadataOf } from './course-writes.js';
import { requireSameTenant, type ConsumedEventDeps } from './consumed-event-rules.js';

/** gdpr.subject_request.received v1. */
export interface SubjectRequestReceived {
  requestId: string;
  tenantId: string;
  subjectType: string;
  subjectId: string;
  requestType: string;
}

const REQUEST_TYPES: readonly string[] = ['access', 'rectification', 'erasure'] satisfies GdprRequestType[];

export interface GdprOutcome {
  handled: boolean;
  coursesRedacted: number;
  storedEventsRedacted: number;
}

/**
 * HandleGdprRequest (spec, Consumed events): for a user subject, every course of the tenant whose
 * authors list the user gets the display name `[redacted]`; on erasure the user id becomes
 * `usr_` + 26 zeros where the course's retention class permits. One `metadata_updated`
 * (changedFields ['authors']) per course that changed. The same rule is applied to the stored
 * event history the service owns (unpublished outbox rows and the published archive), and an
 * erasure is recorded so authors arriving later are redacted on the way in.
 *
 * The emitted `previous` cannot show the removed name or id without publishing them again, so for
 * these events `previous.authors` equals `next.authors`; consumers replace their copy with `next`.
 */
export async function handleGdprRequest(tx: Tx, envelope: ConsumedEnvelope, deps: ConsumedEventDeps): Promise<GdprOutcome> {
  const p = envelope.payload as unknown as SubjectRequestReceived;
  const tenantId = requireSameTenant(envelope, p.tenantId);
  const log = deps.logger.child({ requestId: p.requestId, requestType: p.requestType });
  const skipped: GdprOutcome = { handled: false, coursesRedacted: 0, storedEventsRedacted: 0 };
  if (p.subjectType !== 'user') {
    log.info(
      { subjectType: p.subjectType },
      'GDPR request for a subject type the catalog does not hold; acknowledged and ignored',
    );
    return skipped;
  }
  if (!REQUEST_TYPES.includes(p.requestType)) {
    // Dropping an unknown request type could drop an obligation: a person must look at it.
    throw permanentFailure(`Unknown GDPR request type "${p.requestType}"`, { requestId: p.requestId });
  }
  if (!isId('user', p.subjectId)) {
    log.info('GDPR subject is not a user id; no course can list it');
    return skipped;
  }
  const erasure = p.requestType === 'erasure';
  if (erasure) await recordErasure(tx, { tenantId, userId: p.subjectId, requestId: p.requestId });
  const subject = new Set([p.subjectId]);

  let coursesRedacted = 0;
  for (const course of await lockCoursesByAuthor(tx, tenantId, p.subjectId)) {
    const before = metadataOf(course);
    const zeroIds = erasure && retentionPermitsZeroing(course.retentionClass, deps.gdprZeroingRetentionClasses);
    const redacted = redactAuthors(before.authors, { userIds: subject, zeroIds });
    if (!redacted.changed) continue;
    const etag = computeEtag({ ...before, authors: redacted.authors });
    const saved = await updateCourse(tx, course.id, { authors: redacted.authors as unknown as Prisma.InputJsonValue, etag });
    await deps.events.emit({
      eventType: 'catalog.course.metadata_updated',
      payload: {
        courseId: course.id,
        changedFields: ['authors'],
        // The only change is the personal data itself, which the event may not repeat.
        previous: { authors: redacted.authors },
        next: { authors: redacted.authors },
        etag,
      },
      ...courseEvent(saved, CATALOG_SYSTEM_ACTOR),
    });
    coursesRedacted += 1;
  }

  let storedEventsRedacted = 0;
  for (const row of await lockStoredEventsMentioning(tx, tenantId, p.subjectId)) {
    const zeroIds = erasure && retentionPermitsZeroing(row.envelope.retentionClass ?? '', deps.gdprZeroingRetentionClasses);
    const redacted = redactPayload(row.envelope.payload, { userIds: subject, zeroIds });
    if (!redacted.changed) continue;
    await replaceStoredEnvelope(tx, row.id, { ...row.envelope, payload: redacted.payload } as Prisma.InputJsonValue);
    storedEventsRedacted += 1;
  }
  log.info({ coursesRedacted, storedEventsRedacted }, 'GDPR request applied to courses and stored events');
  return { handled: true, coursesRedacted, storedEventsRedacted };
}
