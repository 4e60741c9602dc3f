import { recordedEffect } from '../../../platform/idempotency/effect-store.js';
import { newId } from '../../../platform/ids.js';
import { moderationRequired, type ModerationStage, type ModerationVerdict } from '../moderation/moderation.logic.js';
import { ModerationUnavailableError } from '../moderation/openai-moderation.js';
import { callWithFallbacks } from '../providers/call-engine.js';
import { heldTextExpiry, outputHash, type ProvenanceRecord } from '../provenance/provenance.logic.js';
import { estimateTokens } from '../quota/quota.logic.js';
import { decideRoute, residenciesToAssess } from '../routing/residency.logic.js';
import { promptHash, renderTemplate } from '../templates/template.logic.js';
import {
  decideRelease,
  moderationRecord,
  moderationUnavailable,
  openRecord,
  parseAssistInput,
  passedOverAttempts,
  providerUnavailable,
  requireTemplate,
  totalTokens,
  type AssistOutput,
  type AssistRequestInput,
} from './assist.logic.js';
import { loadAssistSnapshot, signedAssessments } from './assist.repo.js';
import type { AssistCaller, AssistDeps, AssistDraft, AssistRequest, RecordedAssist, Step } from './assist.request.js';

/**
 * The stages of an admitted assist request, in order. Each is a function of the pipeline's
 * dependencies, the request and the draft so far; it returns the next draft, or ends the request
 * (released, blocked, failed). A stage that throws ends the request as failed, with the draft as
 * it was handed to that stage.
 */
export type Stage = (deps: AssistDeps, request: AssistRequest, draft: AssistDraft) => Step | Promise<Step>;

/** What the pipeline answers before any stage runs: a recorded answer, or an admitted request. */
export type Admission = { answered: AssistOutput } | { request: AssistRequest };

/**
 * Admit: the input's shape, a recorded answer of the same request, the snapshot of rules and
 * settings, and the quota. A request refused here leaves no provenance row (over-limit traffic
 * does not turn into database writes); every admitted one does.
 */
export async function admit(deps: AssistDeps, caller: AssistCaller, body: AssistRequestInput): Promise<Admission> {
  const startedAtMs = deps.clock.now().getTime();
  const input = parseAssistInput(body, caller.locales);
  // A retry whose first execution answered (the gateway lost its record in a crash) gets that
  // answer again, before any quota or provider is spent on it.
  const recorded = await recordedEffect<RecordedAssist>(deps.db, caller.effect, deps.clock.now());
  if (recorded?.value.output) return { answered: recorded.value.output };
  const snapshot = await deps.snapshots.get(caller.tenantId, input.featureKey, () =>
    loadAssistSnapshot(deps.db, caller.tenantId, input.featureKey),
  );
  const tokens = estimateTokens(input.inputChars + (snapshot.template?.body.length ?? 0), deps.settings.maxOutputTokens);
  const reservation = await deps.quota.reserve(caller.tenantId, snapshot.tenant.quota, tokens);
  const createdAt = deps.clock.now();
  const required = moderationRequired(input.featureKey, deps.settings.moderation.features);
  return {
    request: {
      caller,
      input,
      snapshot,
      reservation,
      provenanceId: newId('provenance', createdAt.getTime()),
      startedAtMs,
      createdAt,
      deadlineAtMs: createdAt.getTime() + deps.settings.deadlineMs,
      moderationRequired: required,
      moderating: required && snapshot.flags.moderationEnabled,
    },
  };
}

export function openDraft(request: AssistRequest): AssistDraft {
  const record = openRecord({ ...request, tenantId: request.caller.tenantId, subject: request.caller.subject });
  return {
    record,
    prompt: null,
    targets: [],
    inputVerdict: null,
    outputVerdict: null,
    queueMs: null,
    answer: null,
    quotaSettlement: null,
  };
}

const withRecord = (draft: AssistDraft, patch: Partial<ProvenanceRecord>): AssistDraft => ({
  ...draft,
  record: { ...draft.record, ...patch },
});

/** A value an earlier stage sets; missing only if the stages run out of order (a bug, answered as a 500). */
function fromEarlierStage<T>(value: T | null, name: string): T {
  if (value === null) throw new Error(`assist stage ran before ${name} was set`);
  return value;
}

export function elapsedMs(deps: Pick<AssistDeps, 'clock'>, request: Pick<AssistRequest, 'startedAtMs'>): number {
  return Math.max(0, Math.round(deps.clock.now().getTime() - request.startedAtMs));
}

