import type { Tx } from '../../platform/db/database.js';

export interface TenantPolicy {
  retentionClass: string;
  dataResidency: string;
}

/** The retention class of a tenant without a settings row (the schema's default). */
export const DEFAULT_RETENTION_CLASS = 'operational';

/** A tenant without a settings row gets the schema defaults, the same values a new row would. */
const DEFAULTS: TenantPolicy = { retentionClass: DEFAULT_RETENTION_CLASS, dataResidency: 'EU' };

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

/** The retention class of the tenant's course with this slug, or the tenant's for a course not registered yet. */
export async function retentionClassOfSlug(tx: Tx, tenantId: string, slug: string): Promise<string> {
  const course = await tx.course.findUnique({ where: { tenantId_slug: { tenantId, slug } }, select: { retentionClass: true } });
  return course?.retentionClass ?? (await tenantPolicy(tx, tenantId)).retentionClass;
}
