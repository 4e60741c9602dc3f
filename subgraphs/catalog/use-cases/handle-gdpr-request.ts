import type { ConsumedEnvelope } from '../../../events/envelope.js';
import { permanentFailure } from '../../../events/consume/verdict.logic.js';
import type { Prisma, Tx } from '../../../platform/db/database.js';
import { isId } from '../../../platform/ids.js';
import type { Logger } from '../../../platform/observability/logger.js';
import { withFreshEtag } from '../course/course-etag.logic.js';
import { lockCoursesByAuthor, updateCourses } from '../course/course.repo.js';
import { CATALOG_SYSTEM_ACTOR } from '../outbox-port.js';
import { lockSubjectCopies, recordErasure, recordNotApplied } from '../gdpr/gdpr.repo.js';
import { decideGdprRequest, type NotAppliedReason } from '../gdpr/gdpr-request.logic.js';
import { redactAuthors, retentionPermitsZeroing } from '../gdpr/redaction.logic.js';
import { redactSubjectCopies, type CopiesRedacted, type Subject } from '../gdpr/subject-copies.js';
import { courseEvent } from './course-payloads.logic.js';
import { metadataOf } from './course-state.logic.js';
import { requireSameTenant, type ConsumedEventDeps } from './consumed-event-rules.js';

/** gdpr.subject_request.received v1. */
export interface SubjectRequestReceived {
  requestId: string;
  tenantId: string;
  subjectType: string;
  subjectId: string;
  requestType: string;
}

export interface GdprOutcome {
  handled: boolean;
  coursesRedacted: number;
  copiesRedacted: CopiesRedacted;
}

/**
 * HandleGdprRequest (spec, Consumed events): for a user subject, every course of the tenant whose
 * authors list the user gets the display name `[redacted]`; on erasure the user id becomes
 * `usr_` + 26 zeros where the course's retention class permits. One `metadata_updated`
 * (changedFields ['authors']) per course that changed. The same rule reaches every other copy of
 * the user the catalog keeps (redactSubjectCopies: the versions it published, each with a
 * `catalog.course_version.redacted`, taxonomy versions, the stored event history), and an erasure is
 * recorded so authors, publishers and actors arriving later are redacted on the way in.
 *
 * The emitted `previous` is withheld (`{}`): the old values are the personal data the request
 * removes, and an event repeating them would be a new copy on the stream and in the archive. Nor
 * does it repeat `next` (an equal previous and next reads as no change): consumers replace their
 * copy of each field in `changedFields` with `next`.
 */
export async function handleGdprRequest(tx: Tx, envelope: ConsumedEnvelope, deps: ConsumedEventDeps): Promise<GdprOutcome> {
  const p = envelope.payload as unknown as SubjectRequestReceived;
  const tenantId = requireSameTenant(envelope, p.tenantId);
  const log = deps.logger.child({ requestId: p.requestId });
  const decision = decideGdprRequest({ ...p, subjectIsUserId: isId('user', p.subjectId) });
  if (decision.kind === 'invalid') throw permanentFailure(decision.message, { requestId: p.requestId, field: 'requestType' });
  if (decision.kind === 'not_applied') {
    await recordNotApplied(tx, {
      tenantId,
      eventId: envelope.eventId,
      requestId: p.requestId,
      reason: decision.reason,
      requestType: p.requestType,
      subjectType: p.subjectType.slice(0, MAX_RECORDED_TYPE),
    });
    notAppliedLog(log, decision.reason, p);
    return NOTHING_APPLIED;
  }
  const erasure = decision.requestType === 'erasure';
  const subject = { tenantId, userId: p.subjectId };
  await lockSubjectCopies(tx, tenantId);
  if (erasure) await recordErasure(tx, { ...subject, requestId: p.requestId });
  const coursesRedacted = await redactCourseAuthors(tx, subject, erasure, deps);
  const copiesRedacted = await redactSubjectCopies(tx, subject, {
    erasure,
    zeroingClasses: deps.gdprZeroingRetentionClasses,
    events: deps.events,
  });
  log.info(
    { requestType: p.requestType, coursesRedacted, ...copiesRedacted },
    'GDPR request applied to courses and every other copy',
  );
  return { handled: true, coursesRedacted, copiesRedacted };
}

const NOTHING_APPLIED: GdprOutcome = {
  handled: false,
  coursesRedacted: 0,
  copiesRedacted: { versions: 0, taxonomyVersions: 0, storedEvents: 0, heldPackages: 0 },
};
/** A subject type is a free string: what is recorded of it is bounded. */
const MAX_RECORDED_TYPE = 64;

function notAppliedLog(log: Logger, reason: NotAppliedReason, p: SubjectRequestReceived): void {
  const fields = { reason, requestType: p.requestType, subjectType: p.subjectType.slice(0, MAX_RECORDED_TYPE) };
  if (reason === 'unknown_request_type') {
    // Not applying a kind of request we do not know may leave an obligation open: a person decides.
    log.warn(fields, 'GDPR request of a type the catalog does not know: acknowledged and recorded, not applied');
  } else log.info(fields, 'GDPR request for a subject the catalog does not hold: acknowledged and recorded');
}

/** The spec's rule on the authors of every course listing the user; one event per course changed. */
async function redactCourseAuthors(tx: Tx, subject: Subject, erasure: boolean, deps: ConsumedEventDeps): Promise<number> {
  let coursesRedacted = 0;
  for (const course of await lockCoursesByAuthor(tx, subject.tenantId, subject.userId)) {
    const before = metadataOf(course);
    const zeroIds = erasure && retentionPermitsZeroing(course.retentionClass, deps.gdprZeroingRetentionClasses);
    const redacted = redactAuthors(before.authors, { userIds: new Set([subject.userId]), zeroIds });
    if (!redacted.changed) continue;
    const saved = withFreshEtag({
      ...course,
      authors: redacted.authors as unknown as Prisma.JsonArray,
      updatedAt: deps.clock.now(),
    });
    await updateCourses(tx, [saved]);
    await deps.events.emit({
      eventType: 'catalog.course.metadata_updated',
      payload: {
        courseId: course.id,
        changedFields: ['authors'],
        // The old values are the personal data the request removes: withheld, never repeated.
        previous: {},
        next: { authors: redacted.authors },
        etag: saved.etag,
      },
      ...courseEvent(saved, CATALOG_SYSTEM_ACTOR),
    });
    coursesRedacted += 1;
  }
  return coursesRedacted;
}
