import { badInput } from '../../../platform/errors.js';
import { parseMockDirective } from '../providers/mock.js';
import type { MockDirective } from '../providers/provider.js';
import { validateFeatureKey, validateResidency } from '../routing/routing.logic.js';
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
