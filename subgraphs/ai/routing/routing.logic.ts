import { AppError, badInput } from '../../../platform/errors/errors.js';

export interface Target {
  provider: string;
  model: string;
}

export interface RuleScope {
  tenantId: string | null;
  featureKey: string | null;
  residency: string | null;
}

export interface RuleCandidate extends RuleScope {
  ruleId: string;
  /** The version in force, or null when the rule is deactivated. */
  activeVersion: number | null;
  primary?: Target;
  fallbacks?: Target[];
}

export interface RouteRequest {
  tenantId: string;
  featureKey: string;
  residency: string | null;
}

/**
 * tenant + feature + residency > tenant + feature > tenant (+ residency) > tenant > global, and
 * the same order among global rules: a tenant's own rule always beats any global one.
 */
export function specificity(rule: RuleScope): number {
  return (rule.tenantId !== null ? 4 : 0) + (rule.featureKey !== null ? 2 : 0) + (rule.residency !== null ? 1 : 0);
}

export function ruleMatches(rule: RuleCandidate, request: RouteRequest): boolean {
  return (
    rule.activeVersion !== null &&
    (rule.tenantId === null || rule.tenantId === request.tenantId) &&
    (rule.featureKey === null || rule.featureKey === request.featureKey) &&
    // A residency rule serves only requests that ask for that residency, and a request that asks
    // for one is routed only by rules of that residency or by rules that name none.
    (rule.residency === null || rule.residency === request.residency)
  );
}

/** The active rules that match, most specific first; among equals the newest (ids are time-ordered ULIDs). */
export function rankRules<R extends RuleCandidate>(rules: readonly R[], request: RouteRequest): R[] {
  return rules
    .filter((rule) => ruleMatches(rule, request))
    .sort((a, b) => specificity(b) - specificity(a) || (a.ruleId < b.ruleId ? 1 : a.ruleId > b.ruleId ? -1 : 0));
}

/** The most specific active rule; among equals the newest. */
export function selectRule<R extends RuleCandidate>(rules: readonly R[], request: RouteRequest): R | undefined {
  return rankRules(rules, request)[0];
}

export interface ProviderProfile {
  name: string;
  /** Residency codes the provider may serve; '*' = any. */
  residencies: readonly string[];
}

/** The residency of on-premises inference: the text never leaves the tenant's premises. */
export const ON_PREM_RESIDENCY = 'ON_PREM';

/**
 * Whether a provider (or the remote moderation endpoint) may receive a request of `residency`.
 * '*' stands for every residency but ON_PREM: it is the mock provider's default and a wildcard
 * cannot promise that text stays on premises, so only a list that names ON_PREM serves it.
 */
export function servesResidency(profile: Pick<ProviderProfile, 'residencies'>, residency: string | null): boolean {
  if (residency === null) return true;
  if (profile.residencies.includes(residency)) return true;
  return residency !== ON_PREM_RESIDENCY && profile.residencies.includes('*');
}

export interface SkippedTarget extends Target {
  reason: 'residency' | 'not_configured';
}

export interface AttemptPlan {
  targets: Target[];
  skipped: SkippedTarget[];
}

/**
 * Primary then fallbacks, minus every target that cannot serve the required residency: a request
 * never falls back across a residency boundary. Nothing left is a fail-closed refusal, not a
 * quiet downgrade (residency.logic.ts, decideRoute). Targets whose provider is not configured here
 * are passed over (and recorded).
 */
export function planAttempts(
  version: { primary: Target; fallbacks: Target[] },
  residency: string | null,
  providers: ReadonlyMap<string, ProviderProfile>,
): AttemptPlan {
  const targets: Target[] = [];
  const skipped: SkippedTarget[] = [];
  for (const target of [version.primary, ...version.fallbacks]) {
    const profile = providers.get(target.provider);
    if (!profile) skipped.push({ ...target, reason: 'not_configured' });
    else if (!servesResidency(profile, residency)) skipped.push({ ...target, reason: 'residency' });
    else targets.push(target);
  }
  return { targets, skipped };
}

export function requiresAssessment(residency: string | null, assessmentResidencies: readonly string[]): boolean {
  return residency !== null && assessmentResidencies.includes(residency);
}

export function assessmentRequired(residency: string): AppError {
  return new AppError(
    'routing.assessment_required',
    `Residency ${residency} needs a signed data-protection impact assessment of the tenant`,
    {
      details: { residency },
    },
  );
}

const MODEL_RE = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$/;
export const MAX_FALLBACKS = 5;

/** Admin input: known providers, plausible model names, no repeats, a bounded fallback chain. */
export function validateTargets(primary: Target, fallbacks: Target[], knownProviders: ReadonlySet<string>): void {
  if (fallbacks.length > MAX_FALLBACKS) throw badInput(`At most ${MAX_FALLBACKS} fallbacks`, { argument: 'fallbacks' });
  const seen = new Set<string>();
  [primary, ...fallbacks].forEach((target, index) => {
    const field = index === 0 ? 'primary' : `fallbacks[${index - 1}]`;
    if (!knownProviders.has(target.provider)) {
      throw badInput(`Unknown provider "${target.provider}"`, {
        argument: `${field}.provider`,
        knownProviders: [...knownProviders].sort(),
      });
    }
    if (!MODEL_RE.test(target.model))
      throw badInput('A model name is 1-128 letters, digits or ._:/@-', { argument: `${field}.model` });
    const key = `${target.provider}\u0000${target.model}`;
    if (seen.has(key)) throw badInput('The same provider and model appear twice', { argument: field });
    seen.add(key);
  });
}

const FEATURE_KEY_RE = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/;
const RESIDENCY_RE = /^[A-Z][A-Z0-9_]{1,15}$/;

export function validateFeatureKey(value: string, argument = 'featureKey'): string {
  if (value.length > 100 || !FEATURE_KEY_RE.test(value)) {
    throw badInput('A feature key is lower-case dot-separated words, e.g. patient_chart.note_summary', { argument });
  }
  return value;
}

export function validateResidency(value: string, argument = 'residency'): string {
  if (!RESIDENCY_RE.test(value)) throw badInput('A residency is an upper-case code such as AF or ON_PREM', { argument });
  return value;
}

/**
 * A routing rule's entity tag, for If-Match on its updates and activations. Versions are immutable
 * and only ever added, so the active version and the latest one say everything a reader of the
 * rule sees: every change gives another tag, and two states that read the same share one.
 */
export function routingRuleEtag(activeVersion: number | null, versions: readonly number[]): string {
  return `"${activeVersion ?? 0}.${Math.max(0, ...versions)}"`;
}
