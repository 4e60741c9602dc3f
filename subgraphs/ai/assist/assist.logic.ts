import { AppError, badInput, isAppError } from '../../../platform/errors/errors.js';
import type { ModerationStage, ModerationVerdict } from '../moderation/moderation.logic.js';
import type { AttemptRecord } from '../providers/call-engine.js';
import { parseMockDirective } from '../providers/mock.js';
import type { MockDirective } from '../providers/provider.js';
import type { ProvenanceRecord, ProvenanceStatus } from '../provenance/provenance.logic.js';
import { validateFeatureKey, validateResidency, type SkippedTarget } from '../routing/routing.logic.js';
import { RESERVED_VARIABLE_PREFIX } from '../templates/template.logic.js';

export interface AssistRequestInput {
  featureKey: string;
  variables: Record<string, unknown>;
  locale?: string | null;
  context: { facilityId: string; specialty: string; subjectRef?: string | null };
  residency?: string | null;
  mode?: string | null;
}

export interface ParsedAssist {
  featureKey: string;
  /** Template variables without gateway directives, {{locale}} filled in. */
  variables: Record<string, unknown>;
  mock?: MockDirective;
  facilityId: string;
  specialty: string;
  subjectRef: string | null;
  residency: string | null;
  mode: 'live' | 'shadow';
  /** Size of the variables, for the token reservation before the template is rendered. */
  inputChars: number;
}

const LOCALE_RE = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;
const MAX_VARIABLES = 100;

function boundedString(value: unknown, argument: string, max: number): string {
  if (typeof value !== 'string' || value.trim().length === 0 || value.length > max) {
    throw badInput(`${argument} must be a non-empty string of at most ${max} characters`, { argument });
  }
  return value;
}

/** Shape checks of an assist request; every failure is BAD_USER_INPUT naming the field. */
export function parseAssistInput(input: AssistRequestInput, acceptLocales: readonly string[]): ParsedAssist {
  const featureKey = validateFeatureKey(input.featureKey);
  if (typeof input.variables !== 'object' || input.variables === null || Array.isArray(input.variables)) {
    throw badInput('variables must be an object', { argument: 'variables' });
  }
  const entries = Object.entries(input.variables);
  if (entries.length > MAX_VARIABLES) throw badInput(`At most ${MAX_VARIABLES} variables`, { argument: 'variables' });
  const variables: Record<string, unknown> = {};
  for (const [name, value] of entries) if (!name.startsWith(RESERVED_VARIABLE_PREFIX)) variables[name] = value;
  const mock = parseMockDirective(input.variables.__mock);
  if (input.locale != null && !LOCALE_RE.test(input.locale))
    throw badInput('locale must be a BCP-47 language tag', { argument: 'locale' });
  if (variables.locale === undefined || variables.locale === null) variables.locale = input.locale ?? acceptLocales[0] ?? 'en';
  const mode = input.mode ?? 'live';
  if (mode !== 'live' && mode !== 'shadow') throw badInput('mode must be live or shadow', { argument: 'mode' });
  if (typeof input.context !== 'object' || input.context === null) throw badInput('context is required', { argument: 'context' });
  return {
    featureKey,
    variables,
    mock,
    facilityId: boundedString(input.context.facilityId, 'context.facilityId', 128),
    specialty: boundedString(input.context.specialty, 'context.specialty', 128),
    subjectRef: input.context.subjectRef == null ? null : boundedString(input.context.subjectRef, 'context.subjectRef', 256),
    residency: input.residency == null ? null : validateResidency(input.residency),
    mode,
    inputChars: JSON.stringify(variables).length,
  };
}

export interface ReleaseInput {
  mode: 'live' | 'shadow';
  /** HITLPolicy of the feature (tenant override, else global). */
  hitlMode: string | null;
  hitlEnabled: boolean;
  /** The output's verdict; null when the classifier did not run (not required, or switched off). */
  moderation: { flagged: boolean } | null;
  /** The feature's policy requires moderation (AI_MODERATION_FEATURES). */
  moderationRequired: boolean;
  moderationEnabled: boolean;
}

