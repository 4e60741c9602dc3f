import { Directive, Field, ID, InputType, Int, ObjectType } from 'type-graphql';

@Directive('@key(fields: "templateId")')
@ObjectType({
  simpleResolvers: true,
  description: 'An immutable prompt template version for a feature key, identified by its hash.',
})
export class PromptTemplate {
  @Field(() => ID) templateId: string;
  @Field(() => String, { nullable: true, description: 'null for a global template.' }) tenantId: string | null;
  @Field(() => String) featureKey: string;
  @Field(() => Int) version: number;
  @Field(() => String) body: string;
  @Field(() => [String], { description: 'Variables the body requires.' }) variables: string[];
  @Field(() => String, { description: 'sha256 of the canonical template.' }) hash: string;
  @Field(() => Boolean) active: boolean;
  @Field(() => String) publishedBy: string;
  @Field(() => Date) createdAt: Date;
}

@InputType({ description: "A new immutable template version for the caller's tenant, active at once." })
export class PublishPromptTemplateInput {
  @Field(() => String) featureKey: string;
  @Field(() => String, { description: 'Text with {{variable}} placeholders; {{locale}} is always provided.' }) body: string;
}
