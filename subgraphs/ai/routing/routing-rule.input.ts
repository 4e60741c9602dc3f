import { Field, InputType, Int } from 'type-graphql';

@InputType({ description: 'A provider and model; the endpoint always comes from configuration.' })
export class ProviderTargetInput {
  @Field(() => String, { description: 'mock, openai-compatible, or another configured provider.' }) provider: string;
  @Field(() => String) model: string;
}

@InputType({ description: 'A tenant override: version 1, active at once.' })
export class CreateRoutingRuleInput {
  @Field(() => String, { nullable: true, description: 'null: every feature of the tenant.' }) featureKey?: string | null;
  @Field(() => String, { nullable: true, description: 'Only requests asking for this residency use the rule.' }) residency?:
    string | null;
  @Field(() => ProviderTargetInput) primary: ProviderTargetInput;
  @Field(() => [ProviderTargetInput], { description: 'Tried in order when the primary fails.' }) fallbacks: ProviderTargetInput[];
}

@InputType({ description: 'A new version of the rule, activated at once.' })
export class UpdateRoutingRuleInput {
  @Field(() => ProviderTargetInput) primary: ProviderTargetInput;
  @Field(() => [ProviderTargetInput]) fallbacks: ProviderTargetInput[];
  @Field(() => Int, {
    nullable: true,
    description: 'Optimistic concurrency: fail with request.precondition_failed when the active version differs.',
  })
  expectedActiveVersion?: number | null;
}