export type SafetyControl = 'moderation' | 'review';

export interface ReleaseDecision {
  status: 'completed' | 'pending_review' | 'blocked';
  /** Whether the text goes back to the caller now. */
  returnText: boolean;
  /** Whether the text is kept (until its retention ends) for a reviewer. */
  holdText: boolean;
  reviewState: string | null;
  /** A safety control is switched off by flag: log and alert (spec, rollback of phase 2). */
  bypassed: boolean;
  /** Which controls the released text skipped. */
  bypassedControls: SafetyControl[];
}

/** What happens to a provider's answer: released, held for review, or blocked. */
export function decideRelease(input: ReleaseInput): ReleaseDecision {
  const decision = (
    status: ReleaseDecision['status'],
    returnText: boolean,
    holdText: boolean,
    reviewState: string | null,
    bypassedControls: SafetyControl[] = [],
  ): ReleaseDecision => ({ status, returnText, holdText, reviewState, bypassed: bypassedControls.length > 0, bypassedControls });

  if (input.moderation?.flagged) return decision('blocked', false, false, null);
  // Shadow outputs are never used, so nothing is held for review, no text leaves, nothing is bypassed.
  if (input.mode === 'shadow') return decision('completed', false, false, null);
  const bypassed: SafetyControl[] = input.moderationRequired && !input.moderationEnabled ? ['moderation'] : [];
  const reviewRequired = input.hitlMode === 'required';
  if (reviewRequired && input.hitlEnabled) return decision('pending_review', false, true, 'pending', bypassed);
  if (reviewRequired) bypassed.push('review');
  return decision('completed', true, false, reviewRequired ? 'bypassed_by_flag' : null, bypassed);
}

/** Service accounts call with their client id as subject; people carry a usr_ id. */
export function actorOf(subject: string): { type: string; id: string } {
  return { type: subject.startsWith('usr_') ? 'user' : 'service', id: subject };
}

export function totalTokens(usage: { inputTokens: number; outputTokens: number } | undefined): number | undefined {
  return usage ? usage.inputTokens + usage.outputTokens : undefined;
}

