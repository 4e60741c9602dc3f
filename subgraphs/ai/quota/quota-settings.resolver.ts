import { Arg, Ctx, Field, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import { adminCaller, type AiContext } from '../context.js';
import { AI_ADMIN } from '../scopes.js';
import type { QuotaSettingsView } from './quota-settings.admin.js';

@ObjectType({
  simpleResolvers: true,
  description:
    "The caller tenant's quota (phase 3): enforced when enabled, in the shared store (Redis) across replicas. A quota.enabled feature flag overrides `enabled` for the features it names.",
})
export class QuotaSettings {
  @Field(() => Boolean) enabled: boolean;
  @Field(() => Int, { description: 'Assist requests per UTC minute; 0 = no rate limit.' }) requestsPerMinute: number;
  @Field(() => Int, { description: 'Model tokens per UTC day (input + output); 0 = no budget.' }) tokensPerDay: number;
  @Field(() => String, { description: 'Entity tag of these settings: send it as If-Match to setQuotaSettings.' }) etag: string;
  @Field(() => Date, { nullable: true, description: 'Last change; null while the tenant runs on the defaults.' })
  updatedAt: Date | null;
}

@InputType({ description: 'Every member: the settings are replaced whole.' })
export class QuotaSettingsInput {
  @Field(() => Boolean) enabled: boolean;
  @Field(() => Int, { description: '0 to 1,000,000; 0 = no rate limit.' }) requestsPerMinute: number;
  @Field(() => Int, { description: '0 to 2,000,000,000; 0 = no budget.' }) tokensPerDay: number;
}

const toQuotaSettings = (view: QuotaSettingsView): QuotaSettings => ({ ...view });

@Resolver(() => QuotaSettings)
export class QuotaSettingsResolver {
  @Query(() => QuotaSettings, { description: "The caller tenant's quota settings (scope ai.admin)." })
  async quotaSettings(@Ctx() ctx: AiContext): Promise<QuotaSettings> {
    requireAnyScope(ctx.principal, AI_ADMIN);
    return toQuotaSettings(await ctx.services.quotaSettings.read(ctx.tenantId));
  }

  @Mutation(() => QuotaSettings, {
    description:
      "Replaces the caller tenant's quota settings (scope ai.admin); audited. Needs the If-Match header with quotaSettings.etag (or *): missing request.precondition_required (428), stale request.precondition_failed (412). Effective at once on this replica, within AI_CONFIG_CACHE_MS on the others.",
  })
  async setQuotaSettings(
    @Arg('input', () => QuotaSettingsInput) input: QuotaSettingsInput,
    @Ctx() ctx: AiContext,
  ): Promise<QuotaSettings> {
    return toQuotaSettings(await ctx.services.quotaSettings.set(adminCaller(ctx), input, ctx.ifMatch));
  }
}
