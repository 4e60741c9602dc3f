import type { Db, Prisma, Tx } from '../../../platform/db/database.js';
import type { AIProvenance as ProvenanceRow } from '../../../prisma/generated/client.js';
import type { ProvenanceRecord } from './provenance.logic.js';
import type { AIProvenance, ProviderAttempt } from './provenance.type.js';

export function findProvenance(db: Db, tenantId: string, id: string): Promise<ProvenanceRow | null> {
  return db.aIProvenance.findFirst({ where: { id, tenantId } });
}

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
  return db.$queryRaw<ProvenanceRow[]>`
    SELECT p.* FROM unnest(${[...subjectRefs]}::text[]) AS s(ref)
    CROSS JOIN LATERAL (
      SELECT * FROM "AIProvenance" WHERE "tenantId" = ${tenantId} AND "subjectRef" = s.ref
      ORDER BY "createdAt" DESC LIMIT ${first}
    ) p`;
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
 * Drops output text held for review once its retention has passed; the hashes stay. Returns how
 * many rows were purged.
 */
export async function purgeExpiredHeldText(db: Db, now: Date): Promise<number> {
  const result = await db.aIProvenance.updateMany({
    where: { heldTextExpiresAt: { lte: now }, heldText: { not: null } },
    data: { heldText: null },
  });
  return result.count;
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
