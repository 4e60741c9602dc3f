import { Arg, Ctx, Field, InputType, Int, Mutation, ObjectType, Resolver } from 'type-graphql';
import { adminCaller, type AiContext } from '../context.js';
import { MAX_BACKFILL_ROWS } from './backfill.logic.js';

@InputType({ description: 'One AI-assisted output produced before the gateway, from the consumer’s own records.' })
export class LegacyProvenanceInput {
  @Field(() => String, { description: 'The id in the legacy system; a row already imported with it is skipped.' })
  legacyId: string;
  @Field(() => String) featureKey: string;
  @Field(() => Date) createdAt: Date;
  @Field(() => String, { description: 'Who produced it: a usr_ id or a service name.' }) actorId: string;
  @Field(() => String, { nullable: true, description: 'user or service; derived from actorId when absent.' }) actorType?:
    string | null;
  @Field(() => String, { nullable: true }) provider?: string | null;
  @Field(() => String, { nullable: true }) model?: string | null;
  @Field(() => String, { nullable: true, description: 'sha256:<64 hex> of the output; the text itself is never imported.' })
  outputHash?: string | null;
  @Field(() => String, { nullable: true }) facilityId?: string | null;
  @Field(() => String, { nullable: true }) specialty?: string | null;
  @Field(() => String, { nullable: true }) subjectRef?: string | null;
}

@ObjectType({ simpleResolvers: true })
export class BackfillRowError {
  @Field(() => Int) index: number;
  @Field(() => String, { nullable: true }) legacyId: string | null;
  @Field(() => String) code: string;
  @Field(() => String) message: string;
}

@ObjectType({ simpleResolvers: true })
export class BackfillResult {
  @Field(() => Int) created: number;
  @Field(() => Int, { description: 'Valid rows already imported earlier (same legacyId): left unchanged.' }) skipped: number;
  @Field(() => [String]) skippedLegacyIds: string[];
  @Field(() => [BackfillRowError], { description: 'Rows refused, each on its own; the valid rows of the batch are imported.' })
  errors: BackfillRowError[];
}

@Resolver(() => BackfillResult)
export class BackfillResolver {
  @Mutation(() => BackfillResult, {
    description: `Imports pre-gateway AI-assisted outputs as provenance with legacyBackfill = true (scope ai.admin), at most ${MAX_BACKFILL_ROWS} rows per call; idempotent by legacyId.`,
  })
  async backfillLegacyProvenance(
    @Arg('rows', () => [LegacyProvenanceInput]) rows: LegacyProvenanceInput[],
    @Ctx() ctx: AiContext,
  ): Promise<BackfillResult> {
    return ctx.services.backfill.backfill(adminCaller(ctx), rows);
  }
}
