import { Arg, Ctx, Field, ID, InputType, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { adminCaller, type AiContext } from '../context.js';

@ObjectType({ simpleResolvers: true, description: 'A signed data-protection impact assessment of the tenant for one residency.' })
export class DataProtectionAssessment {
  @Field(() => ID) assessmentId: string;
  @Field(() => String) residency: string;
  @Field(() => String) signedBy: string;
  @Field(() => Date) signedAt: Date;
  @Field(() => String, { description: 'sha256:<hex> of the signed document.' }) documentHash: string;
  @Field(() => Date) createdAt: Date;
}

@InputType()
export class DataProtectionAssessmentInput {
  @Field(() => String, { description: 'e.g. AF or ON_PREM.' }) residency: string;
  @Field(() => String, { description: 'Who signed (a usr_ id or the signatory’s name).' }) signedBy: string;
  @Field(() => Date) signedAt: Date;
  @Field(() => String, { description: 'sha256 of the signed document: 64 hex characters, optionally prefixed sha256:.' })
  documentHash: string;
}

type Row = { id: string; residency: string; signedBy: string; signedAt: Date; documentHash: string; createdAt: Date };
const toAssessment = (row: Row): DataProtectionAssessment => ({ assessmentId: row.id, ...row });

@Resolver(() => DataProtectionAssessment)
export class AssessmentResolver {
  @Mutation(() => DataProtectionAssessment, {
    description:
      'Records a signed assessment (scope ai.admin). Residencies in AI_ASSESSMENT_RESIDENCIES (default AF) need one before a request, or a routing rule, may use them; ON_PREM needs one before assignOnPremRouting.',
  })
  async recordDataProtectionAssessment(
    @Arg('input', () => DataProtectionAssessmentInput) input: DataProtectionAssessmentInput,
    @Ctx() ctx: AiContext,
  ): Promise<DataProtectionAssessment> {
    return toAssessment(await ctx.services.assessments.record(adminCaller(ctx), input));
  }

  @Query(() => [DataProtectionAssessment], { description: "The tenant's assessments, newest first (scope ai.admin)." })
  async dataProtectionAssessments(@Ctx() ctx: AiContext): Promise<DataProtectionAssessment[]> {
    adminCaller(ctx);
    const rows = await ctx.db.dataProtectionAssessment.findMany({
      where: { tenantId: ctx.tenantId },
      orderBy: { signedAt: 'desc' },
    });
    return rows.map(toAssessment);
  }
}
