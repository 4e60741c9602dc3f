import type { Tx } from '../../platform/db/database.js';

export interface TenantPolicy {
  retentionClass: string;
  dataResidency: string;
}

/** A tenant without a settings row gets the schema defaults, the same values a new row would. */
const DEFAULTS: TenantPolicy = { retentionClass: 'operational', dataResidency: 'EU' };

export async function tenantPolicy(tx: Tx, tenantId: string): Promise<TenantPolicy> {
  return (await tenantPolicies(tx, [tenantId])).get(tenantId)!;
}

/** The policies of several tenants, defaults filled in, in one statement. */
export async function tenantPolicies(tx: Tx, tenantIds: readonly string[]): Promise<Map<string, TenantPolicy>> {
  const policies = new Map<string, TenantPolicy>(tenantIds.map((tenantId) => [tenantId, DEFAULTS]));
  if (!tenantIds.length) return policies;
  const rows = await tx.tenantSettings.findMany({
    where: { tenantId: { in: [...tenantIds] } },
    select: { tenantId: true, retentionClass: true, dataResidency: true },
  });
  for (const { tenantId, ...policy } of rows) policies.set(tenantId, policy);
  return policies;
}
