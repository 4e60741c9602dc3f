import { Directive, Field, ID, Int, ObjectType } from 'type-graphql';
import { GraphQLJSON, GraphQLJSONObject } from '../../../platform/graphql/scalars.js';

@ObjectType({ description: 'One call to a provider while serving a request.' })
export class ProviderAttempt {
  @Field(() => String) provider: string;
  @Field(() => String) model: string;
  @Field(() => String, { description: 'ok, error, timeout, rate_limited, skipped_open_circuit, ...' }) outcome: string;
  @Field(() => Int) latencyMs: number;
  @Field(() => String, { nullable: true }) errorCode?: string | null;
}

@Directive('@key(fields: "provenanceId")')
@ObjectType({
  description:
    'The provenance record of one AI-assisted output: what produced it, from which template and rule, and its review. Stores hashes, not patient text.',
})
export class AIProvenance {
  @Field(() => ID) provenanceId: string;
  @Field(() => String) tenantId: string;
  @Field(() => String) actorType: string;
  @Field(() => String) actorId: string;
  @Field(() => String) featureKey: string;
  @Field(() => String, { description: 'completed, pending_review, blocked, failed, rejected.' }) status: string;
  @Field(() => String, { description: 'live or shadow.' }) mode: string;
  @Field(() => String, { nullable: true }) templateId: string | null;
  @Field(() => Int, { nullable: true }) templateVersion: number | null;
  @Field(() => String, { nullable: true }) templateHash: string | null;
  @Field(() => String, { nullable: true }) renderedPromptHash: string | null;
  @Field(() => String, { nullable: true }) ruleId: string | null;
  @Field(() => Int, { nullable: true }) ruleVersion: number | null;
  @Field(() => String, { nullable: true }) provider: string | null;
  @Field(() => String, { nullable: true }) model: string | null;
  @Field(() => [ProviderAttempt]) attempts: ProviderAttempt[];
  @Field(() => String, { nullable: true }) outputHash: string | null;
  @Field(() => GraphQLJSON, { nullable: true }) moderation: unknown;
  @Field(() => String, { nullable: true }) reviewState: string | null;
  @Field(() => GraphQLJSONObject, { nullable: true }) review: Record<string, unknown> | null;
  @Field(() => String, { nullable: true }) facilityId: string | null;
  @Field(() => String, { nullable: true }) specialty: string | null;
  @Field(() => String, { nullable: true }) subjectRef: string | null;
  @Field(() => String, { nullable: true }) residency: string | null;
  @Field(() => Boolean, { description: 'Imported pre-gateway content (spec: legacy_backfill).' }) legacyBackfill: boolean;
  @Field(() => String, { nullable: true }) errorCode: string | null;
  @Field(() => Int, { nullable: true }) latencyMs: number | null;
  @Field(() => Date) createdAt: Date;
  @Field(() => Date, { nullable: true }) completedAt: Date | null;
}
