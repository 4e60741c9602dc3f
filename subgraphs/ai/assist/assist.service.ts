import type { AiConfig } from '../../../platform/config/config.js';
import type { Db } from '../../../platform/db/database.js';
import { AppError, isAppError } from '../../../platform/errors.js';
import { newId } from '../../../platform/ids.js';
import type { Logger } from '../../../platform/logger.js';
import type { Metrics } from '../../../platform/metrics.js';
import type { AuditSink } from '../audit/audit.sink.js';
import { callWithFallbacks, type AttemptRecord, type CallEngineDeps, type CallResult } from '../providers/caller.js';
import type { ProviderRegistry } from '../providers/registry.js';
import {
  heldTextExpiry,
  outputHash,
  provenanceAuditDetails,
  type ProvenanceRecord,
  type ProvenanceStatus,
} from '../provenance/provenance.logic.js';
import { insertProvenance } from '../provenance/provenance.repo.js';
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
import { actorOf, decideRelease, parseAssistInput, totalTokens, type AssistRequestInput } from './assist.logic.js';
import { hasSignedAssessment, loadAssistSnapshot, type AssistSnapshot, type SnapshotCache } from './assist.repo.js';

/** A content classifier run on the output (phase 2); none is configured by default. */
export interface Moderator {
  classify(input: {
    tenantId: string;
    featureKey: string;
    text: string;
  }): Promise<{ flagged: boolean; classifier: string; categories: string[] }>;
}

export interface AssistCaller {
  tenantId: string;
  subject: string;
  requestId: string;
  traceparent: string;
  locales: readonly string[];
  logger: Logger;
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
}

export type AssistSettings = Pick<
  AiConfig,
  'maxOutputTokens' | 'maxPromptChars' | 'deadlineMs' | 'reviewTextRetentionHours' | 'assessmentResidencies'
>;

export interface AssistDeps {
  db: Db;
  quota: QuotaService;
  registry: ProviderRegistry;
  engine: Omit<CallEngineDeps, 'providers'>;
  audit: AuditSink;
  snapshots: SnapshotCache;
  settings: AssistSettings;
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

  async function record(snapshot: AssistSnapshot, caller: AssistCaller, row: ProvenanceRecord): Promise<void> {
    await deps.db.$transaction(
      async (tx) => {
        await insertProvenance(tx, row);
        await deps.audit.record(tx, {
          action: 'assist',
          tenantId: row.tenantId,
          actor: { type: row.actorType, id: row.actorId },
          target: { type: 'ai_provenance', id: row.id },
          details: provenanceAuditDetails(row),
          retentionClass: snapshot.tenant.retentionClass,
          dataResidency: row.residency ?? snapshot.tenant.dataResidency,
          traceparent: caller.traceparent,
          requestId: caller.requestId,
        });
        // Under load the pool is the queue: wait for a connection rather than fail a request
        // whose model call already happened (Prisma's default maxWait is 2 s).
      },
      { maxWait: 10_000, timeout: 10_000 },
    );
  }

  return {
    async assist(caller, input) {
      const started = deps.monotonic();
      const parsed = parseAssistInput(input, caller.locales);
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
      const finish = async (status: ProvenanceStatus, errorCode: string | null) => {
        row.status = status;
        row.errorCode = errorCode;
        row.completedAt = deps.clock();
        row.latencyMs = Math.round(deps.monotonic() - started);
        await record(snapshot, caller, row);
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
      };

      let call: CallResult;
      let queueMs: number;
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

        queueMs = Math.round(deps.monotonic() - started);
        call = await callWithFallbacks({ ...deps.engine, providers: deps.registry.providers }, plan.targets, {
          prompt,
          maxOutputTokens: settings.maxOutputTokens,
          mock: parsed.mock,
          deadlineAt: deps.engine.now() + settings.deadlineMs - queueMs,
        });
      } catch (error) {
        await deps.quota.settle(reservation, 0);
        const code = isAppError(error) ? error.code : 'INTERNAL_SERVER_ERROR';
        await finish(isAppError(error) ? 'rejected' : 'failed', code);
        throw isAppError(error) ? withProvenance(error, row.id) : error;
      }

      row.attempts.push(...call.attempts);
      row.providerLatencyMs = Math.round(call.providerMs);
      // Measured after the provenance write, so the caller sees the whole time spent here.
      const timings = () => ({ totalMs: Math.round(deps.monotonic() - started), providerMs: row.providerLatencyMs, queueMs });
      const templateRef = row.templateId
        ? { templateId: row.templateId, version: row.templateVersion!, hash: row.templateHash! }
        : null;

      if (!call.ok) {
        await deps.quota.settle(reservation, 0);
        const last = call.attempts.at(-1);
        if (call.blocked) {
          row.provider = last?.provider ?? null;
          row.model = last?.model ?? null;
          row.moderation = { source: 'provider', outcome: 'content_filter' };
          await finish('blocked', 'provider.content_filter');
          return {
            provenanceId: row.id,
            status: 'blocked',
            text: null,
            provider: row.provider,
            model: row.model,
            template: templateRef,
            timings: timings(),
            reviewState: null,
            mode: parsed.mode,
            outputHash: null,
          };
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

      let moderation: { flagged: boolean; classifier: string; categories: string[] } | null = null;
      if (deps.moderator && snapshot.flags.moderationEnabled) {
        moderation = await deps.moderator.classify({
          tenantId: caller.tenantId,
          featureKey: parsed.featureKey,
          text: response.text,
        });
        row.moderation = moderation;
      }
      const release = decideRelease({
        mode: parsed.mode,
        hitlMode: snapshot.hitlMode,
        hitlEnabled: snapshot.flags.hitlEnabled,
        moderation,
        moderationEnabled: snapshot.flags.moderationEnabled,
      });
      row.reviewState = release.reviewState;
      if (release.holdText) {
        row.heldText = response.text;
        row.heldTextExpiresAt = heldTextExpiry(createdAt, settings.reviewTextRetentionHours);
      }
      if (release.bypassed) {
        deps.metrics?.hitlPassthrough.inc({ feature: parsed.featureKey });
        caller.logger.warn(
          { provenanceId: row.id, featureKey: parsed.featureKey, alert: 'ai.safety_control_bypassed' },
          'review or moderation is switched off by flag; output released unreviewed',
        );
      }
      await finish(release.status, null);
      return {
        provenanceId: row.id,
        status: release.status,
        text: release.returnText ? response.text : null,
        provider: row.provider,
        model: row.model,
        template: templateRef,
        timings: timings(),
        reviewState: row.reviewState,
        mode: parsed.mode,
        outputHash: row.outputHash,
      };
    },
  };
}
