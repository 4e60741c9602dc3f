import type { HITLPolicy as PolicyRow } from '../../../prisma/generated/client.js';
import { Arg, Ctx, Query, Resolver } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import { badInput } from '../../../platform/errors/errors.js';
import { isId } from '../../../platform/ids.js';
import type { AiContext } from '../context.js';
import { AI_ADMIN } from '../scopes.js';
import { HITLPolicy } from './hitl-policy.type.js';

export function toHitlPolicy(row: PolicyRow): HITLPolicy {
  return {
    policyId: row.id,
    tenantId: row.tenantId,
    featureKey: row.featureKey,
    mode: row.mode,
    updatedBy: row.updatedBy,
    updatedAt: row.updatedAt,
  };
}

@Resolver(() => HITLPolicy)
export class HitlPolicyResolver {
  @Query(() => [HITLPolicy], { description: "Global policies and the caller tenant's overrides (scope ai.admin)." })
  async hitlPolicies(
    @Arg('featureKey', () => String, { nullable: true }) featureKey: string | null,
    @Ctx() ctx: AiContext,
  ): Promise<HITLPolicy[]> {
    requireAnyScope(ctx.principal, AI_ADMIN);
    const rows = await ctx.db.hITLPolicy.findMany({
      where: { OR: [{ tenantId: null }, { tenantId: ctx.tenantId }], ...(featureKey ? { featureKey } : {}) },
      orderBy: { featureKey: 'asc' },
    });
    return rows.map(toHitlPolicy);
  }
}

export async function resolveHitlPolicyReference(ref: { policyId: string }, ctx: AiContext): Promise<HITLPolicy | null> {
  requireAnyScope(ctx.principal, AI_ADMIN);
  if (!isId('hitlPolicy', ref.policyId)) throw badInput('policyId is not a HITL policy id');
  const row = await ctx.db.hITLPolicy.findFirst({
    where: { id: ref.policyId, OR: [{ tenantId: null }, { tenantId: ctx.tenantId }] },
  });
  return row ? toHitlPolicy(row) : null;
}
