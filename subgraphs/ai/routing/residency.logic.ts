import { AppError } from '../../../platform/errors/errors.js';
import {
  assessmentRequired,
  planAttempts,
  rankRules,
  ON_PREM_RESIDENCY,
  type ProviderProfile,
  type RuleCandidate,
  type SkippedTarget,
  type Target,
} from './routing.logic.js';

/**
 * Where a tenant's requests may go, from its routing rules: every active tenant-wide rule
 * (featureKey null) that names a residency maps the tenant to that residency, for every feature.
 * `assignOnPremRouting` writes exactly such a rule (tenant notes: "mapped manually to the routing
 * rule with residency ON_PREM"). ON_PREM is the strictest promise (the text never leaves the
 * premises), so a tenant mapped to it is mapped to nothing else. Empty: the tenant is not mapped,
 * and each request's own residency (or none) applies.
 */
export function tenantResidencies(rules: readonly RuleCandidate[], tenantId: string): string[] {
  const mapped = new Set<string>();
  for (const rule of rules) {
    if (rule.tenantId === tenantId && rule.featureKey === null && rule.residency !== null && rule.activeVersion !== null) {
      mapped.add(rule.residency);
    }
  }
  if (mapped.has(ON_PREM_RESIDENCY)) return [ON_PREM_RESIDENCY];
  return [...mapped].sort();
}

export interface ResidencyRequest {
  tenantId: string;
  featureKey: string;
  /** The residency the request asks for, or null. */
  requested: string | null;
  /** The active rules that may route the feature: the tenant's overrides and the global rules. */
  rules: readonly RuleCandidate[];
  /** AI_ASSESSMENT_RESIDENCIES: residencies a tenant may use only with a signed assessment. */
  assessmentResidencies: readonly string[];
  /** Residencies the tenant holds a signed assessment for (those of `residenciesToAssess` suffice). */
  assessed: ReadonlySet<string>;
  /** Residency profile of every configured provider; a target whose provider is missing is not configured here. */
  providers: ReadonlyMap<string, ProviderProfile>;
  /** multiProvider.enabled: off (rollback of phase 3) routes to each rule's primary alone. */
  fallbacksEnabled: boolean;
}

/** Where the residency of a request came from: the tenant's mapping, the request, or nowhere. */
export type ResidencySource = 'tenant' | 'request' | 'none';

export interface RoutedRule extends RuleCandidate {
  primary: Target;
}

export type RouteDecision =
  | {
      ok: true;
      residency: string | null;
      source: ResidencySource;
      rule: RoutedRule;
      /** The provider attempts allowed, in order; the call engine tries these and nothing else. */
      targets: Target[];
      /** Targets passed over (outside the residency, or not configured here), for provenance. */
      skipped: SkippedTarget[];
    }
  | {
      ok: false;
      residency: string | null;
      source: ResidencySource;
      /** The rule the request would have been routed by, when one matched. */
      rule: RoutedRule | null;
      skipped: SkippedTarget[];
      error: AppError;
    };

/**
 * The residencies whose assessment decides this request: the one it asks for and the tenant's
 * mapped ones, if they need an assessment. The caller reads only these from the database.
 */
export function residenciesToAssess(
  request: Pick<ResidencyRequest, 'tenantId' | 'requested' | 'rules' | 'assessmentResidencies'>,
): string[] {
  const inPlay = new Set([...tenantResidencies(request.rules, request.tenantId)]);
  if (request.requested !== null) inPlay.add(request.requested);
  return [...inPlay].filter((residency) => request.assessmentResidencies.includes(residency)).sort();
}

function residencyNotAllowed(requested: string | null, allowed: readonly string[]): AppError {
  const message =
    requested === null
      ? `The tenant is mapped to several residencies (${allowed.join(', ')}); the request must name one`
      : `The tenant's requests may not use residency ${requested}; its routing maps it to ${allowed.join(', ')}`;
  return new AppError('routing.residency_not_allowed', message, { status: 422, details: { residency: requested, allowed } });
}

function residencyUnavailable(residency: string): AppError {
  return new AppError(
    'routing.residency_unavailable',
    `No configured provider of the tenant's routing rules may serve its residency ${residency}; the request was not sent elsewhere`,
    { status: 503, details: { residency } },
  );
}

