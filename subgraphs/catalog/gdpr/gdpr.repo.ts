import { keyTuplesSql } from '../../../platform/db/bulk-sql.js';
import { Prisma, type Tx } from '../../../platform/db/database.js';
import { ERASED_USER_ID } from '../../../platform/ids.js';
import { erasureKey } from './redaction.logic.js';

/**
 * Serialises, per tenant, a GDPR request with the writes of copies no row lock covers (a held
 * package inserted while the request runs). Without it each transaction misses the other's
 * uncommitted rows: the hold reads no erasure yet, the erasure finds no held row yet, and the
 * name stays. With it, whichever commits second sees the first.
 */
export async function lockSubjectCopies(tx: Tx, tenantId: string): Promise<void> {
  await tx.$queryRaw`SELECT 1 AS locked FROM (SELECT pg_advisory_xact_lock(hashtextextended(${`catalog-gdpr:${tenantId}`}, 0))) l`;
}

export async function recordErasure(tx: Tx, entry: { tenantId: string; userId: string; requestId: string }): Promise<void> {
  await tx.erasedAuthor.createMany({
    data: [{ tenantId: entry.tenantId, userIdSha256: erasureKey(entry.userId), requestId: entry.requestId }],
    skipDuplicates: true,
  });
}

/** A request acknowledged without being applied, and why; a redelivery of it records nothing new. */
export async function recordNotApplied(
  tx: Tx,
  entry: { tenantId: string; eventId: string; requestId: string; reason: string; requestType: string; subjectType: string },
): Promise<void> {
  await tx.gdprRequestNotApplied.createMany({ data: [entry], skipDuplicates: true });
}

export async function erasedAmong(tx: Tx, tenantId: string, userIds: string[]): Promise<Set<string>> {
  const erased = await erasedAmongTenants(
    tx,
    userIds.map((userId) => ({ tenantId, userId })),
  );
  return erased.get(tenantId) ?? new Set();
}

/** Which of these (tenant, user) pairs were erased, as userIds per tenant; one statement. */
export async function erasedAmongTenants(
  tx: Tx,
  pairs: ReadonlyArray<{ tenantId: string; userId: string }>,
): Promise<Map<string, Set<string>>> {
  const erased = new Map<string, Set<string>>();
  if (!pairs.length) return erased;
  const keyed = pairs.map((pair) => ({ ...pair, key: erasureKey(pair.userId) }));
  const rows = await tx.$queryRaw<Array<{ tenantId: string; userIdSha256: string }>>`
    SELECT "tenantId", "userIdSha256" FROM "ErasedAuthor" WHERE ("tenantId", "userIdSha256") IN (VALUES ${keyTuplesSql(
      keyed,
      (p) => p.tenantId,
      (p) => p.key,
    )})`;
  const found = new Set(rows.map((row) => `${row.tenantId}\u0000${row.userIdSha256}`));
  for (const pair of keyed) {
    if (found.has(`${pair.tenantId}\u0000${pair.key}`))
      erased.set(pair.tenantId, (erased.get(pair.tenantId) ?? new Set()).add(pair.userId));
  }
  return erased;
}

/** A version whose publisher an erasure zeroed, with the envelope facts of its course's events. */
export interface ErasedVersion {
  courseVersionId: string;
  courseId: string;
  tenantId: string;
  retentionClass: string;
  dataResidency: string;
}

/**
 * The versions of the tenant the user published, on courses whose retention class permits zeroing,
 * get the erased id as `publishedBy`. Returns the versions changed: each needs an event, or the
 * copies made from it (the gateways' cached answers, consumers' indexes) keep the id.
 */
export async function eraseVersionPublisher(
  tx: Tx,
  subject: { tenantId: string; userId: string },
  zeroingClasses: readonly string[],
): Promise<ErasedVersion[]> {
  if (!zeroingClasses.length) return [];
  return tx.$queryRaw<ErasedVersion[]>`
    UPDATE "CourseVersion" AS v SET "publishedBy" = ${ERASED_USER_ID}, "updatedAt" = now()
      FROM "Course" AS c
     WHERE c.id = v."courseId" AND v."tenantId" = ${subject.tenantId} AND v."publishedBy" = ${subject.userId}
       AND c."retentionClass" IN (${Prisma.join(zeroingClasses)})
    RETURNING v.id AS "courseVersionId", v."courseId", v."tenantId", c."retentionClass", c."dataResidency"`;
}

/** The taxonomy versions of the tenant the user published get the erased id as their author. */
export async function eraseTaxonomyAuthor(tx: Tx, subject: { tenantId: string; userId: string }): Promise<number> {
  return tx.$executeRaw`
    UPDATE "TaxonomyVersion" SET "createdBy" = ${ERASED_USER_ID}
     WHERE "tenantId" = ${subject.tenantId} AND "createdBy" = ${subject.userId}`;
}

export interface RecordedErasure {
  tenantId: string;
  userIdSha256: string;
  userId: string;
  /** The GDPR request that recorded it: the correlation of the events completing it. */
  requestId: string;
}

/**
 * Up to `limit` erasures recorded before the record named users by digest, whose erasure has not
 * reached every copy yet, locked (others running the same step skip them).
 */
export async function lockIncompleteErasures(tx: Tx, limit: number): Promise<RecordedErasure[]> {
  return tx.$queryRaw<RecordedErasure[]>`
    SELECT "tenantId", "userIdSha256", "userId", "requestId" FROM "ErasedAuthor" WHERE "userId" IS NOT NULL
     ORDER BY "createdAt" LIMIT ${limit} FOR UPDATE SKIP LOCKED`;
}

/** The erasure reached every copy: the record keeps only the digest. */
export async function forgetErasedId(tx: Tx, erasure: { tenantId: string; userIdSha256: string }): Promise<void> {
  await tx.erasedAuthor.update({
    where: { tenantId_userIdSha256: { tenantId: erasure.tenantId, userIdSha256: erasure.userIdSha256 } },
    data: { userId: null },
  });
}
