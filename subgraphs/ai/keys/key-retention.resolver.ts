import type { ConsumerCutover as CutoverRow } from '../../../prisma/generated/client.js';
import { Arg, Ctx, Field, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { adminCaller, type AiContext } from '../context.js';
import { mayRetire, retainUntil } from './key-retention.logic.js';

@ObjectType({
  simpleResolvers: true,
  description: "A consumer service's direct provider key after its cutover to the gateway (rollback of phase 1).",
})
export class ProviderKeyRetention {
  @Field(() => String) serviceName: string;
  @Field(() => String) provider: string;
  @Field(() => Date) cutoverAt: Date;
  @Field(() => Date, { description: 'cutoverAt + PROVIDER_KEY_RETENTION_DAYS: until then the key stays for a rollback.' })
  retainUntil: Date;
  @Field(() => Boolean, { description: 'The retention window has passed and the key is not retired yet.' }) mayRetire: boolean;
  @Field(() => Date, { nullable: true }) retiredAt: Date | null;
  @Field(() => Int) retentionDays: number;
}

@InputType()
export class ConsumerCutoverInput {
  @Field(() => String, { description: 'The consumer service, e.g. chart-service.' }) serviceName: string;
  @Field(() => String, { description: 'The provider whose direct key the service held, e.g. openai.' }) provider: string;
  @Field(() => Date, { description: 'When the service stopped using its direct key.' }) cutoverAt: Date;
}

function toRetention(row: CutoverRow, retentionDays: number, now: Date): ProviderKeyRetention {
  return {
    serviceName: row.serviceName,
    provider: row.provider,
    cutoverAt: row.cutoverAt,
    retainUntil: retainUntil(row.cutoverAt, retentionDays),
    mayRetire: row.retiredAt === null && mayRetire(row.cutoverAt, retentionDays, now),
    retiredAt: row.retiredAt,
    retentionDays,
  };
}

@Resolver(() => ProviderKeyRetention)
export class KeyRetentionResolver {
  @Mutation(() => ProviderKeyRetention, {
    description:
      "Records a consumer service's cutover to the gateway (scope ai.admin); recording it again (after a rollback) restarts the window.",
  })
  async recordConsumerCutover(
    @Arg('input', () => ConsumerCutoverInput) input: ConsumerCutoverInput,
    @Ctx() ctx: AiContext,
  ): Promise<ProviderKeyRetention> {
    const row = await ctx.services.keyRetention.recordCutover(adminCaller(ctx), input);
    return toRetention(row, ctx.services.keyRetention.retentionDays, ctx.clock.now());
  }

  @Query(() => [ProviderKeyRetention], {
    description: 'Direct provider keys of consumer services and whether they may be retired (scope ai.admin).',
  })
  async providerKeyRetention(@Ctx() ctx: AiContext): Promise<ProviderKeyRetention[]> {
    adminCaller(ctx);
    const now = ctx.clock.now();
    return (await ctx.services.keyRetention.list(ctx.tenantId)).map((row) =>
      toRetention(row, ctx.services.keyRetention.retentionDays, now),
    );
  }

  @Mutation(() => ProviderKeyRetention, {
    description:
      'Marks a direct key retired once its window has passed (scope ai.admin); keys.retention_window_open (409) before, keys.already_retired after. The key itself is deleted by its owners.',
  })
  async retireProviderKey(
    @Arg('serviceName', () => String) serviceName: string,
    @Arg('provider', () => String) provider: string,
    @Ctx() ctx: AiContext,
  ): Promise<ProviderKeyRetention> {
    const row = await ctx.services.keyRetention.retire(adminCaller(ctx), { serviceName, provider });
    return toRetention(row, ctx.services.keyRetention.retentionDays, ctx.clock.now());
  }
}
