import { Directive, Field, ID, Int, ObjectType } from 'type-graphql';

@ObjectType({ simpleResolvers: true, description: 'A model provider and model to call.' })
export class ProviderTarget {
  @Field(() => String, { description: 'mock, openai-compatible, ...' }) provider: string;
  @Field(() => String) model: string;
}

@ObjectType({ simpleResolvers: true, description: 'One immutable version of a routing rule.' })
export class RoutingRuleVersion {
  @Field(() => Int) version: number;
  @Field(() => ProviderTarget) primary: ProviderTarget;
  @Field(() => [ProviderTarget], { description: 'Tried in order when the primary fails.' }) fallbacks: ProviderTarget[];
  @Field(() => String) createdBy: string;
  @Field(() => Date) createdAt: Date;
}

@Directive('@key(fields: "ruleId")')
@ObjectType({
  simpleResolvers: true,
  description: 'Routes a feature to model providers. Global (tenantId null) or a tenant override; versioned.',
})
export class ProviderRoutingRule {
  @Field(() => ID) ruleId: string;
  @Field(() => String, { nullable: true, description: 'null for a global rule.' }) tenantId: string | null;
  @Field(() => String, { nullable: true, description: 'null matches every feature.' }) featureKey: string | null;
  @Field(() => String, { nullable: true, description: 'Required data residency (e.g. AF, ON_PREM); null for any.' }) residency:
    string | null;
  @Field(() => Int, { nullable: true, description: 'The version in force; null when deactivated.' }) activeVersion: number | null;
  @Field(() => [RoutingRuleVersion]) versions: RoutingRuleVersion[];
  @Field(() => String, {
    description:
      'Entity tag of the rule: send it as If-Match to update it or activate a version (missing: 428 request.precondition_required, stale: 412 request.precondition_failed).',
  })
  etag: string;
}