/** Render: the feature's active template with the request's variables; the template is on record even when they do not fit it. */
export function render(deps: AssistDeps, request: AssistRequest, draft: AssistDraft): Step {
  const template = requireTemplate(request.snapshot.template, request.input.featureKey);
  const pinned = withRecord(draft, { templateId: template.id, templateVersion: template.version, templateHash: template.hash });
  try {
    const prompt = renderTemplate(template.body, request.input.variables, deps.settings.maxPromptChars);
    return { draft: withRecord({ ...pinned, prompt }, { renderedPromptHash: promptHash(prompt) }) };
  } catch (error) {
    return { draft: pinned, end: { kind: 'failed', error } };
  }
}

/**
 * Route: the one place that decides where the request may go (residency.logic.ts, decideRoute):
 * the tenant's mapping and assessments fix the residency, the most specific rule that can serve
 * it applies, and its targets are cut to the providers of that residency. The call stage tries
 * these targets and nothing else. The residency, the rule and the targets passed over are on
 * record, a refusal included.
 */
export async function route(deps: AssistDeps, request: AssistRequest, draft: AssistDraft): Promise<Step> {
  const { caller, input, snapshot } = request;
  const facts = {
    tenantId: caller.tenantId,
    featureKey: input.featureKey,
    requested: input.residency,
    rules: snapshot.rules,
    assessmentResidencies: deps.settings.assessmentResidencies,
  };
  const assessed = await signedAssessments(deps.db, caller.tenantId, residenciesToAssess(facts), request.createdAt);
  const decision = decideRoute({
    ...facts,
    assessed,
    providers: deps.registry.profiles,
    // Rollback switch of phase 3: multi-provider off routes to the primary alone.
    fallbacksEnabled: snapshot.flags.multiProviderEnabled,
  });
  const routed = withRecord(
    { ...draft, targets: decision.ok ? decision.targets : [] },
    {
      residency: decision.residency,
      ruleId: decision.rule?.ruleId ?? null,
      ruleVersion: decision.rule?.activeVersion ?? null,
      attempts: [...draft.record.attempts, ...passedOverAttempts(decision.skipped)],
    },
  );
  return decision.ok ? { draft: routed } : { draft: routed, end: { kind: 'failed', error: decision.error } };
}

/** Runs the classifier on one text within the request's deadline; a classifier that cannot decide fails the request. */
async function classify(
  deps: AssistDeps,
  request: AssistRequest,
  stage: ModerationStage,
  text: string,
  /** The residency route decided (the tenant's, when mapped): the text goes no further than the providers'. */
  residency: string | null,
): Promise<ModerationVerdict> {
  const { featureKey } = request.input;
  if (!deps.moderator) throw moderationUnavailable(featureKey, null);
  try {
    return await deps.moderator.classify({
      tenantId: request.caller.tenantId,
      featureKey,
      stage,
      text,
      residency,
      signal: AbortSignal.timeout(Math.max(1, request.deadlineAtMs - deps.clock.now().getTime())),
    });
  } catch (error) {
    const reason = error instanceof ModerationUnavailableError ? error.reason : 'classifier_error';
    request.caller.logger.warn({ featureKey, stage, reason }, 'moderation classifier unavailable; failing closed');
    throw moderationUnavailable(featureKey, { stage, reason });
  }
}

/** Moderate input (phase 2): the prompt is judged before any provider sees it. */
export async function moderateInput(deps: AssistDeps, request: AssistRequest, draft: AssistDraft): Promise<Step> {
  if (!request.moderating) return { draft };
  const verdict = await classify(deps, request, 'input', fromEarlierStage(draft.prompt, 'the prompt'), draft.record.residency);
  const judged = withRecord({ ...draft, inputVerdict: verdict }, { moderation: moderationRecord({ input: verdict }) });
  if (!verdict.flagged) return { draft: judged };
  // Nothing was sent to a provider: no tokens were used. Queue time ends where the call would have started.
  return {
    draft: { ...judged, queueMs: elapsedMs(deps, request) },
    end: { kind: 'blocked', code: 'moderation.blocked', categories: verdict.categories },
  };
}

/**
 * Call providers: the targets in order with timeouts, retries, breakers and fallbacks, then the
 * quota settled with the tokens really used (none when no provider answered).
 */
