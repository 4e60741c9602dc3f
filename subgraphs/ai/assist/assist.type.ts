import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { GraphQLJSONObject } from '../../../platform/graphql/scalars.js';

@InputType({ description: 'Where the output will be used; drives review queues and provenance.' })
export class AssistContextInput {
  @Field(() => String) facilityId: string;
  @Field(() => String) specialty: string;
  @Field(() => String, {
    nullable: true,
    description: 'Opaque reference to the subject (e.g. a chart or course id); stored as given.',
  })
  subjectRef?: string | null;
}

@InputType()
export class AssistInput {
  @Field(() => String, { description: 'e.g. patient_chart.note_summary' }) featureKey: string;
  @Field(() => GraphQLJSONObject, {
    description:
      'Template variables. Unknown ones are ignored; a missing one is BAD_USER_INPUT. Names starting with __ are gateway directives (__mock drives the mock provider when fault injection is enabled).',
  })
  variables: Record<string, unknown>;
  @Field(() => String, { nullable: true, description: 'Fills {{locale}}; defaults to Accept-Language, then en.' }) locale?:
    string | null;
  @Field(() => AssistContextInput) context: AssistContextInput;
  @Field(() => String, {
    nullable: true,
    description: 'Required data residency (e.g. AF, ON_PREM): never served from elsewhere.',
  })
  residency?: string | null;
  @Field(() => String, {
    nullable: true,
    description: 'live (default) or shadow: a shadow call is recorded but its text is never returned.',
  })
  mode?: string | null;
}

@ObjectType({ simpleResolvers: true })
export class AssistTemplateRef {
  @Field(() => ID) templateId: string;
  @Field(() => Int) version: number;
  @Field(() => String) hash: string;
}

@ObjectType({ simpleResolvers: true })
export class AssistTimings {
  @Field(() => Int, { description: 'Wall time in the gateway, provider included.' }) totalMs: number;
  @Field(() => Int, { nullable: true, description: 'Time inside provider calls (all attempts).' }) providerMs: number | null;
  @Field(() => Int, { nullable: true, description: 'Time before the first provider call (quota, template, routing).' }) queueMs:
    number | null;
}

@ObjectType({ simpleResolvers: true })
export class AssistResult {
  @Field(() => ID, { description: 'Store it with the output: the key to its provenance record.' }) provenanceId: string;
  @Field(() => String, { description: 'completed, pending_review or blocked.' }) status: string;
  @Field(() => String, { nullable: true, description: 'The output, only when released (status completed, mode live).' }) text:
    string | null;
  @Field(() => String, { nullable: true }) provider: string | null;
  @Field(() => String, { nullable: true }) model: string | null;
  @Field(() => AssistTemplateRef, { nullable: true }) template: AssistTemplateRef | null;
  @Field(() => AssistTimings) timings: AssistTimings;
  @Field(() => String, { nullable: true, description: 'Human review state when the feature needs review.' }) reviewState:
    string | null;
  @Field(() => String) mode: string;
  @Field(() => String, { nullable: true, description: 'sha256 of the output (also for withheld text).' }) outputHash:
    string | null;
  @Field(() => String, {
    nullable: true,
    description:
      'Why no text was released when status is blocked: moderation.blocked (the classifier) or provider.content_filter.',
  })
  code: string | null;
  @Field(() => [String], {
    nullable: true,
    description:
      'Categories the moderation classifier flagged (self_harm, violence, sexual, sexual_minors, phi, ...); never the text.',
  })
  moderationCategories: string[] | null;
  @Field(() => ID, {
    nullable: true,
    description:
      'The review task of an output held for review (status pending_review); the decision arrives as ai.review.completed.v1.',
  })
  reviewTaskId: string | null;
}
