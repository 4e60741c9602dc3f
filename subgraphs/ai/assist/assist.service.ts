import { effectInsertSql, effectOfWinner, keyedTransaction, recordedEffect } from '../../../platform/idempotency/effect-store.js';
import type { EffectClaim } from '../../../platform/idempotency/effect.logic.js';
import type { AiConfig } from '../../../platform/config/config.js';
import { Prisma, type Db } from '../../../platform/db/database.js';
import { outboxInsertSql } from '../../../events/outbox.js';
import { AppError, isAppError } from '../../../platform/errors.js';
import { newId } from '../../../platform/ids.js';
import type { Logger } from '../../../platform/logger.js';
import type { Metrics } from '../../../platform/metrics.js';
import type { AuditEvent, AuditSink } from '../audit/audit.sink.js';
import { callWithFallbacks, type AttemptRecord, type CallEngineDeps, type CallResult } from '../providers/caller.js';
import type { ProviderRegistry } from '../providers/registry.js';
import {
  heldTextExpiry,
  outputHash,
  provenanceAuditDetails,
  type ProvenanceRecord,
  type ProvenanceStatus,
} from '../provenance/provenance.logic.js';
import { insertProvenance, provenanceInsertSql } from '../provenance/provenance.repo.js';
import { estimateTokens } from '../quota/quota.logic.js';
import type { QuotaReservation, QuotaService } from '../quota/quota.service.js';
import {
  planAttempts,
  requireResidencyServed,
  requiresAssessment,
  selectRule,
  type AttemptPlan,
} from '../routing/routing.logic.js';
import { promptHash, renderTemplate } from '../templates/template.logic.js';
import { moderationRequired, type ModerationStage, type ModerationVerdict } from '../moderation/moderation.logic.js';
import type { Moderator } from '../moderation/moderator.js';
import { ModerationUnavailableError } from '../moderation/openai-moderation.js';
import { openReviewTask } from '../review/review.repo.js';
import {
  actorOf,
  decideRelease,
  parseAssistInput,
  totalTokens,
  type AssistRequestInput,
  type SafetyControl,
} from './assist.logic.js';
import { hasSignedAssessment, loadAssistSnapshot, type AssistSnapshot, type SnapshotCache } from './assist.repo.js';

export type { Moderator } from '../moderation/moderator.js';

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

export interface AssistOutput {
  provenanceId: string;
  status: 'completed' | 'pending_review' | 'blocked';
  text: string | null;
  provider: string | null;
  model: string | null;
  template: { templateId: string; version: number; hash: string } | null;
  timings: { totalMs: number; providerMs: number | null; queueMs: number | null };
  reviewState: string | null;
  mode: 'live' | 'shadow';
  outputHash: string | null;
  /** Why nothing was released: moderation.blocked or provider.content_filter; null otherwise. */
  code: string | null;
  /** Categories the classifier flagged, when it blocked the request. */
  moderationCategories: string[] | null;
  /** The review task of an output held for review. */
  reviewTaskId: string | null;
}

export type AssistSettings = Pick<
  AiConfig,
  'maxOutputTokens' | 'maxPromptChars' | 'deadlineMs' | 'reviewTextRetentionHours' | 'assessmentResidencies'
> & { moderation: Pick<AiConfig['moderation'], 'features'> };

export interface AssistDeps {
  db: Db;
  quota: QuotaService;
  registry: ProviderRegistry;
  engine: Omit<CallEngineDeps, 'providers'>;
  audit: AuditSink;
  snapshots: SnapshotCache;
  settings: AssistSettings;
  /** Required for features under AI_MODERATION_FEATURES; without one they fail closed. */
  moderator?: Moderator;
  clock: () => Date;
  /** Monotonic milliseconds for timings. */
  monotonic: () => number;
  logger: Logger;
  metrics?: Metrics;
}

export interface AssistService {
  assist(caller: AssistCaller, input: AssistRequestInput): Promise<AssistOutput>;
}

/** Adds the provenance id to an error's client-facing details, keeping its code, status and headers. */
function withProvenance(error: AppError, provenanceId: string): AppError {
  return new AppError(error.code, error.message, {
    status: error.status,
    details: { ...(error.details ?? {}), provenanceId },
    headers: error.headers,
    cause: error,
  });
}

/**
 * The assist pipeline: input → quota → template → route → call → release decision → provenance
 * and audit (one transaction). Every request admitted by the quota leaves exactly one provenance
 * row, whether it completed, was held, blocked, rejected or failed.
 */