function noProviderForResidency(residency: string): AppError {
  return new AppError('routing.no_provider_for_residency', `No provider of the routing rule may serve residency ${residency}`, {
    details: { residency },
  });
}

function noRule(featureKey: string, residency: string | null): AppError {
  return new AppError(
    'routing.no_rule',
    `No routing rule applies to ${featureKey}${residency ? ` with residency ${residency}` : ''}`,
    { details: { featureKey, residency } },
  );
}

/**
 * The one decision of where a request may go; the assist pipeline (live and shadow) calls
 * providers only from the `targets` it returns, and retries, breaker skips and fallbacks only move
 * along that list. In order:
 *
 * 1. The residency: a mapped tenant's requests get the tenant's residency (a request without one
 *    included); asking for another is refused (`routing.residency_not_allowed`, 422: the client
 *    asked for what the tenant may not use). An unmapped tenant's request keeps its own, or none.
 * 2. A residency of AI_ASSESSMENT_RESIDENCIES needs the tenant's signed assessment
 *    (`routing.assessment_required`), whether the request or the mapping chose it.
 * 3. The matching rules, most specific first (`selectRule`'s order). Without a residency the most
 *    specific rule routes, as before. With one, each rule's targets are cut to the providers that
 *    serve it, and a rule with none left is passed over for the next: a tenant+feature override of
 *    hosted providers does not strand an on-prem tenant whose mapping rule can serve it, and no
 *    step outside the residency is ever kept.
 * 4. Nothing left is a refusal, never a downgrade: `routing.residency_unavailable` (503) when the
 *    tenant's mapping imposed the residency — a configuration gap the client cannot fix by changing
 *    its request — and `routing.no_provider_for_residency` (422) when only the request asked for it.
 */
export function decideRoute(request: ResidencyRequest): RouteDecision {
  const mapped = tenantResidencies(request.rules, request.tenantId);
  let residency: string | null;
  let source: ResidencySource;
  if (mapped.length === 0) {
    residency = request.requested;
    source = residency === null ? 'none' : 'request';
  } else {
    source = 'tenant';
    if (request.requested !== null && !mapped.includes(request.requested)) {
      return refusal(request.requested, source, null, [], residencyNotAllowed(request.requested, mapped));
    }
    if (request.requested === null && mapped.length > 1) {
      return refusal(null, source, null, [], residencyNotAllowed(null, mapped));
    }
    residency = request.requested ?? mapped[0];
  }

  if (residency !== null && request.assessmentResidencies.includes(residency) && !request.assessed.has(residency)) {
    return refusal(residency, source, null, [], assessmentRequired(residency));
  }

  const matching = rankRules(
    request.rules.filter((rule): rule is RoutedRule => rule.primary !== undefined),
    { tenantId: request.tenantId, featureKey: request.featureKey, residency },
  );
  if (matching.length === 0) return refusal(residency, source, null, [], noRule(request.featureKey, residency));

  const skipped: SkippedTarget[] = [];
  for (const rule of residency === null ? matching.slice(0, 1) : matching) {
    const fallbacks = request.fallbacksEnabled ? (rule.fallbacks ?? []) : [];
    const plan = planAttempts({ primary: rule.primary, fallbacks }, residency, request.providers);
    for (const target of plan.skipped) {
      if (!skipped.some((s) => s.provider === target.provider && s.model === target.model)) skipped.push(target);
    }
    // Without a residency an empty plan still routes: the call engine answers provider.unavailable, as before.
    if (plan.targets.length > 0 || residency === null) {
      return { ok: true, residency, source, rule, targets: plan.targets, skipped };
    }
  }
  const error = source === 'tenant' ? residencyUnavailable(residency!) : noProviderForResidency(residency!);
  return refusal(residency, source, matching[0], skipped, error);
}

function refusal(
  residency: string | null,
  source: ResidencySource,
  rule: RoutedRule | null,
  skipped: SkippedTarget[],
  error: AppError,
): RouteDecision {
  return { ok: false, residency, source, rule, skipped, error };
}
