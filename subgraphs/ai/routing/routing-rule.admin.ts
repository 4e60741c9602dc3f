import type { AdminCaller } from '../admin-caller.js';
import type { Tx } from '../../../platform/db/database.js';
import { AppError } from '../../../platform/errors/errors.js';
import type { Logger } from '../../../platform/observability/logger.js';
import { hasSignedAssessment } from '../assist/assist.repo.js';
import { auditedChange, type ChangeStore } from '../audit/audited-change.js';
import { insertRule, insertRuleVersion, setActiveVersion, type RuleWithVersions } from './routing-rule.repo.js';
import {
  assessmentRequired,
  requiresAssessment,
  ON_PREM_RESIDENCY,
  validateTargets,
  validateFeatureKey,
  validateResidency,
  type Target,
} from './routing.logic.js';

/**
 * Whose rules a change is about: the caller's tenant (ai.admin) or the platform's global rules
 * (platform.admin; the resolvers check the scope). Global changes are versioned and audited like
 * tenant ones, under actions prefixed `global_`.
 */
export type RuleOwner = 'tenant' | 'global';

export interface RoutingAdmin {
  create(
    caller: AdminCaller,
    input: { featureKey?: string | null; residency?: string | null; primary: Target; fallbacks: Target[] },
    owner?: RuleOwner,
  ): Promise<RuleWithVersions>;
  /** A new version of an existing rule: `ifMatch` (the request's If-Match) must hold the rule's etag. */
  update(
    caller: AdminCaller,
    ruleId: string,
    input: { primary: Target; fallbacks: Target[]; expectedActiveVersion?: number | null },
    ifMatch: string | undefined,
    owner?: RuleOwner,
  ): Promise<RuleWithVersions>;
  /** Another version of an existing rule in force: `ifMatch` must hold the rule's etag. */
  activate(
    caller: AdminCaller,
    ruleId: string,
    version: number,
    ifMatch: string | undefined,
    owner?: RuleOwner,
  ): Promise<RuleWithVersions>;
  /** Tenant notes: maps the caller's tenant to the on-prem provider; every request of the tenant then stays ON_PREM (residency.logic.ts). */
  assignOnPrem(caller: AdminCaller, input: { model?: string | null }): Promise<RuleWithVersions>;
}

/** The rules' owner column for a change: the caller's tenant, or null for a global rule. */
const ownerTenant = (caller: AdminCaller, owner: RuleOwner): string | null => (owner === 'global' ? null : caller.tenantId);
const auditAction = (owner: RuleOwner, action: string): string => (owner === 'global' ? `global_${action}` : action);

export const ON_PREM_PROVIDER = 'on-prem';

/** Copies the targets out of the GraphQL input (no extra fields reach the JSON column) and validates them. */
function validTargets(
  input: { primary: Target; fallbacks: Target[] },
  known: ReadonlySet<string>,
): { primary: Target; fallbacks: Target[] } {
  const targetOf = (t: Target): Target => ({ provider: t.provider, model: t.model });
  const primary = targetOf(input.primary);
  const fallbacks = input.fallbacks.map(targetOf);
  validateTargets(primary, fallbacks, known);
  return { primary, fallbacks };
}

interface RoutingAdminDeps extends ChangeStore {
  knownProviders: () => ReadonlySet<string>;
  /** Providers this process can call (the on-prem mapping needs the on-prem adapter configured). */
  configuredProviders: () => ReadonlySet<string>;
  /** AI_ASSESSMENT_RESIDENCIES: a rule of these residencies is created or activated only with a signed assessment. */
  assessmentResidencies: readonly string[];
  onPremModel: string;
  onChange: () => void;
  logger: Logger;
}

async function requireAssessment(deps: RoutingAdminDeps, tx: Tx, tenantId: string, residency: string): Promise<void> {
  if (!(await hasSignedAssessment(tx, tenantId, residency, deps.clock.now()))) throw assessmentRequired(residency);
}

/**
 * One rule change with its audit event in one transaction, then the routing cache dropped. The
 * assessment is checked on the rule as written, so creating, updating and re-activating a rule of
 * such a residency all need it; a refusal rolls the change back.
 */
async function auditedRuleChange<T extends { rule: RuleWithVersions }>(
  deps: RoutingAdminDeps,
  caller: AdminCaller,
  action: string,
  change: (tx: Tx) => Promise<T>,
  details: (result: T) => Record<string, unknown>,
): Promise<RuleWithVersions> {
  const result = await auditedChange(deps, caller, {
    action,
    change: async (tx) => {
      const value = await change(tx);
      const { rule } = value;
      // An assessment is a tenant's: a global rule of such a residency is checked per request instead.
      if (
        rule.tenantId !== null &&
        rule.activeVersion !== null &&
        rule.residency !== null &&
        requiresAssessment(rule.residency, deps.assessmentResidencies)
      ) {
        await requireAssessment(deps, tx, caller.tenantId, rule.residency);
      }
      return value;
    },
    target: (value) => ({ type: 'routing_rule', id: value.rule.id }),
    details: (value) => ({
      ruleId: value.rule.id,
      scope: value.rule.tenantId === null ? 'global' : 'tenant',
      featureKey: value.rule.featureKey,
      residency: value.rule.residency,
      activeVersion: value.rule.activeVersion,
      ...details(value),
    }),
  });
  deps.onChange();
  deps.logger.info({ action, ruleId: result.rule.id, activeVersion: result.rule.activeVersion }, 'routing rule changed');
  return result.rule;
}

