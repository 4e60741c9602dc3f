import type { Tx } from '../../platform/db/database.js';

export interface TenantPolicy {
  retentionClass: string;
  dataResidency: string;
}

/** A tenant without a settings row gets the schema defaults, the same values a new row would. */
const DEFAULTS: TenantPolicy = { retentionClass: 'operational', dataResidency: 'EU' };

export async function tenantPolicy(tx: Tx, tenantId: string): Promise<TenantPolicy> {
  const row = await tx.tenantSettings.findUnique({ where: { tenantId }, select: { retentionClass: true, dataResidency: true } });
  return row ?? DEFAULTS;
}