/** What assist answers: the provenance id a consumer keeps, and the text when it is released now. */
export interface AssistOutput {
  provenanceId: string;
  status: 'completed' | 'pending_review' | 'blocked';
  text: string | null;
  provider: string | null;
  model: string | null;
  template: { templateId: string; version: number; hash: string } | null;
  timings: AssistTimings;
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

export interface AssistTimings {
  totalMs: number;
  providerMs: number | null;
  queueMs: number | null;
}

/**
 * How an admitted request ends. Released and blocked requests are answers (recorded under the
 * request's Idempotency-Key); a failed one is an error carrying its provenance id.
 */
export type AssistEnd =
  | { kind: 'released'; release: ReleaseDecision & { status: 'completed' | 'pending_review' }; text: string }
  | { kind: 'blocked'; code: 'moderation.blocked' | 'provider.content_filter'; categories: string[] | null }
  | { kind: 'failed'; error: unknown };

/** The provenance row of a request just admitted: nothing decided yet, so it reads failed until a stage says otherwise. */
export function openRecord(request: {
  provenanceId: string;
  tenantId: string;
  subject: string;
  input: ParsedAssist;
  createdAt: Date;
}): ProvenanceRecord {
  const { input, createdAt } = request;
  const actor = actorOf(request.subject);
  return {
    id: request.provenanceId,
    tenantId: request.tenantId,
    actorType: actor.type,
    actorId: actor.id,
    featureKey: input.featureKey,
    status: 'failed',
    mode: input.mode,
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
    facilityId: input.facilityId,
    specialty: input.specialty,
    subjectRef: input.subjectRef,
    residency: input.residency,
    heldText: null,
    heldTextExpiresAt: null,
    errorCode: null,
    latencyMs: 0,
    providerLatencyMs: null,
    createdAt,
    completedAt: createdAt,
  };
}

export function requireTemplate<T>(template: T | null, featureKey: string): T {
  if (!template) {
    throw new AppError('template.not_found', `No active prompt template for ${featureKey}`, {
      status: 422,
      details: { featureKey },
    });
  }
  return template;
}

/** Targets routing passed over (residency, not configured), as attempts of their own in provenance. */
export function passedOverAttempts(skipped: readonly SkippedTarget[]): AttemptRecord[] {
  return skipped.map((target) => ({
    provider: target.provider,
    model: target.model,
    attempt: 0,
    outcome: target.reason === 'residency' ? 'skipped_residency' : 'not_configured',
    latencyMs: 0,
    errorCode: target.reason,
  }));
}

/** What provenance keeps of a verdict: the classifier, categories and reasons, never text. */
export function verdictRecord(verdict: ModerationVerdict): Record<string, unknown> {
  return { flagged: verdict.flagged, classifier: verdict.classifier, categories: verdict.categories, reasons: verdict.reasons };
}

/** The provenance moderation entry once the classifier judged the prompt and/or the answer. */
export function moderationRecord(verdicts: {
  input: ModerationVerdict | null;
  output?: ModerationVerdict;
}): Record<string, unknown> {
  return {
    required: true,
    ...(verdicts.input ? { input: verdictRecord(verdicts.input) } : {}),
    ...(verdicts.output ? { output: verdictRecord(verdicts.output) } : {}),
  };
}

/** The row's final status and error code. A request the gateway refused (4xx) is rejected; one it could not serve failed. */
export function endState(end: AssistEnd): { status: ProvenanceStatus; errorCode: string | null } {
  if (end.kind === 'released') return { status: end.release.status, errorCode: null };
  if (end.kind === 'blocked') return { status: 'blocked', errorCode: end.code };
  if (!isAppError(end.error)) return { status: 'failed', errorCode: 'INTERNAL_SERVER_ERROR' };
  return { status: end.error.status < 500 ? 'rejected' : 'failed', errorCode: end.error.code };
}

export function closeRecord(record: ProvenanceRecord, end: AssistEnd, completedAt: Date, latencyMs: number): ProvenanceRecord {
  return { ...record, ...endState(end), completedAt, latencyMs };
}

/** The answer of a released or blocked request, as recorded with its provenance row. */
export function assistOutput(
  record: ProvenanceRecord,
  end: Exclude<AssistEnd, { kind: 'failed' }>,
  timings: AssistTimings,
  reviewTaskId: string | null,
): AssistOutput {
  const released = end.kind === 'released';
  return {
    provenanceId: record.id,
    status: released ? end.release.status : 'blocked',
    text: released && end.release.returnText ? end.text : null,
    provider: record.provider,
    model: record.model,
    template: record.templateId
      ? { templateId: record.templateId, version: record.templateVersion!, hash: record.templateHash! }
      : null,
    timings,
    reviewState: released ? record.reviewState : null,
    mode: record.mode,
    outputHash: record.outputHash,
    code: released ? null : end.code,
    moderationCategories: released ? null : end.categories,
    reviewTaskId,
  };
}

/** Adds the provenance id to an error's client-facing details, keeping its code, status and headers. */
export function withProvenance(error: AppError, provenanceId: string): AppError {
  return new AppError(error.code, error.message, {
    status: error.status,
    details: { ...(error.details ?? {}), provenanceId },
    headers: error.headers,
    cause: error,
  });
}

export function providerUnavailable(attempts: number): AppError {
  return new AppError('provider.unavailable', 'No provider could serve the request; the attempts are in its provenance record', {
    details: { attempts },
  });
}

/** A required control never fails open: no classifier, or one that cannot decide, fails the request. */
export function moderationUnavailable(featureKey: string, failure: { stage: ModerationStage; reason: string } | null): AppError {
  if (!failure) {
    return new AppError('moderation.unavailable', `Moderation is required for ${featureKey} but no classifier is configured`, {
      status: 503,
    });
  }
  return new AppError('moderation.unavailable', 'The moderation classifier could not judge the content; retry shortly', {
    status: 503,
    details: { ...failure, retryAfterSeconds: 5 },
    headers: { 'retry-after': '5' },
  });
}
