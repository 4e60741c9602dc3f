import type { Clock } from '../../../platform/clock.js';
import type { AiConfig } from '../config.js';
import type { AiMetrics } from '../metrics.js';
import type { Db } from '../../../platform/db/database.js';
import type { EffectClaim } from '../../../platform/idempotency/effect.logic.js';
import type { Logger } from '../../../platform/observability/logger.js';
import type { AuditSink } from '../audit/audit.sink.js';
import type { ModerationVerdict } from '../moderation/moderation.logic.js';
import type { Moderator } from '../moderation/moderator.js';
import type { CallEngineDeps } from '../providers/call-engine.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { ProvenanceRecord } from '../provenance/provenance.logic.js';
import type { ReceiptWriter } from '../provenance/receipts/receipt.repo.js';
import type { QuotaReservation, QuotaService } from '../quota/quota.service.js';
import type { Target } from '../routing/routing.logic.js';
import type { AssistEnd, AssistOutput, ParsedAssist } from './assist.logic.js';
import type { AssistSnapshot, SnapshotCache } from './assist.repo.js';

export type AssistSettings = Pick<
  AiConfig,
  'maxOutputTokens' | 'maxPromptChars' | 'deadlineMs' | 'reviewTextRetentionHours' | 'assessmentResidencies'
> & { moderation: Pick<AiConfig['moderation'], 'features'> };

/** What the assist pipeline is made of; every stage takes what it needs from here. */
export interface AssistDeps {
  db: Db;
  quota: QuotaService;
  registry: ProviderRegistry;
  /** Breakers, retries and backoff of provider calls (the providers come from `registry`, the time from `clock`). */
  callPolicy: Omit<CallEngineDeps, 'providers' | 'clock'>;
  audit: AuditSink;
  snapshots: SnapshotCache;
  settings: AssistSettings;
  /** Required for features under AI_MODERATION_FEATURES; without one they fail closed. */
  moderator?: Moderator;
  clock: Clock;
  metrics?: Pick<AiMetrics, 'hitlPassthrough'>;
  /** Signs each record's receipt in the transaction that writes it. */
  receipts: ReceiptWriter;
}

/** Who asks, from the request context. */
export interface AssistCaller {
  tenantId: string;
  subject: string;
  requestId: string;
  traceparent: string;
  locales: readonly string[];
  logger: Logger;
  /** The request's Idempotency-Key claim: an answered assist is recorded under it with its provenance. */
  effect?: EffectClaim;
}

/** An admitted request: the facts every stage reads and none changes. */
export interface AssistRequest {
  caller: AssistCaller;
  input: ParsedAssist;
  /** Tenant, template, rules, HITL policy and flags as read once for this request. */
  snapshot: AssistSnapshot;
  /** What the quota holds for this request until it is settled with the real usage. */
  reservation: QuotaReservation;
  provenanceId: string;
  /** Clock reading (ms) when the request arrived: its timings count from here. */
  startedAtMs: number;
  /** When it was admitted: the provenance row's createdAt. */
  createdAt: Date;
  /** No provider or classifier call runs past this clock reading (ms). */
  deadlineAtMs: number;
  /** The feature's policy requires moderation (AI_MODERATION_FEATURES). */
  moderationRequired: boolean;
  /** ... and the classifier runs (moderation.enabled is not switched off by flag). */
  moderating: boolean;
}

/** What the stages know so far. Each stage returns a new draft; none changes the one it was given. */
export interface AssistDraft {
  /** The provenance row as it would be written if the request ended now. */
  record: ProvenanceRecord;
  /** The rendered prompt (render). */
  prompt: string | null;
  /** The providers to try, in order: route's residency decision (decideRoute), and nothing else. */
  targets: readonly Target[];
  /** The classifier's verdicts on the prompt and on the answer, when it ran. */
  inputVerdict: ModerationVerdict | null;
  outputVerdict: ModerationVerdict | null;
  /** Milliseconds from arrival until the provider call could start. */
  queueMs: number | null;
  /** The provider's answer text (call providers). */
  answer: string | null;
  /**
   * The quota's correction to the real usage, once call providers sent it; null until then (the
   * reservation is then settled unused at the end). It runs beside the later stages and the record,
   * and the answer waits for it.
   */
  quotaSettlement: Promise<void> | null;
}

/** One stage's result: the next draft, and how the request ends when this stage decided it. */
export interface Step {
  draft: AssistDraft;
  end?: AssistEnd;
}

/** The value written under the request's Idempotency-Key with an answered assist. */
export interface RecordedAssist {
  reviewTaskId: string | null;
  output?: AssistOutput;
}