/**
 * "Tenants with an on-prem AI assessment are mapped manually to the routing rule with residency
 * ON_PREM": the tenant's ON_PREM rule gets the on-prem target as a new version, or is created.
 */
async function mapToOnPrem(
  deps: RoutingAdminDeps,
  tx: Tx,
  caller: AdminCaller,
  target: Target,
): Promise<{ rule: RuleWithVersions; previousVersion: number | null; changed: boolean }> {
  await requireAssessment(deps, tx, caller.tenantId, ON_PREM_RESIDENCY);
  const existing = await tx.providerRoutingRule.findFirst({
    where: { tenantId: caller.tenantId, featureKey: null, residency: ON_PREM_RESIDENCY },
    include: { versions: true },
  });
  if (!existing) {
    const rule = await insertRule(tx, {
      tenantId: caller.tenantId,
      featureKey: null,
      residency: ON_PREM_RESIDENCY,
      primary: target,
      fallbacks: [],
      createdBy: caller.subject,
    });
    return { rule, previousVersion: null, changed: true };
  }
  const active = existing.versions.find((v) => v.version === existing.activeVersion);
  const current = active?.primary as unknown as Target | undefined;
  const fallbacks = (active?.fallbacks as unknown as Target[] | undefined) ?? [];
  if (current?.provider === ON_PREM_PROVIDER && current.model === target.model && fallbacks.length === 0) {
    // Already mapped: asking again changes nothing (but is still audited as asked).
    const rule = { ...existing, versions: [...existing.versions].sort((a, b) => a.version - b.version) };
    return { rule, previousVersion: existing.activeVersion, changed: false };
  }
  const updated = await insertRuleVersion(tx, {
    tenantId: caller.tenantId,
    ruleId: existing.id,
    primary: target,
    fallbacks: [],
    createdBy: caller.subject,
  });
  return { ...updated, changed: true };
}

/**
 * Tenant overrides of the routing rules, and the global rules every tenant inherits. Every change
 * is a new immutable version (or a switch of the active one), written with its audit event in one
 * transaction; the process's routing cache is dropped afterwards so the change applies to the next
 * request here (other replicas within AI_CONFIG_CACHE_MS).
 */
export function createRoutingAdmin(deps: RoutingAdminDeps): RoutingAdmin {
  return {
    create(caller, input, owner = 'tenant') {
      const featureKey = input.featureKey == null ? null : validateFeatureKey(input.featureKey);
      const residency = input.residency == null ? null : validateResidency(input.residency);
      const { primary, fallbacks } = validTargets(input, deps.knownProviders());
      return auditedRuleChange(
        deps,
        caller,
        auditAction(owner, 'routing_rule_created'),
        async (tx) => ({
          rule: await insertRule(tx, {
            tenantId: ownerTenant(caller, owner),
            featureKey,
            residency,
            primary,
            fallbacks,
            createdBy: caller.subject,
          }),
        }),
        () => ({ version: 1, primary, fallbacks }),
      );
    },
    update(caller, ruleId, input, ifMatch, owner = 'tenant') {
      const { primary, fallbacks } = validTargets(input, deps.knownProviders());
      return auditedRuleChange(
        deps,
        caller,
        auditAction(owner, 'routing_rule_updated'),
        (tx) =>
          insertRuleVersion(tx, {
            tenantId: ownerTenant(caller, owner),
            ruleId,
            primary,
            fallbacks,
            createdBy: caller.subject,
            expectedActiveVersion: input.expectedActiveVersion,
            ifMatch: { header: ifMatch },
          }),
        (r) => ({ previousVersion: r.previousVersion, primary, fallbacks }),
      );
    },
    activate(caller, ruleId, version, ifMatch, owner = 'tenant') {
      return auditedRuleChange(
        deps,
        caller,
        auditAction(owner, 'routing_rule_version_activated'),
        (tx) => setActiveVersion(tx, { tenantId: ownerTenant(caller, owner), ruleId, version, ifMatch: { header: ifMatch } }),
        (r) => ({ previousVersion: r.previousVersion }),
      );
    },
    assignOnPrem(caller, input) {
      const target = { provider: ON_PREM_PROVIDER, model: input.model ?? deps.onPremModel };
      validateTargets(target, [], deps.knownProviders());
      if (!deps.configuredProviders().has(ON_PREM_PROVIDER)) {
        throw new AppError('routing.provider_not_configured', 'The on-prem provider is not configured here (ONPREM_BASE_URL)', {
          status: 422,
        });
      }
      return auditedRuleChange(
        deps,
        caller,
        'on_prem_routing_assigned',
        (tx) => mapToOnPrem(deps, tx, caller, target),
        (r) => ({ primary: target, fallbacks: [], previousVersion: r.previousVersion, changed: r.changed }),
      );
    },
  };
}
