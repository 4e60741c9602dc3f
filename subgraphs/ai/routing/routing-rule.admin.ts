import type { Db, Tx } from '../../../platform/db/database.js';
import type { Logger } from '../../../platform/logger.js';
import { actorOf } from '../assist/assist.logic.js';
import { loadTenantProfile } from '../assist/assist.repo.js';
import type { AuditSink } from '../audit/audit.sink.js';
import { insertRuleVersion, insertTenantRule, setActiveVersion, type RuleWithVersions } from './routing-rule.repo.js';
import { validateFeatureKey, validateResidency, validateTargets, type Target } from './routing.logic.js';

export interface AdminCaller {
  tenantId: string;
  subject: string;
  requestId: string;
  traceparent: string;
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
  onChange: () => void;
  logger: Logger;
}): RoutingAdmin {
  async function audited<T extends { rule: RuleWithVersions }>(
    caller: AdminCaller,
    action: string,
    change: (tx: Tx) => Promise<T>,
    details: (result: T) => Record<string, unknown>,
  ): Promise<RuleWithVersions> {
    const profile = await loadTenantProfile(deps.db, caller.tenantId);
    const actor = actorOf(caller.subject);
    const result = await deps.db.$transaction(async (tx) => {
      const value = await change(tx);
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
  };
}
