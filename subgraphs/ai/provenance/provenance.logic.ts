import { sha256Hex } from '../../../platform/text/canonical-json.js';
import type { AttemptRecord } from '../providers/call-engine.js';

export type ProvenanceStatus = 'completed' | 'pending_review' | 'blocked' | 'failed' | 'rejected';

/**
 * Everything one assist request leaves behind, as plain data. Hashes stand in for text; the only
 * text is `heldText`, the output kept for a human reviewer until `heldTextExpiresAt`.
 */
export interface ProvenanceRecord {
  id: string;
  tenantId: string;
  actorType: string;
  actorId: string;
  featureKey: string;
  status: ProvenanceStatus;
  mode: 'live' | 'shadow';
  templateId: string | null;
  templateVersion: number | null;
  templateHash: string | null;
  renderedPromptHash: string | null;
  ruleId: string | null;
  ruleVersion: number | null;
  provider: string | null;
  model: string | null;
  attempts: AttemptRecord[];
  outputHash: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  moderation: Record<string, unknown> | null;
  reviewState: string | null;
  facilityId: string;
  specialty: string;
  subjectRef: string | null;
  residency: string | null;
  heldText: string | null;
  heldTextExpiresAt: Date | null;
  errorCode: string | null;
  latencyMs: number;
  providerLatencyMs: number | null;
  createdAt: Date;
  completedAt: Date;
}

export function outputHash(text: string): string {
  return `sha256:${sha256Hex(text)}`;
}

export function heldTextExpiry(now: Date, retentionHours: number): Date {
  return new Date(now.getTime() + retentionHours * 3_600_000);
}

const AUDITED_FIELDS = [
  'featureKey',
  'status',
  'mode',
  'provider',
  'model',
  'templateId',
  'templateVersion',
  'templateHash',
  'renderedPromptHash',
  'ruleId',
  'ruleVersion',
  'outputHash',
  'errorCode',
] as const satisfies ReadonlyArray<keyof ProvenanceRecord>;

/** What the audit event of an assist carries: ids, hashes and codes of the record, no text. */
export function provenanceAuditDetails(record: ProvenanceRecord): Record<string, unknown> {
  const details: Record<string, unknown> = { provenanceId: record.id, attempts: record.attempts.length };
  for (const field of AUDITED_FIELDS) details[field] = record[field];
  return details;
}
