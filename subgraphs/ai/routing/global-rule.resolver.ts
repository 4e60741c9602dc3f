import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import { platformCaller, type AiContext } from '../context.js';
import { PLATFORM_ADMIN } from '../scopes.js';
import { CreateRoutingRuleInput, UpdateRoutingRuleInput } from './routing-rule.input.js';
import { listGlobalRules, toRoutingRule } from './routing-rule.repo.js';
import { requireRuleId, requireVersion } from './routing-rule.resolver.js';
import { ProviderRoutingRule } from './routing-rule.type.js';

/**
 * The global routing rules (scope platform.admin): the phase-0 default every tenant inherits and
 * the rule phase 3 rolls back ("route back to the primary provider; routing rules are versioned").
 * A tenant's ai.admin reads them (routingRules) but changes only its own overrides.
 */
@Resolver(() => ProviderRoutingRule)
export class GlobalRoutingRuleResolver {
  @Query(() => [ProviderRoutingRule], { description: 'The global routing rules with their versions (scope platform.admin).' })
  async globalRoutingRules(@Ctx() ctx: AiContext): Promise<ProviderRoutingRule[]> {
    requireAnyScope(ctx.principal, PLATFORM_ADMIN);
    return (await listGlobalRules(ctx.db)).map(toRoutingRule);
  }

  @Mutation(() => ProviderRoutingRule, {
    description:
      'Creates a global routing rule, version 1, active (scope platform.admin). One per feature and residency (request.conflict).',
  })
  async createGlobalRoutingRule(
    @Arg('input', () => CreateRoutingRuleInput) input: CreateRoutingRuleInput,
    @Ctx() ctx: AiContext,
  ): Promise<ProviderRoutingRule> {
    return toRoutingRule(await ctx.services.routingAdmin.create(platformCaller(ctx), input, 'global'));
  }

  @Mutation(() => ProviderRoutingRule, {
    description:
      "Adds a version to a global rule and activates it (scope platform.admin); a tenant rule id is request.not_found here. Needs the If-Match header with the rule's etag (missing: 428 request.precondition_required, stale: 412 request.precondition_failed).",
  })
  async updateGlobalRoutingRule(
    @Arg('ruleId', () => ID) ruleId: string,
    @Arg('input', () => UpdateRoutingRuleInput) input: UpdateRoutingRuleInput,
    @Ctx() ctx: AiContext,
  ): Promise<ProviderRoutingRule> {
    const caller = platformCaller(ctx);
    return toRoutingRule(await ctx.services.routingAdmin.update(caller, requireRuleId(ruleId), input, ctx.ifMatch, 'global'));
  }

  @Mutation(() => ProviderRoutingRule, {
    description:
      "Makes an existing version of a global rule the active one: rollback or roll forward (scope platform.admin). Needs the If-Match header with the rule's etag (missing: 428 request.precondition_required, stale: 412 request.precondition_failed).",
  })
  async activateGlobalRoutingRuleVersion(
    @Arg('ruleId', () => ID) ruleId: string,
    @Arg('version', () => Int) version: number,
    @Ctx() ctx: AiContext,
  ): Promise<ProviderRoutingRule> {
    const caller = platformCaller(ctx);
    return toRoutingRule(
      await ctx.services.routingAdmin.activate(caller, requireRuleId(ruleId), requireVersion(version), ctx.ifMatch, 'global'),
    );
  }
}
