import type { Db, Prisma, Tx } from '../../../platform/db/database.js';
import type { Logger } from '../../../platform/logger.js';
import { tenantPolicy } from '../tenant.repo.js';
import {
  eraseTaxonomyAuthor,
  eraseVersionPublisher,
  forgetErasedId,
  lockIncompleteErasures,
  lockStoredEventsMentioning,
  replaceStoredEnvelope,
} from './gdpr.repo.js';
import { redactStoredCopy, retentionPermitsZeroing } from './redaction.logic.js';

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
}

/**
 * A data-subject request applied to every copy of the subject the catalog keeps besides course
 * authors: on erasure, where the retention class permits zeroing, the versions the user published
 * (`publishedBy`) and the taxonomy versions (their author); and on any request the stored event
 * history (unpublished outbox rows and the 13-month archive): names redacted, and on erasure the
 * id zeroed wherever it appears (payloads and actors), each row by its own retention class.
 */
export async function redactSubjectCopies(
  tx: Tx,
  subject: Subject,
  options: { erasure: boolean; zeroingClasses: readonly string[] },
): Promise<CopiesRedacted> {
  let versions = 0;
  let taxonomyVersions = 0;
  if (options.erasure) {
    versions = await eraseVersionPublisher(tx, subject, options.zeroingClasses);
    // A taxonomy has no retention class of its own: its events carry the tenant's.
    const { retentionClass } = await tenantPolicy(tx, subject.tenantId);
    if (retentionPermitsZeroing(retentionClass, options.zeroingClasses))
      taxonomyVersions = await eraseTaxonomyAuthor(tx, subject);
  }
  const storedEvents = await redactStoredEvents(tx, subject, options);
  return { versions, taxonomyVersions, storedEvents };
}

async function redactStoredEvents(
  tx: Tx,
  subject: Subject,
  options: { erasure: boolean; zeroingClasses: readonly string[] },
): Promise<number> {
  let redactedRows = 0;
  const userIds = new Set([subject.userId]);
  for (const row of await lockStoredEventsMentioning(tx, subject.tenantId, subject.userId)) {
    const zeroIds = options.erasure && retentionPermitsZeroing(row.envelope.retentionClass ?? '', options.zeroingClasses);
    const redacted = redactStoredCopy(row.envelope, { userIds, zeroIds });
    if (!redacted.changed) continue;
    await replaceStoredEnvelope(tx, row.id, redacted.value as Prisma.InputJsonValue);
    redactedRows += 1;
  }
  return redactedRows;
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
  deps: { zeroingClasses: readonly string[]; logger: Logger },
): Promise<number> {
  let completed = 0;
  for (;;) {
    const done = await db.$transaction(
      async (tx) => {
        const erasures = await lockIncompleteErasures(tx, ERASURES_PER_TRANSACTION);
        for (const erasure of erasures) {
          const copies = await redactSubjectCopies(tx, erasure, { erasure: true, zeroingClasses: deps.zeroingClasses });
          await forgetErasedId(tx, erasure);
          deps.logger.info({ tenantId: erasure.tenantId, ...copies }, 'a recorded erasure reached every copy');
        }
        return erasures.length;
      },
      { timeout: 60_000, maxWait: 10_000 },
    );
    completed += done;
    if (done < ERASURES_PER_TRANSACTION) return completed;
  }
}