export async function callProviders(deps: AssistDeps, request: AssistRequest, draft: AssistDraft): Promise<Step> {
  const queueMs = elapsedMs(deps, request);
  const call = await callWithFallbacks(
    { ...deps.callPolicy, clock: deps.clock, providers: deps.registry.providers },
    [...draft.targets],
    {
      prompt: fromEarlierStage(draft.prompt, 'the prompt'),
      maxOutputTokens: deps.settings.maxOutputTokens,
      mock: request.input.mock,
      deadlineAt: deps.clock.now().getTime() + deps.settings.deadlineMs - queueMs,
    },
  );
  // Not awaited here: the correction (a Redis round trip) runs while the answer is judged and
  // recorded; the pipeline waits for it before answering (assist.pipeline.ts, finish).
  const quotaSettlement = deps.quota.settle(request.reservation, call.ok ? totalTokens(call.response.usage) : 0);
  const attempted = withRecord(
    { ...draft, queueMs, quotaSettlement },
    { attempts: [...draft.record.attempts, ...call.attempts], providerLatencyMs: Math.round(call.providerMs) },
  );
  if (call.ok) {
    const { response, target } = call;
    return {
      draft: withRecord(
        { ...attempted, answer: response.text },
        {
          provider: target.provider,
          model: response.model,
          outputHash: outputHash(response.text),
          inputTokens: response.usage?.inputTokens ?? null,
          outputTokens: response.usage?.outputTokens ?? null,
        },
      ),
    };
  }
  if (!call.blocked)
    return { draft: attempted, end: { kind: 'failed', error: providerUnavailable(attempted.record.attempts.length) } };
  // The provider's own filter refused the content: blocked like a moderation hit, and no other provider sees it.
  const last = call.attempts.at(-1);
  return {
    draft: withRecord(attempted, {
      provider: last?.provider ?? null,
      model: last?.model ?? null,
      moderation: { ...attempted.record.moderation, source: 'provider', outcome: 'content_filter' },
    }),
    end: { kind: 'blocked', code: 'provider.content_filter', categories: null },
  };
}

/** Moderate output: the answer is judged before release; an answer that cannot be judged is withheld. */
export async function moderateOutput(deps: AssistDeps, request: AssistRequest, draft: AssistDraft): Promise<Step> {
  if (request.moderating) {
    const verdict = await classify(deps, request, 'output', fromEarlierStage(draft.answer, 'the answer'), draft.record.residency);
    return {
      draft: withRecord(
        { ...draft, outputVerdict: verdict },
        { moderation: moderationRecord({ input: draft.inputVerdict, output: verdict }) },
      ),
    };
  }
  if (request.moderationRequired) return { draft: withRecord(draft, { moderation: { required: true, bypassedByFlag: true } }) };
  return { draft };
}

/** Release decision (HITL): completed, held for review (pending_review), or blocked. */
export function releaseDecision(deps: AssistDeps, request: AssistRequest, draft: AssistDraft): Step {
  const { snapshot } = request;
  const release = decideRelease({
    mode: request.input.mode,
    hitlMode: snapshot.hitlMode,
    hitlEnabled: snapshot.flags.hitlEnabled,
    moderation: draft.outputVerdict,
    moderationRequired: request.moderationRequired,
    moderationEnabled: snapshot.flags.moderationEnabled,
  });
  if (release.status === 'blocked') {
    return { draft, end: { kind: 'blocked', code: 'moderation.blocked', categories: draft.outputVerdict?.categories ?? [] } };
  }
  const text = fromEarlierStage(draft.answer, 'the answer');
  const held = release.holdText
    ? { heldText: text, heldTextExpiresAt: heldTextExpiry(request.createdAt, deps.settings.reviewTextRetentionHours) }
    : {};
  return {
    draft: withRecord(draft, { reviewState: release.reviewState, ...held }),
    end: { kind: 'released', release: { ...release, status: release.status }, text },
  };
}

export const ASSIST_STAGES: readonly Stage[] = [render, route, moderateInput, callProviders, moderateOutput, releaseDecision];

/** The fold: runs the stages in order until one ends the request. */
export async function runStages(
  deps: AssistDeps,
  request: AssistRequest,
  start: AssistDraft,
  stages: readonly Stage[] = ASSIST_STAGES,
): Promise<Required<Step>> {
  let draft = start;
  for (const stage of stages) {
    let step: Step;
    try {
      step = await stage(deps, request, draft);
    } catch (error) {
      return { draft, end: { kind: 'failed', error } };
    }
    if (step.end) return { draft: step.draft, end: step.end };
    draft = step.draft;
  }
  // Every admitted request is recorded, even one whose stages forgot to decide it.
  return { draft, end: { kind: 'failed', error: new Error('the assist stages ended without a release decision') } };
}
