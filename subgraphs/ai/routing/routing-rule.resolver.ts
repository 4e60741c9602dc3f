import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import { badInput } from '../../../platform/errors.js';
import { isId } from '../../../platform/ids.js';
import type { AiContext } from '../context.js';
import { findVisibleRule, listVisibleRules, toRoutingRule } from './routing-rule.repo.js';
import { ProviderRoutingRule } from './routing-rule.type.js';

export function requireRuleId(value: string): string {
  if (!isId('routingRule', value)) throw badInput('ruleId is not a routing rule id', { argument: 'ruleId' });
  return value;
}

@Resolver(() => ProviderRoutingRule)
export class RoutingRuleResolver {
  @Query(() => [ProviderRoutingRule], { description: 'Global rules and the caller tenant\'s overrides.' })
  async routingRules(
    @Arg('featureKey', () => String, { nullable: true }) featureKey: string | null,
    @Ctx() ctx: AiContext,
  ): Promise<ProviderRoutingRule[]> {
    return (await listVisibleRules(ctx.db, ctx.tenantId, featureKey ?? undefined)).map(toRoutingRule);
  }

  @Query(() => ProviderRoutingRule, { nullable: true })
  async routingRule(@Arg('ruleId', () => ID) ruleId: string, @Ctx() ctx: AiContext): Promise<ProviderRoutingRule | null> {
    const row = await findVisibleRule(ctx.db, ctx.tenantId, requireRuleId(ruleId));
    return row ? toRoutingRule(row) : null;
  }
}

export async function resolveRoutingRuleReference(ref: { ruleId: string }, ctx: AiContext): Promise<ProviderRoutingRule | null> {
  const row = await findVisibleRule(ctx.db, ctx.tenantId, requireRuleId(ref.ruleId));
  return row ? toRoutingRule(row) : null;
}
