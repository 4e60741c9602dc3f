import { Directive, Field, ID, Int, ObjectType } from 'type-graphql';
import { GraphQLJSON, GraphQLJSONObject } from '../../../platform/graphql/scalars.js';

@ObjectType({ simpleResolvers: true, description: 'One call to a provider while serving a request.' })
export class ProviderAttempt {
  @Field(() => String) provider: string;
  @Field(() => String) model: string;
  @Field(() => Int, {
    nullable: true,
    description: '1 for the first call to this provider, 2 for its first retry; 0 when it was passed over.',
  })
  attempt?: number | null;
  @Field(() => String, {
    description:
      'ok, rate_limited, server_error, timeout, connect_error, malformed_response, bad_request, auth_error, content_filter, not_configured, skipped_open_circuit, skipped_residency, deadline_exceeded.',
  })
  outcome: string;
  @Field(() => Int) latencyMs: number;
  @Field(() => String, { nullable: true }) errorCode?: string | null;
}

@Directive('@key(fields: "provenanceId")')
@ObjectType({
  simpleResolvers: true,
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
  @Field(() => Int, { nullable: true }) inputTokens: number | null;
  @Field(() => Int, { nullable: true }) outputTokens: number | null;
  @Field(() => GraphQLJSON, { nullable: true }) moderation: unknown;
  @Field(() => String, { nullable: true }) reviewState: string | null;
  @Field(() => GraphQLJSONObject, { nullable: true }) review: Record<string, unknown> | null;
  @Field(() => String, { nullable: true }) facilityId: string | null;
  @Field(() => String, { nullable: true }) specialty: string | null;
  @Field(() => String, { nullable: true }) subjectRef: string | null;
  @Field(() => String, { nullable: true }) residency: string | null;
  @Field(() => Boolean, { description: 'Imported pre-gateway content (spec: legacy_backfill).' }) legacyBackfill: boolean;
  @Field(() => Date, { nullable: true, description: 'When output text held for review is purged (only the hashes stay).' })
  heldTextExpiresAt: Date | null;
  @Field(() => String, { nullable: true }) errorCode: string | null;
  @Field(() => Int, { nullable: true, description: 'Total time in the gateway.' }) latencyMs: number | null;
  @Field(() => Int, { nullable: true, description: 'Time spent inside provider calls.' }) providerLatencyMs: number | null;
  @Field(() => Date) createdAt: Date;
  @Field(() => Date, { nullable: true }) completedAt: Date | null;
}
