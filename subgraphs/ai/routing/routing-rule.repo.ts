import type { Db } from '../../../platform/db/database.js';
import type { ProviderRoutingRule as RuleRow, ProviderRoutingRuleVersion as VersionRow } from '../../../prisma/generated/client.js';
import type { ProviderRoutingRule, ProviderTarget } from './routing-rule.type.js';

export type RuleWithVersions = RuleRow & { versions: VersionRow[] };

/** Rules a tenant sees: the global ones and its own overrides. */
export function listVisibleRules(db: Db, tenantId: string, featureKey?: string): Promise<RuleWithVersions[]> {
  return db.providerRoutingRule.findMany({
    where: {
      OR: [{ tenantId: null }, { tenantId }],
      ...(featureKey ? { AND: [{ OR: [{ featureKey: null }, { featureKey }] }] } : {}),
    },
    include: { versions: { orderBy: { version: 'asc' } } },
    orderBy: { createdAt: 'asc' },
  });
}

export function findVisibleRule(db: Db, tenantId: string, ruleId: string): Promise<RuleWithVersions | null> {
  return db.providerRoutingRule.findFirst({
    where: { id: ruleId, OR: [{ tenantId: null }, { tenantId }] },
    include: { versions: { orderBy: { version: 'asc' } } },
  });
}

export function toRoutingRule(row: RuleWithVersions): ProviderRoutingRule {
  return {
    ruleId: row.id,
    tenantId: row.tenantId,
    featureKey: row.featureKey,
    residency: row.residency,
    activeVersion: row.activeVersion,
    versions: row.versions.map((v) => ({
      version: v.version,
      primary: v.primary as unknown as ProviderTarget,
      fallbacks: v.fallbacks as unknown as ProviderTarget[],
      createdBy: v.createdBy,
      createdAt: v.createdAt,
    })),
  };
}
