import { Arg, Ctx, Field, Float, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import type { AiContext } from '../context.js';
import { AI_ASSIST, SHADOW_PARITY_READ } from '../scopes.js';

@ObjectType({ simpleResolvers: true })
export class ShadowSampleCounts {
  @Field(() => Int, { description: 'Completed shadow-mode assist calls in the window.' }) gateway: number;
  @Field(() => Int, { description: 'Latencies the consumers reported for their direct calls in the window.' }) legacy: number;
}

@ObjectType({
  simpleResolvers: true,
  description: 'Phase 1 gate: P95 latency parity of the gateway (shadow mode) with the direct provider calls it replaces.',
})
export class ShadowParity {
  @Field(() => Int, { nullable: true }) gatewayP50: number | null;
  @Field(() => Int, { nullable: true }) gatewayP95: number | null;
  @Field(() => Int, { nullable: true }) gatewayP99: number | null;
  @Field(() => Int, { nullable: true }) legacyP95: number | null;
  @Field(() => Float, { nullable: true, description: 'gatewayP95 / legacyP95.' }) ratio: number | null;
  @Field(() => Float, { description: 'SHADOW_PARITY_MAX_RATIO.' }) maxRatio: number;
  @Field(() => Boolean, { description: 'ratio <= maxRatio with at least SHADOW_PARITY_MIN_SAMPLES on each side.' })
  parityHolds: boolean;
  @Field(() => String, { nullable: true, description: 'insufficient_samples or ratio_exceeded when parity does not hold.' })
  reason: string | null;
  @Field(() => ShadowSampleCounts) sampleCounts: ShadowSampleCounts;
  @Field(() => Boolean, { description: 'Percentiles come from a uniform random sample (more than 200,000 values on a side).' })
  sampled: boolean;
}

@Resolver(() => ShadowParity)
export class ShadowResolver {
  @Mutation(() => Int, {
    description:
      'Reports latencies (ms) a consumer measured on its direct provider calls for a feature, 1-1000 per call (scope ai.assist); returns how many were stored.',
  })
  async recordLegacyLatencySamples(
    @Arg('featureKey', () => String) featureKey: string,
    @Arg('samples', () => [Int]) samples: number[],
    @Ctx() ctx: AiContext,
  ): Promise<number> {
    requireAnyScope(ctx.principal, AI_ASSIST);
    return ctx.services.shadow.recordLegacySamples(
      { tenantId: ctx.tenantId, subject: ctx.principal.subject, effect: ctx.effect },
      featureKey,
      samples,
    );
  }

  @Query(() => ShadowParity, {
    description:
      'Latency parity of shadow-mode calls with reported legacy latencies in [from, to) (scope ai.assist or ai.admin).',
  })
  async shadowParity(
    @Arg('featureKey', () => String) featureKey: string,
    @Arg('from', () => Date) from: Date,
    @Arg('to', () => Date) to: Date,
    @Ctx() ctx: AiContext,
  ): Promise<ShadowParity> {
    requireAnyScope(ctx.principal, SHADOW_PARITY_READ);
    return ctx.services.shadow.parity(ctx.tenantId, featureKey, from, to);
  }
}
