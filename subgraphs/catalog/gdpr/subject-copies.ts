import type { Db, Prisma, Tx } from '../../../platform/db/database.js';
import type { Logger } from '../../../platform/observability/logger.js';
import { ERASED_USER_ID } from '../../../platform/ids.js';
import { CATALOG_SYSTEM_ACTOR, type CatalogEmitter, type CatalogEvents } from '../outbox-port.js';
import { lockHeldMentioning, replaceHeldEnvelope } from '../course-version/held-package.repo.js';
import { DEFAULT_RETENTION_CLASS, retentionClassOfSlug, tenantPolicy } from '../tenant.repo.js';
import {
  erasedAmong,
  eraseTaxonomyAuthor,
  eraseVersionPublisher,
  forgetErasedId,
  type ErasedVersion,
  lockIncompleteErasures,
} from './gdpr.repo.js';
import { lockStoredEventsMentioning, replaceStoredEnvelope } from '../../shared/gdpr/stored-events.repo.js';
import { redactStoredCopy, retentionPermitsZeroing, userIdsIn } from './redaction.logic.js';

/** The data subject of a request: a user of one tenant. */
export interface Subject {
  tenantId: string;
  userId: string;
}

/** How many copies of the subject, besides course authors, a request changed. */
export interface CopiesRedacted {
  versions: number;
  taxonomyVersions: number;
  storedEvents: number;
  /** Built events held for an unknown package format (they are applied later). */
  heldPackages: number;
}

/**
 * A data-subject request applied to every copy of the subject the catalog keeps besides course
 * authors: on erasure, where the retention class permits zeroing, the versions the user published
 * (`publishedBy`, one `catalog.course_version.redacted` each, so the gateways' cached answers and
 * consumers' copies follow) and the taxonomy versions (their author, which no reader is shown);
 * and on any request the stored event
 * history (unpublished outbox rows and the 13-month archive): names redacted, and on erasure the
 * id zeroed wherever it appears (payloads and actors), each row by its own retention class; and
 * the built events held for an unknown package format, by the retention class of their course
 * (the tenant's while there is none).
 */
export async function redactSubjectCopies(
  tx: Tx,
  subject: Subject,
  options: { erasure: boolean; zeroingClasses: readonly string[]; events: CatalogEmitter },
): Promise<CopiesRedacted> {
  let versions = 0;
  let taxonomyVersions = 0;
  if (options.erasure) {
    const erasedVersions = await eraseVersionPublisher(tx, subject, options.zeroingClasses);
    await emitVersionsRedacted(options.events, erasedVersions);
    versions = erasedVersions.length;
    // A taxonomy has no retention class of its own: its events carry the tenant's.
    const { retentionClass } = await tenantPolicy(tx, subject.tenantId);
    if (retentionPermitsZeroing(retentionClass, options.zeroingClasses))
      taxonomyVersions = await eraseTaxonomyAuthor(tx, subject);
  }
  const storedEvents = await redactCopies(
    await lockStoredEventsMentioning(tx, subject, ['catalog.']),
    (row) => ({ value: row.envelope, retentionClass: row.envelope.retentionClass ?? '' }),
    (row, envelope) => replaceStoredEnvelope(tx, row.id, envelope as Prisma.InputJsonValue),
    subject,
    options,
  );
  const heldPackages = await redactCopies(
    await lockHeldMentioning(tx, subject.tenantId, subject.userId),
    (row) => ({ value: row.envelope, retentionClass: row.retentionClass ?? DEFAULT_RETENTION_CLASS }),
    (row, envelope) => replaceHeldEnvelope(tx, subject.tenantId, row.eventId, envelope),
    subject,
    options,
  );
  return { versions, taxonomyVersions, storedEvents, heldPackages };
}

/**
 * One `catalog.course_version.redacted` per version whose publisher was zeroed, written before the
 * stored history is redacted (it names only the zero id, so that walk leaves it as it is). Without
 * it nothing tells the gateways: their cached `publishedBy` would live until the TTL.
 */
