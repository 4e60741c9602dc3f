import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import { badInput } from '../../../platform/errors/errors.js';
import { isId } from '../../../platform/ids.js';
import { adminCaller, type AiContext } from '../context.js';
import { AI_ADMIN } from '../scopes.js';
import { CreateRoutingRuleInput, UpdateRoutingRuleInput } from './routing-rule.input.js';
import { findVisibleRule, listVisibleRules, toRoutingRule } from './routing-rule.repo.js';
import { ProviderRoutingRule } from './routing-rule.type.js';

export function requireRuleId(value: string): string {
  if (!isId('routingRule', value)) throw badInput('ruleId is not a routing rule id', { argument: 'ruleId' });
  return value;
}

export function requireVersion(version: number): number {
  if (!Number.isInteger(version) || version < 1) throw badInput('version must be a positive integer', { argument: 'version' });
  return version;
}

/** Who is calling, for a service: tenant, subject, request, trace and the Idempotency-Key claim. */
@Resolver(() => ProviderRoutingRule)
export class RoutingRuleResolver {
  @Query(() => [ProviderRoutingRule], { description: "Global rules and the caller tenant's overrides (scope ai.admin)." })
  async routingRules(
    @Arg('featureKey', () => String, { nullable: true }) featureKey: string | null,
    @Ctx() ctx: AiContext,
  ): Promise<ProviderRoutingRule[]> {
    requireAnyScope(ctx.principal, AI_ADMIN);
    return (await listVisibleRules(ctx.db, ctx.tenantId, featureKey ?? undefined)).map(toRoutingRule);
  }

  @Query(() => ProviderRoutingRule, {
    nullable: true,
    description: "A global rule or one of the caller tenant's (scope ai.admin).",
  })
  async routingRule(@Arg('ruleId', () => ID) ruleId: string, @Ctx() ctx: AiContext): Promise<ProviderRoutingRule | null> {
    requireAnyScope(ctx.principal, AI_ADMIN);
    const row = await findVisibleRule(ctx.db, ctx.tenantId, requireRuleId(ruleId));
    return row ? toRoutingRule(row) : null;
  }

  @Mutation(() => ProviderRoutingRule, {
    description:
      "Creates a routing override for the caller's tenant (scope ai.admin). A rule whose residency is in AI_ASSESSMENT_RESIDENCIES (default AF) needs a signed assessment first (routing.assessment_required), also when it is updated or re-activated.",
  })
  async createRoutingRule(
    @Arg('input', () => CreateRoutingRuleInput) input: CreateRoutingRuleInput,
    @Ctx() ctx: AiContext,
  ): Promise<ProviderRoutingRule> {
    return toRoutingRule(await ctx.services.routingAdmin.create(adminCaller(ctx), input));
  }

  @Mutation(() => ProviderRoutingRule, {
    description:
      "Adds a version to one of the tenant's rules and activates it (scope ai.admin). Needs the If-Match header with the rule's etag (missing: 428 request.precondition_required, stale: 412 request.precondition_failed).",
  })
  async updateRoutingRule(
    @Arg('ruleId', () => ID) ruleId: string,
    @Arg('input', () => UpdateRoutingRuleInput) input: UpdateRoutingRuleInput,
    @Ctx() ctx: AiContext,
  ): Promise<ProviderRoutingRule> {
    const caller = adminCaller(ctx);
    return toRoutingRule(await ctx.services.routingAdmin.update(caller, requireRuleId(ruleId), input, ctx.ifMatch));
  }

  @Mutation(() => ProviderRoutingRule, {
    description:
      "Makes an existing version the active one: rollback or roll forward (scope ai.admin). Needs the If-Match header with the rule's etag (missing: 428 request.precondition_required, stale: 412 request.precondition_failed).",
  })
  async activateRoutingRuleVersion(
    @Arg('ruleId', () => ID) ruleId: string,
    @Arg('version', () => Int) version: number,
    @Ctx() ctx: AiContext,
  ): Promise<ProviderRoutingRule> {
    const caller = adminCaller(ctx);
    return toRoutingRule(
      await ctx.services.routingAdmin.activate(caller, requireRuleId(ruleId), requireVersion(version), ctx.ifMatch),
    );
  }

  @Mutation(() => ProviderRoutingRule, {
    description:
      "Maps the caller's tenant to the on-prem provider (scope ai.admin): a tenant rule with residency ON_PREM whose primary is on-prem, without fallbacks. Needs a signed ON_PREM assessment (routing.assessment_required) and ONPREM_BASE_URL (routing.provider_not_configured). Every request of the tenant then runs on premises, with or without a residency (one naming another is refused, routing.residency_not_allowed); asking again is a no-op.",
  })
  async assignOnPremRouting(
    @Arg('model', () => String, { nullable: true, description: 'Defaults to ONPREM_MODEL.' }) model: string | null,
    @Ctx() ctx: AiContext,
  ): Promise<ProviderRoutingRule> {
    return toRoutingRule(await ctx.services.routingAdmin.assignOnPrem(adminCaller(ctx), { model }));
  }
}

export async function resolveRoutingRuleReference(ref: { ruleId: string }, ctx: AiContext): Promise<ProviderRoutingRule | null> {
  requireAnyScope(ctx.principal, AI_ADMIN);
  const row = await findVisibleRule(ctx.db, ctx.tenantId, requireRuleId(ref.ruleId));
  return row ? toRoutingRule(row) : null;
}
