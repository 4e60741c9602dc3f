import { Prisma, type Db, type Tx } from '../../../platform/db/database.js';
import { columnList, poolReadsOf, type PoolRead } from '../../../platform/db/pool-reads.js';
import { gatedInsertSql, insertSql, type Column, type Gated } from '../../../platform/db/bulk-sql.js';
import { diffSummary, type DiffOp } from '../../../platform/text/text-diff.logic.js';
import type { AIProvenance as ProvenanceRow } from '../../../prisma/generated/client.js';
import type { ProvenanceRecord } from './provenance.logic.js';
import type { AIProvenance, ProviderAttempt } from './provenance.type.js';
import type { ReceiptWriter } from './receipts/receipt.repo.js';

export function findProvenance(db: Db, tenantId: string, id: string): Promise<ProvenanceRow | null> {
  return db.aIProvenance.findFirst({ where: { id, tenantId } });
}

/** A fixed text, prepared once per connection, on the pool past Prisma's runtime (platform/db/pool-reads.ts). */
const LATEST_BY_SUBJECTS: PoolRead = {
  name: 'ai_latest_provenance_by_subjects',
  summary: 'SELECT AIProvenance',
  text: `SELECT ${columnList(Prisma.AIProvenanceScalarFieldEnum, 'p')} FROM unnest($1::text[]) AS s(ref)
    CROSS JOIN LATERAL (
      SELECT * FROM "AIProvenance" WHERE "tenantId" = $2 AND "subjectRef" = s.ref
      ORDER BY "createdAt" DESC LIMIT $3
    ) p`,
};

/**
 * The newest `first` provenance rows of each subject in one statement (one index range per subject
 * through LATERAL), for the DataLoader behind `Course.aiProvenance`: the gateway asks for N courses
 * in one `_entities` call, and a query per course made that N round trips.
 */
export function findLatestProvenanceBySubjects(
  db: Db,
  tenantId: string,
  subjectRefs: readonly string[],
  first: number,
): Promise<ProvenanceRow[]> {
  return poolReadsOf(db).rows<ProvenanceRow>(LATEST_BY_SUBJECTS, [[...subjectRefs], tenantId, first]);
}

/** What `releasedText` reads of each record: the held text and the review state that may release it. */
export interface HeldText {
  id: string;
  heldText: string | null;
  reviewState: string | null;
}

/**
 * The held text of the given records of one tenant in one statement, for the DataLoader behind
 * `AIProvenance.releasedText`: a page of courses with their provenance asks for it on every record
 * (50 courses x 3 records), and a query per record made that 150 round trips.
 */
export function findHeldTexts(db: Db, tenantId: string, ids: readonly string[]): Promise<HeldText[]> {
  return db.aIProvenance.findMany({
    where: { id: { in: [...ids] }, tenantId },
    select: { id: true, heldText: true, reviewState: true },
  });
}

/** Every column a ProvenanceRecord sets; the others (review, legacy*) keep their defaults. */
const PROVENANCE_COLUMNS: readonly Column<ProvenanceRecord>[] = [
  { name: 'id', type: 'text', value: (r) => r.id },
  { name: 'tenantId', type: 'text', value: (r) => r.tenantId },
  { name: 'actorType', type: 'text', value: (r) => r.actorType },
  { name: 'actorId', type: 'text', value: (r) => r.actorId },
  { name: 'featureKey', type: 'text', value: (r) => r.featureKey },
  { name: 'status', type: 'text', value: (r) => r.status },
  { name: 'mode', type: 'text', value: (r) => r.mode },
  { name: 'templateId', type: 'text', value: (r) => r.templateId },
  { name: 'templateVersion', type: 'int', value: (r) => r.templateVersion },
  { name: 'templateHash', type: 'text', value: (r) => r.templateHash },
  { name: 'renderedPromptHash', type: 'text', value: (r) => r.renderedPromptHash },
  { name: 'ruleId', type: 'text', value: (r) => r.ruleId },
  { name: 'ruleVersion', type: 'int', value: (r) => r.ruleVersion },
  { name: 'provider', type: 'text', value: (r) => r.provider },
  { name: 'model', type: 'text', value: (r) => r.model },
  { name: 'attempts', type: 'jsonb', value: (r) => r.attempts },
  { name: 'outputHash', type: 'text', value: (r) => r.outputHash },
  { name: 'inputTokens', type: 'int', value: (r) => r.inputTokens },
  { name: 'outputTokens', type: 'int', value: (r) => r.outputTokens },
  { name: 'moderation', type: 'jsonb', value: (r) => r.moderation },
  { name: 'reviewState', type: 'text', value: (r) => r.reviewState },
  { name: 'facilityId', type: 'text', value: (r) => r.facilityId },
  { name: 'specialty', type: 'text', value: (r) => r.specialty },
  { name: 'subjectRef', type: 'text', value: (r) => r.subjectRef },
  { name: 'residency', type: 'text', value: (r) => r.residency },
  { name: 'heldText', type: 'text', value: (r) => r.heldText },
  { name: 'heldTextExpiresAt', type: 'timestamp', value: (r) => r.heldTextExpiresAt },
  { name: 'errorCode', type: 'text', value: (r) => r.errorCode },
  { name: 'latencyMs', type: 'int', value: (r) => r.latencyMs },
  { name: 'providerLatencyMs', type: 'int', value: (r) => r.providerLatencyMs },
  { name: 'createdAt', type: 'timestamp', value: (r) => r.createdAt },
  { name: 'completedAt', type: 'timestamp', value: (r) => r.completedAt },
];