async function emitVersionsRedacted(events: CatalogEmitter, versions: readonly ErasedVersion[]): Promise<void> {
  const ordered = [...versions].sort((a, b) => a.courseVersionId.localeCompare(b.courseVersionId));
  for (const version of ordered) {
    await events.emit({
      eventType: 'catalog.course_version.redacted',
      payload: {
        courseVersionId: version.courseVersionId,
        courseId: version.courseId,
        redactedFields: ['publishedBy'],
        publishedBy: ERASED_USER_ID,
      },
      tenantId: version.tenantId,
      partitionKey: version.courseId,
      actor: CATALOG_SYSTEM_ACTOR,
      retentionClass: version.retentionClass,
      dataResidency: version.dataResidency,
    });
  }
}

/** Rewrites the locked rows holding a copy of the subject by the rule; how many changed. */
async function redactCopies<R>(
  rows: readonly R[],
  copyOf: (row: R) => { value: unknown; retentionClass: string },
  save: (row: R, value: unknown) => Promise<void>,
  subject: Subject,
  options: { erasure: boolean; zeroingClasses: readonly string[] },
): Promise<number> {
  let redactedRows = 0;
  const userIds = new Set([subject.userId]);
  for (const row of rows) {
    const { value, retentionClass } = copyOf(row);
    const zeroIds = options.erasure && retentionPermitsZeroing(retentionClass, options.zeroingClasses);
    const redacted = redactStoredCopy(value, { userIds, zeroIds });
    if (!redacted.changed) continue;
    await save(row, redacted.value);
    redactedRows += 1;
  }
  return redactedRows;
}

/**
 * A copy about to be stored (a built event held for an unknown format) with every user erased in
 * the tenant redacted, as if the erasure had reached it: names `[redacted]`, ids zeroed where the
 * retention class of the course (the tenant's, before the course exists) permits.
 */
export async function withoutErasedUsers<T>(
  tx: Tx,
  where: { tenantId: string; slug: string },
  value: T,
  zeroingClasses: readonly string[],
): Promise<T> {
  const userIds = userIdsIn(value);
  if (!userIds.size) return value;
  const erased = await erasedAmong(tx, where.tenantId, [...userIds]);
  if (!erased.size) return value;
  const zeroIds = retentionPermitsZeroing(await retentionClassOfSlug(tx, where.tenantId, where.slug), zeroingClasses);
  return redactStoredCopy(value, { userIds: erased, zeroIds }).value as T;
}

/** Erasures completed per transaction by completeRecordedErasures. */
const ERASURES_PER_TRANSACTION = 20;

/**
 * Erasures recorded before the catalog erased the subject from every copy (they reached course
 * authors only) are carried to the other copies with the retention classes configured now; the
 * record then keeps only the digest of the id. Safe to run from every replica at once (the rows
 * are taken with SKIP LOCKED) and again (a completed erasure is not taken twice). Returns how many
 * it completed.
 */
export async function completeRecordedErasures(
  db: Db,
  deps: { zeroingClasses: readonly string[]; logger: Logger; events: CatalogEvents; afterEventsCommitted?: () => void },
): Promise<number> {
  let completed = 0;
  for (;;) {
    const done = await db.$transaction(
      async (tx) => {
        const erasures = await lockIncompleteErasures(tx, ERASURES_PER_TRANSACTION);
        for (const erasure of erasures) {
          const events = deps.events.forRequest(tx, { correlationId: erasure.requestId });
          const copies = await redactSubjectCopies(tx, erasure, { erasure: true, zeroingClasses: deps.zeroingClasses, events });
          await forgetErasedId(tx, erasure);
          deps.logger.info({ tenantId: erasure.tenantId, ...copies }, 'a recorded erasure reached every copy');
        }
        return erasures.length;
      },
      { timeout: 60_000, maxWait: 10_000 },
    );
    completed += done;
    if (done) deps.afterEventsCommitted?.();
    if (done < ERASURES_PER_TRANSACTION) return completed;
  }
}
