import { Directive, Field, ID, ObjectType } from 'type-graphql';

@Directive('@key(fields: "policyId")')
@ObjectType({
  simpleResolvers: true,
  description: 'Whether outputs of a feature need human review before release (global or per tenant).',
})
export class HITLPolicy {
  @Field(() => ID) policyId: string;
  @Field(() => String, { nullable: true }) tenantId: string | null;
  @Field(() => String) featureKey: string;
  @Field(() => String, { description: 'required or optional.' }) mode: string;
  @Field(() => String) updatedBy: string;
  @Field(() => Date) updatedAt: Date;
}
