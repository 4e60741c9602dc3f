import { Arg, Ctx, Field, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { badInput } from '../../../platform/errors/errors.js';
import { adminCaller, type AiContext } from '../context.js';
import { FLAG_NAMES } from './feature-flag.logic.js';

@ObjectType({
  simpleResolvers: true,
  description: 'A rollback switch of the tenant: hitl.enabled, moderation.enabled, multiProvider.enabled or quota.enabled.',
})
export class FeatureFlag {
  @Field(() => String, { description: 'A feature key, or * for every feature of the tenant (a feature row wins over *).' })
  featureKey: string;
  @Field(() => String) flag: string;
  @Field(() => Boolean) enabled: boolean;
  @Field(() => String) updatedBy: string;
  @Field(() => Date) updatedAt: Date;
}

@ObjectType({ simpleResolvers: true, description: 'One change of a feature flag: who, when and why.' })
export class FeatureFlagChange {
  @Field(() => String) featureKey: string;
  @Field(() => String) flag: string;
  @Field(() => Boolean) enabled: boolean;
  @Field(() => String) changedBy: string;
  @Field(() => String, { nullable: true }) reason: string | null;
  @Field(() => Date) changedAt: Date;
}

@InputType()
export class SetFeatureFlagInput {
  @Field(() => String, { description: 'A feature key, or * for every feature of the tenant.' }) featureKey: string;
  @Field(() => String, { description: `One of ${FLAG_NAMES.join(', ')}.` }) flag: string;
  @Field(() => Boolean) enabled: boolean;
  @Field(() => String, { nullable: true, description: 'Why (incident, rollout step); kept in the change trail.' }) reason?:
    string | null;
}

@Resolver(() => FeatureFlag)
export class FeatureFlagResolver {
  @Mutation(() => FeatureFlag, {
    description:
      'Sets a rollback switch for the tenant (scope ai.admin). Takes effect on the next request here and within AI_CONFIG_CACHE_MS on other replicas. hitl.enabled=false releases outputs unreviewed (logged, counted in hitl_passthrough_total, alert event audit.ai.hitl_passthrough.v1); quota.enabled overrides the tenant setting.',
  })
  async setFeatureFlag(
    @Arg('input', () => SetFeatureFlagInput) input: SetFeatureFlagInput,
    @Ctx() ctx: AiContext,
  ): Promise<FeatureFlag> {
    return ctx.services.flags.set(adminCaller(ctx), input);
  }

  @Query(() => [FeatureFlag], {
    description: "The tenant's feature flags (scope ai.admin). No row means enabled (quota: the tenant setting).",
  })
  async featureFlags(@Ctx() ctx: AiContext): Promise<FeatureFlag[]> {
    adminCaller(ctx);
    return ctx.db.featureFlag.findMany({ where: { tenantId: ctx.tenantId }, orderBy: [{ featureKey: 'asc' }, { flag: 'asc' }] });
  }

  @Query(() => [FeatureFlagChange], {
    description: 'The change trail of the tenant’s feature flags, newest first (scope ai.admin).',
  })
  async featureFlagChanges(
    @Arg('first', () => Int, { nullable: true, defaultValue: 50 }) first: number,
    @Ctx() ctx: AiContext,
  ): Promise<FeatureFlagChange[]> {
    adminCaller(ctx);
    if (first < 1 || first > 500) throw badInput('first must be between 1 and 500', { argument: 'first' });
    return ctx.db.featureFlagChange.findMany({
      where: { tenantId: ctx.tenantId },
      orderBy: [{ changedAt: 'desc' }, { id: 'desc' }],
      take: first,
    });
  }
}