/** Provenance rows as one INSERT, to be combined with their audit rows and receipts in one statement (assist). */
export function provenanceInsertSql(records: readonly ProvenanceRecord[], onlyIf?: Prisma.Sql): Prisma.Sql {
  return insertSql('AIProvenance', PROVENANCE_COLUMNS, records, { onlyIf });
}

/** Provenance rows of several requests in one statement, each written only if its gate is open (bulk-sql.ts). */
export function gatedProvenanceInsertSql(rows: readonly Gated<ProvenanceRecord>[], gateKeys: Prisma.Sql): Prisma.Sql {
  return gatedInsertSql('AIProvenance', PROVENANCE_COLUMNS, rows, gateKeys);
}

export async function insertProvenance(tx: Tx, record: ProvenanceRecord): Promise<void> {
  await tx.aIProvenance.create({
    data: {
      ...record,
      attempts: record.attempts as unknown as Prisma.InputJsonValue,
      moderation: (record.moderation ?? undefined) as Prisma.InputJsonValue | undefined,
    },
  });
}

/**
 * Drops output text held for review once its retention has passed; the hashes stay. An output
 * still waiting for its reviewer can then never be released, so its review ends as expired; an
 * edit's diff (which quotes the output) keeps only its size. Works in batches, each in one
 * transaction. Returns how many rows were purged.
 */
export async function purgeExpiredHeldText(db: Db, receipts: ReceiptWriter, now: Date, batch = 500): Promise<number> {
  let total = 0;
  for (;;) {
    const purged = await db.$transaction(async (tx) => {
      const rows = await tx.aIProvenance.findMany({
        where: { heldTextExpiresAt: { lte: now }, heldText: { not: null } },
        select: { id: true },
        take: batch,
      });
      if (rows.length === 0) return { scanned: 0, count: 0 };
      // The expiry is checked again by the UPDATE: a review decided meanwhile restarted the
      // retention of its released text, and that text (and its task) must survive this run.
      const purgedRows = await tx.aIProvenance.updateManyAndReturn({
        where: { id: { in: rows.map((r) => r.id) }, heldTextExpiresAt: { lte: now } },
        data: { heldText: null },
        select: { id: true },
      });
      const ids = purgedRows.map((r) => r.id);
      const expired = await tx.aIProvenance.updateManyAndReturn({
        where: { id: { in: ids }, reviewState: 'pending' },
        data: { status: 'rejected', reviewState: 'expired', errorCode: 'review.expired' },
      });
      // An output no one reviewed in time is rejected: a change of its record, with its receipt.
      await receipts.append(
        tx,
        expired.map((row) => ({ subject: row, event: 'review' as const })),
      );
      await tx.reviewTask.updateMany({
        where: { provenanceId: { in: ids }, state: { in: ['open', 'claimed'] } },
        data: { state: 'expired', claimedBy: null, claimExpiresAt: null, version: { increment: 1 } },
      });
      const edited = await tx.reviewTask.findMany({
        where: { provenanceId: { in: ids }, editDiff: { not: Prisma.DbNull } },
        select: { id: true, editDiff: true },
      });
      for (const task of edited) {
        if (!Array.isArray(task.editDiff)) continue;
        await tx.reviewTask.update({
          where: { id: task.id },
          data: { editDiff: diffSummary(task.editDiff as unknown as DiffOp[]) },
        });
      }
      return { scanned: rows.length, count: ids.length };
    });
    total += purged.count;
    if (purged.scanned < batch) return total;
  }
}

export function toProvenance(row: ProvenanceRow): AIProvenance {
  return {
    provenanceId: row.id,
    tenantId: row.tenantId,
    actorType: row.actorType,
    actorId: row.actorId,
    featureKey: row.featureKey,
    status: row.status,
    mode: row.mode,
    templateId: row.templateId,
    templateVersion: row.templateVersion,
    templateHash: row.templateHash,
    renderedPromptHash: row.renderedPromptHash,
    ruleId: row.ruleId,
    ruleVersion: row.ruleVersion,
    provider: row.provider,
    model: row.model,
    attempts: row.attempts as unknown as ProviderAttempt[],
    outputHash: row.outputHash,
    inputTokens: row.inputTokens,
    outputTokens: row.outputTokens,
    moderation: row.moderation,
    reviewState: row.reviewState,
    review: row.review as Record<string, unknown> | null,
    facilityId: row.facilityId,
    specialty: row.specialty,
    subjectRef: row.subjectRef,
    residency: row.residency,
    legacyBackfill: row.legacyBackfill,
    heldTextExpiresAt: row.heldTextExpiresAt,
    errorCode: row.errorCode,
    latencyMs: row.latencyMs,
    providerLatencyMs: row.providerLatencyMs,
    createdAt: row.createdAt,
    completedAt: row.completedAt,
  };
}
