import type { Db } from '../../../platform/db/database.js';
import type { AIProvenance as ProvenanceRow } from '../../../prisma/generated/client.js';
import type { AIProvenance, ProviderAttempt } from './provenance.type.js';

export function findProvenance(db: Db, tenantId: string, id: string): Promise<ProvenanceRow | null> {
  return db.aIProvenance.findFirst({ where: { id, tenantId } });
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
    moderation: row.moderation,
    reviewState: row.reviewState,
    review: row.review as Record<string, unknown> | null,
    facilityId: row.facilityId,
    specialty: row.specialty,
    subjectRef: row.subjectRef,
    residency: row.residency,
    legacyBackfill: row.legacyBackfill,
    errorCode: row.errorCode,
    latencyMs: row.latencyMs,
    createdAt: row.createdAt,
    completedAt: row.completedAt,
  };
}