export function createAssistService(deps: AssistDeps): AssistService {
  const { settings } = deps;

  /**
   * The provenance row, its audit event, and what the release decision adds (the review task of a
   * held output, the alert of a bypassed safety control) commit together or not at all.
   */
  const auditOf = (
    snapshot: AssistSnapshot,
    caller: AssistCaller,
    row: ProvenanceRecord,
    action: string,
    details: Record<string, unknown>,
  ): AuditEvent => ({
    action,
    tenantId: row.tenantId,
    actor: { type: row.actorType, id: row.actorId },
    target: { type: 'ai_provenance', id: row.id },
    details,
    retentionClass: snapshot.tenant.retentionClass,
    dataResidency: row.residency ?? snapshot.tenant.dataResidency,
    traceparent: caller.traceparent,
    requestId: caller.requestId,
  });

  async function record(
    snapshot: AssistSnapshot,
    caller: AssistCaller,
    row: ProvenanceRecord,
    extra?: { holdForReview?: boolean; bypassed?: SafetyControl[] },
    answer?: (reviewTaskId: string | null) => AssistOutput,
  ): Promise<{ reviewTaskId: string | null; output?: AssistOutput }> {
    // Only an answered request is an effect a retry must get back; a failed or refused one frees
    // the key at the gateway, and its retry is a new attempt with a provenance row of its own.
    const claim = answer ? caller.effect : undefined;
    if (!extra?.holdForReview && !extra?.bypassed?.length) return recordInOneStatement(snapshot, caller, row, claim, answer);
    return keyedTransaction(
      deps.db,
      claim,
      async (tx) => {
        await insertProvenance(tx, row);
        const audit = (action: string, details: Record<string, unknown>) =>
          deps.audit.record(tx, auditOf(snapshot, caller, row, action, details));
        await audit('assist', provenanceAuditDetails(row));
        // Rollback of phase 2: "the gateway passes content through without review; log and alert".
        // The alert is an audit event of its own, so the audit service can page on its type.
        for (const control of extra?.bypassed ?? []) {
          await audit(control === 'review' ? 'hitl_passthrough' : 'moderation_passthrough', {
            provenanceId: row.id,
            featureKey: row.featureKey,
            control,
            flag: control === 'review' ? 'hitl.enabled' : 'moderation.enabled',
            outputHash: row.outputHash,
          });
        }
        let reviewTaskId: string | null = null;
        if (extra?.holdForReview) {
          const task = await openReviewTask(tx, {
            tenantId: row.tenantId,
            provenanceId: row.id,
            featureKey: row.featureKey,
            facilityId: row.facilityId,
            specialty: row.specialty,
            createdAt: row.createdAt,
          });
          reviewTaskId = task.taskId;
          if (!task.queueId) {
            caller.logger.warn(
              { provenanceId: row.id, reviewTaskId, facilityId: row.facilityId, specialty: row.specialty },
              'no review queue matches this facility and specialty; the task waits unrouted',
            );
          }
        }
        return { reviewTaskId, output: answer?.(reviewTaskId) };
        // Under load the pool is the queue: wait for a connection rather than fail a request
        // whose model call already happened (Prisma's default maxWait is 2 s).
      },
      { maxWait: 10_000, timeout: 10_000, skipLookup: true },
    );
  }

  /**
   * The common case — no review task, no bypass alert — as ONE statement: the provenance row,
   * its audit outbox row and (with an Idempotency-Key) the effect row, written together or not at
   * all without an interactive transaction (its round trips were most of this path's database
   * cost; bench/README.md, assist). With a key the effect row is inserted first and the other two
   * only if it was: when another execution of the same request holds the key, nothing is written
   * and the answer is that execution's.
   */
  async function recordInOneStatement(
    snapshot: AssistSnapshot,
    caller: AssistCaller,
    row: ProvenanceRecord,
    claim: EffectClaim | undefined,
    answer?: (reviewTaskId: string | null) => AssistOutput,
  ): Promise<{ reviewTaskId: string | null; output?: AssistOutput }> {
    const auditRows = deps.audit.prepare(auditOf(snapshot, caller, row, 'assist', provenanceAuditDetails(row)));
    // The live answer is built again after the write, so its timings include it; the recorded one
    // (what a retry gets) carries the timings known when it was written.
    const answered = () => ({ reviewTaskId: null, output: answer?.(null) });
    if (!claim) {
      await deps.db.$executeRaw`WITH provenance AS (${provenanceInsertSql(row)}) ${outboxInsertSql(auditRows)}`;
      return answered();
    }
    const value = answered();
    claim.consumed = true;
    const now = new Date();
    const keyed = Prisma.sql`EXISTS (SELECT 1 FROM effect)`;
    const [{ written }] = await deps.db.$queryRaw<Array<{ written: number }>>`
      WITH effect AS (${effectInsertSql(claim, value, now)}),
        provenance AS (${provenanceInsertSql(row, keyed)}),
        audit AS (${outboxInsertSql(auditRows, keyed)})
      SELECT count(*)::int AS written FROM effect`;
    return written === 1 ? answered() : effectOfWinner(deps.db, claim, now);
  }

  /**
   * Runs the classifier at one stage, within the request's deadline. A classifier that cannot
   * decide fails the request (moderation.unavailable): a required control never fails open.
   */
  async function moderate(
    stage: ModerationStage,
    caller: AssistCaller,
    request: { featureKey: string; residency: string | null },
    text: string,
    deadlineAt: number,
  ) {
    const { featureKey, residency } = request;
    if (!deps.moderator) {
      throw new AppError('moderation.unavailable', `Moderation is required for ${featureKey} but no classifier is configured`, {
        status: 503,
      });
    }
    try {
      return await deps.moderator.classify({
        tenantId: caller.tenantId,
        featureKey,
        stage,
        text,
        residency,
        signal: AbortSignal.timeout(Math.max(1, deadlineAt - deps.engine.now())),
      });
    } catch (error) {
      const reason = error instanceof ModerationUnavailableError ? error.reason : 'classifier_error';
      caller.logger.warn({ featureKey, stage, reason }, 'moderation classifier unavailable; failing closed');
      throw new AppError('moderation.unavailable', 'The moderation classifier could not judge the content; retry shortly', {
        status: 503,
        details: { stage, reason, retryAfterSeconds: 5 },
        headers: { 'retry-after': '5' },
      });
    }
  }

  /** What provenance keeps of a verdict: the classifier, categories and reasons, never text. */
  const verdictRecord = (verdict: ModerationVerdict) => ({
    flagged: verdict.flagged,
    classifier: verdict.classifier,
    categories: verdict.categories,
    reasons: verdict.reasons,
  });

  return {
    async assist(caller, input) {
      const started = deps.monotonic();
      const parsed = parseAssistInput(input, caller.locales);
      // A retry whose first execution answered (the gateway lost its record in a crash) gets that
      // answer again, before any quota or provider is spent on it.
      // (What `record` wrote under the key: its transaction's value, the answer in `output`.)
      const recorded = await recordedEffect<{ output?: AssistOutput }>(deps.db, caller.effect);
      if (recorded?.value.output) return recorded.value.output;
      const snapshot = await deps.snapshots.get(caller.tenantId, parsed.featureKey, () =>
        loadAssistSnapshot(deps.db, caller.tenantId, parsed.featureKey),
      );
      const reservedTokens = estimateTokens(parsed.inputChars + (snapshot.template?.body.length ?? 0), settings.maxOutputTokens);
      const reservation: QuotaReservation = await deps.quota.reserve(caller.tenantId, snapshot.tenant.quota, reservedTokens);

      // From here on, the request leaves a provenance row whatever happens.
      const createdAt = deps.clock();
      const actor = actorOf(caller.subject);
      const row: ProvenanceRecord = {
        id: newId('provenance', createdAt.getTime()),
        tenantId: caller.tenantId,
        actorType: actor.type,
        actorId: actor.id,
        featureKey: parsed.featureKey,
        status: 'failed',
        mode: parsed.mode,
        templateId: null,
        templateVersion: null,
        templateHash: null,
        renderedPromptHash: null,
        ruleId: null,
        ruleVersion: null,
        provider: null,
        model: null,
        attempts: [],
        outputHash: null,
        inputTokens: null,
        outputTokens: null,
        moderation: null,
        reviewState: null,
        facilityId: parsed.facilityId,
        specialty: parsed.specialty,
        subjectRef: parsed.subjectRef,
        residency: parsed.residency,
        heldText: null,
        heldTextExpiresAt: null,
        errorCode: null,
        latencyMs: 0,
        providerLatencyMs: null,
        createdAt,
        completedAt: createdAt,
      };
      const finish = async (
        status: ProvenanceStatus,
        errorCode: string | null,
        extra?: { holdForReview?: boolean; bypassed?: SafetyControl[] },
        answer?: (reviewTaskId: string | null) => AssistOutput,
      ) => {
        row.status = status;
        row.errorCode = errorCode;
        row.completedAt = deps.clock();
        row.latencyMs = Math.round(deps.monotonic() - started);
        const written = await record(snapshot, caller, row, extra, answer);
        caller.logger.info(
          {
            provenanceId: row.id,
            featureKey: row.featureKey,
            status,
            errorCode,
            provider: row.provider,
            model: row.model,
            totalMs: row.latencyMs,
            providerMs: row.providerLatencyMs,
          },
          'assist',
        );
        return written;
      };
      const needsModeration = moderationRequired(parsed.featureKey, settings.moderation.features);
      const moderating = needsModeration && snapshot.flags.moderationEnabled;
      const deadlineAt = deps.engine.now() + settings.deadlineMs;
      const moderationRecord: Record<string, unknown> = {};

      let call: CallResult | undefined;
      let queueMs: number;
      let blockedInput: ModerationVerdict | undefined;
      try {
        const template = snapshot.template;
        if (!template) {
          throw new AppError('template.not_found', `No active prompt template for ${parsed.featureKey}`, {
            status: 422,
            details: { featureKey: parsed.featureKey },
          });
        }
        row.templateId = template.id;
        row.templateVersion = template.version;
        row.templateHash = template.hash;
        const prompt = renderTemplate(template.body, parsed.variables, settings.maxPromptChars);
        row.renderedPromptHash = promptHash(prompt);

        if (requiresAssessment(parsed.residency, settings.assessmentResidencies)) {
          if (!(await hasSignedAssessment(deps.db, caller.tenantId, parsed.residency!, createdAt))) {
            throw new AppError(
              'routing.assessment_required',
              `Residency ${parsed.residency} needs a signed data-protection impact assessment of the tenant`,
              {
                details: { residency: parsed.residency },
              },
            );
          }
        }
        const rule = selectRule(snapshot.rules, {
          tenantId: caller.tenantId,
          featureKey: parsed.featureKey,
          residency: parsed.residency,
        });
        if (!rule || !rule.primary) {
          throw new AppError(
            'routing.no_rule',
            `No routing rule applies to ${parsed.featureKey}${parsed.residency ? ` with residency ${parsed.residency}` : ''}`,
            {
              details: { featureKey: parsed.featureKey, residency: parsed.residency },
            },
          );
        }
        row.ruleId = rule.ruleId;
        row.ruleVersion = rule.activeVersion;
        // Rollback switch of phase 3: multi-provider off routes to the primary alone.
        const fallbacks = snapshot.flags.multiProviderEnabled ? (rule.fallbacks ?? []) : [];
        const plan: AttemptPlan = planAttempts({ primary: rule.primary, fallbacks }, parsed.residency, deps.registry.profiles);
        row.attempts.push(
          ...plan.skipped.map((t): AttemptRecord => ({
            provider: t.provider,
            model: t.model,
            attempt: 0,
            outcome: t.reason === 'residency' ? 'skipped_residency' : 'not_configured',
            latencyMs: 0,
            errorCode: t.reason,
          })),
        );
        requireResidencyServed(plan, parsed.residency);

        // Phase 2: the prompt is judged before any provider sees it.
        if (moderating) {
          const verdict = await moderate('input', caller, parsed, prompt, deadlineAt);
          moderationRecord.input = verdictRecord(verdict);
          row.moderation = { required: true, ...moderationRecord };
          if (verdict.flagged) blockedInput = verdict;
        }

        queueMs = Math.round(deps.monotonic() - started);
        if (!blockedInput) {
          call = await callWithFallbacks({ ...deps.engine, providers: deps.registry.providers }, plan.targets, {
            prompt,
            maxOutputTokens: settings.maxOutputTokens,
            mock: parsed.mock,
            deadlineAt: deps.engine.now() + settings.deadlineMs - queueMs,
          });
        }
      } catch (error) {
        await deps.quota.settle(reservation, 0);
        const code = isAppError(error) ? error.code : 'INTERNAL_SERVER_ERROR';
        // A request the gateway could not serve (5xx) failed; one it refused (4xx) was rejected.
        await finish(isAppError(error) && error.status < 500 ? 'rejected' : 'failed', code);
        throw isAppError(error) ? withProvenance(error, row.id) : error;
      }

      const templateRef = () =>
        row.templateId ? { templateId: row.templateId, version: row.templateVersion!, hash: row.templateHash! } : null;
      const blocked = async (code: string, categories: string[] | null): Promise<AssistOutput> => {
        const written = await finish('blocked', code, undefined, () => ({
          provenanceId: row.id,
          status: 'blocked',
          text: null,
          provider: row.provider,
          model: row.model,
          template: templateRef(),
          timings: { totalMs: Math.round(deps.monotonic() - started), providerMs: row.providerLatencyMs, queueMs },
          reviewState: null,
          mode: parsed.mode,
          outputHash: row.outputHash,
          code,
          moderationCategories: categories,
          reviewTaskId: null,
        }));
        return written.output!;
      };
      if (blockedInput || !call) {
        // Nothing was sent to a provider: no tokens were used.
        await deps.quota.settle(reservation, 0);
        return blocked('moderation.blocked', blockedInput?.categories ?? []);
      }

      row.attempts.push(...call.attempts);
      row.providerLatencyMs = Math.round(call.providerMs);
      // Measured as the provenance is written, so the caller sees nearly all the time spent here.
      const timings = () => ({ totalMs: Math.round(deps.monotonic() - started), providerMs: row.providerLatencyMs, queueMs });

      if (!call.ok) {
        await deps.quota.settle(reservation, 0);
        const last = call.attempts.at(-1);
        if (call.blocked) {
          row.provider = last?.provider ?? null;
          row.model = last?.model ?? null;
          row.moderation = { ...row.moderation, source: 'provider', outcome: 'content_filter' };
          return blocked('provider.content_filter', null);
        }
        await finish('failed', 'provider.unavailable');
        throw new AppError(
          'provider.unavailable',
          'No provider could serve the request; the attempts are in its provenance record',
          {
            details: { provenanceId: row.id, attempts: row.attempts.length },
          },
        );
      }

      const { response, target } = call;
      await deps.quota.settle(reservation, totalTokens(response.usage));
      row.provider = target.provider;
      row.model = response.model;
      row.outputHash = outputHash(response.text);
      row.inputTokens = response.usage?.inputTokens ?? null;
      row.outputTokens = response.usage?.outputTokens ?? null;

      let moderation: ModerationVerdict | null = null;
      if (moderating) {
        try {
          moderation = await moderate('output', caller, parsed, response.text, deadlineAt);
        } catch (error) {
          // The provider answered but the answer cannot be judged: it is withheld, not released.
          await finish('failed', 'moderation.unavailable');
          throw withProvenance(error as AppError, row.id);
        }
        moderationRecord.output = verdictRecord(moderation);
        row.moderation = { required: true, ...moderationRecord };
      } else if (needsModeration) {
        row.moderation = { required: true, bypassedByFlag: true };
      }
      const release = decideRelease({
        mode: parsed.mode,
        hitlMode: snapshot.hitlMode,
        hitlEnabled: snapshot.flags.hitlEnabled,
        moderation,
        moderationRequired: needsModeration,
        moderationEnabled: snapshot.flags.moderationEnabled,
      });
      if (release.status === 'blocked') return blocked('moderation.blocked', moderation?.categories ?? []);
      row.reviewState = release.reviewState;
      if (release.holdText) {
        row.heldText = response.text;
        row.heldTextExpiresAt = heldTextExpiry(createdAt, settings.reviewTextRetentionHours);
      }
      const written = await finish(
        release.status,
        null,
        { holdForReview: release.holdText, bypassed: release.bypassedControls },
        (reviewTaskId) => ({
          provenanceId: row.id,
          status: release.status,
          text: release.returnText ? response.text : null,
          provider: row.provider,
          model: row.model,
          template: templateRef(),
          timings: timings(),
          reviewState: row.reviewState,
          mode: parsed.mode,
          outputHash: row.outputHash,
          code: null,
          moderationCategories: null,
          reviewTaskId,
        }),
      );
      // Counted and logged after the commit: the alert describes an output that was really released.
      if (release.bypassed) {
        if (release.bypassedControls.includes('review')) deps.metrics?.hitlPassthrough.inc({ feature: parsed.featureKey });
        caller.logger.warn(
          {
            provenanceId: row.id,
            featureKey: parsed.featureKey,
            bypassed: release.bypassedControls,
            alert: 'ai.safety_control_bypassed',
          },
          'a safety control is switched off by flag; the output passed without it',
        );
      }
      return written.output!;
    },
  };
}
