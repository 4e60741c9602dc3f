import type { EffectClaim } from '../../../platform/idempotency/effect.logic.js';
import { keyedTransaction } from '../../../platform/idempotency/effect-store.js';
import type { Db, Tx } from '../../../platform/db/database.js';
import { AppError } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logger.js';
import { actorOf } from '../assist/assist.logic.js';
import { hasSignedAssessment, loadTenantProfile } from '../assist/assist.repo.js';
import type { AuditSink } from '../audit/audit.sink.js';
import { insertRuleVersion, insertTenantRule, setActiveVersion, type RuleWithVersions } from './routing-rule.repo.js';
import { requiresAssessment, validateTargets, validateFeatureKey, validateResidency, type Target } from './routing.logic.js';

export interface AdminCaller {
  tenantId: string;
  subject: string;
  requestId: string;
  traceparent: string;
  /** The request's Idempotency-Key claim: the change records its result under it (keyedTransaction). */
  effect?: EffectClaim;
}

export interface RoutingAdmin {
  create(
    caller: AdminCaller,
    input: { featureKey?: string | null; residency?: string | null; primary: Target; fallbacks: Target[] },
  ): Promise<RuleWithVersions>;
  update(
    caller: AdminCaller,
    ruleId: string,
    input: { primary: Target; fallbacks: Target[]; expectedActiveVersion?: number | null },
  ): Promise<RuleWithVersions>;
  activate(caller: AdminCaller, ruleId: string, version: number): Promise<RuleWithVersions>;
  /** Tenant notes: maps the caller's tenant to the on-prem provider for requests with residency ON_PREM. */
  assignOnPrem(caller: AdminCaller, input: { model?: string | null }): Promise<RuleWithVersions>;
}

export const ON_PREM_RESIDENCY = 'ON_PREM';
export const ON_PREM_PROVIDER = 'on-prem';

function assessmentRequired(residency: string): AppError {
  return new AppError(
    'routing.assessment_required',
    `Residency ${residency} needs a signed data-protection impact assessment of the tenant`,
    {
      details: { residency },
    },
  );
}

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

/**
 * Tenant overrides of the routing rules. Every change is a new immutable version (or a switch of
 * the active one), written with its audit event in one transaction; the process's routing cache
 * is dropped afterwards so the change applies to the next request here.
 */
export function createRoutingAdmin(deps: {
  db: Db;
  audit: AuditSink;
  knownProviders: () => ReadonlySet<string>;
  /** Providers this process can call (the on-prem mapping needs the on-prem adapter configured). */
  configuredProviders: () => ReadonlySet<string>;
  /** AI_ASSESSMENT_RESIDENCIES: a rule of these residencies is created or activated only with a signed assessment. */
  assessmentResidencies: readonly string[];
  onPremModel: string;
  now: () => Date;
  onChange: () => void;
  logger: Logger;
}): RoutingAdmin {
  async function requireAssessment(tx: Tx, tenantId: string, residency: string): Promise<void> {
    if (!(await hasSignedAssessment(tx, tenantId, residency, deps.now()))) throw assessmentRequired(residency);
  }

  async function audited<T extends { rule: RuleWithVersions }>(
    caller: AdminCaller,
    action: string,
    change: (tx: Tx) => Promise<T>,
    details: (result: T) => Record<string, unknown>,
  ): Promise<RuleWithVersions> {
    const profile = await loadTenantProfile(deps.db, caller.tenantId);
    const actor = actorOf(caller.subject);
    const result = await keyedTransaction(deps.db, caller.effect, async (tx) => {
      const value = await change(tx);
      // Checked on the rule as written, so creating, updating and re-activating a rule of such a
      // residency all need the assessment; a refusal rolls the change back.
      if (value.rule.activeVersion !== null && requiresAssessment(value.rule.residency, deps.assessmentResidencies)) {
        await requireAssessment(tx, caller.tenantId, value.rule.residency!);
      }
      await deps.audit.record(tx, {
        action,
        tenantId: caller.tenantId,
        actor,
        target: { type: 'routing_rule', id: value.rule.id },
        details: {
          ruleId: value.rule.id,
          featureKey: value.rule.featureKey,
          residency: value.rule.residency,
          activeVersion: value.rule.activeVersion,
          ...details(value),
        },
        retentionClass: profile.retentionClass,
        dataResidency: profile.dataResidency,
        traceparent: caller.traceparent,
        requestId: caller.requestId,
      });
      return value;
    });
    deps.onChange();
    deps.logger.info({ action, ruleId: result.rule.id, activeVersion: result.rule.activeVersion }, 'routing rule changed');
    return result.rule;
  }

  return {
    create(caller, input) {
      const featureKey = input.featureKey == null ? null : validateFeatureKey(input.featureKey);
      const residency = input.residency == null ? null : validateResidency(input.residency);
      const { primary, fallbacks } = validTargets(input, deps.knownProviders());
      return audited(
        caller,
        'routing_rule_created',
        async (tx) => ({
          rule: await insertTenantRule(tx, {
            tenantId: caller.tenantId,
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
    update(caller, ruleId, input) {
      const { primary, fallbacks } = validTargets(input, deps.knownProviders());
      return audited(
        caller,
        'routing_rule_updated',
        (tx) =>
          insertRuleVersion(tx, {
            tenantId: caller.tenantId,
            ruleId,
            primary,
            fallbacks,
            createdBy: caller.subject,
            expectedActiveVersion: input.expectedActiveVersion,
          }),
        (r) => ({ previousVersion: r.previousVersion, primary, fallbacks }),
      );
    },
    activate(caller, ruleId, version) {
      return audited(
        caller,
        'routing_rule_version_activated',
        (tx) => setActiveVersion(tx, { tenantId: caller.tenantId, ruleId, version }),
        (r) => ({ previousVersion: r.previousVersion }),
      );
    },
    assignOnPrem(caller, input) {
      const model = input.model ?? deps.onPremModel;
      const target = { provider: ON_PREM_PROVIDER, model };
      validateTargets(target, [], deps.knownProviders());
      if (!deps.configuredProviders().has(ON_PREM_PROVIDER)) {
        throw new AppError('routing.provider_not_configured', 'The on-prem provider is not configured here (ONPREM_BASE_URL)', {
          status: 422,
        });
      }
      return audited(
        caller,
        'on_prem_routing_assigned',
        async (tx) => {
          // "Tenants with an on-prem AI assessment are mapped manually to the routing rule with residency ON_PREM."
          await requireAssessment(tx, caller.tenantId, ON_PREM_RESIDENCY);
          const existing = await tx.providerRoutingRule.findFirst({
            where: { tenantId: caller.tenantId, featureKey: null, residency: ON_PREM_RESIDENCY },
            include: { versions: true },
          });
          if (!existing) {
            const rule = await insertTenantRule(tx, {
              tenantId: caller.tenantId,
              featureKey: null,
              residency: ON_PREM_RESIDENCY,
              primary: target,
              fallbacks: [],
              createdBy: caller.subject,
            });
            return { rule, previousVersion: null as number | null, changed: true };
          }
          const active = existing.versions.find((v) => v.version === existing.activeVersion);
          const current = active?.primary as unknown as Target | undefined;
          const fallbacks = (active?.fallbacks as unknown as Target[] | undefined) ?? [];
          if (current?.provider === ON_PREM_PROVIDER && current.model === model && fallbacks.length === 0) {
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
        },
        (r) => ({ primary: target, fallbacks: [], previousVersion: r.previousVersion, changed: r.changed }),
      );
    },
  };
}
