import { AppError, badInput } from '../../../platform/errors.js';

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

/** The most specific active rule; among equals the newest (ids are time-ordered ULIDs). */
export function selectRule<R extends RuleCandidate>(rules: R[], request: RouteRequest): R | undefined {
  let best: R | undefined;
  for (const rule of rules) {
    if (!ruleMatches(rule, request)) continue;
    if (
      !best ||
      specificity(rule) > specificity(best) ||
      (specificity(rule) === specificity(best) && rule.ruleId > best.ruleId)
    ) {
      best = rule;
    }
  }
  return best;
}

export interface ProviderProfile {
  name: string;
  /** Residency codes the provider may serve; '*' = any. */
  residencies: readonly string[];
}

export function servesResidency(profile: ProviderProfile, residency: string | null): boolean {
  if (residency === null) return true;
  return profile.residencies.includes('*') || profile.residencies.includes(residency);
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
 * never falls back across a residency boundary. Nothing left is a fail-closed error, not a
 * quiet downgrade (see requireResidencyServed). Targets whose provider is not configured here are
 * passed over (and recorded); when none is left the call fails as provider.unavailable.
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

/** A plan with nothing left because of residency fails closed with a code that says so: this error, or null. */
export function unservedResidency(plan: AttemptPlan, residency: string | null): AppError | null {
  if (plan.targets.length === 0 && residency !== null && plan.skipped.some((t) => t.reason === 'residency')) {
    return new AppError('routing.no_provider_for_residency', `No provider of the routing rule may serve residency ${residency}`, {
      details: { residency },
    });
  }
  return null;
}

export function requireResidencyServed(plan: AttemptPlan, residency: string | null): void {
  const error = unservedResidency(plan, residency);
  if (error) throw error;
}

/** The rule a request is routed by, which must name a primary provider. */
export function requireRule(
  rule: RuleCandidate | undefined,
  request: Omit<RouteRequest, 'tenantId'>,
): RuleCandidate & { primary: Target } {
  if (!rule?.primary) {
    const { featureKey, residency } = request;
    throw new AppError(
      'routing.no_rule',
      `No routing rule applies to ${featureKey}${residency ? ` with residency ${residency}` : ''}`,
      {
        details: { featureKey, residency },
      },
    );
  }
  return { ...rule, primary: rule.primary };
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
