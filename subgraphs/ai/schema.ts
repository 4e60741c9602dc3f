import type { GraphQLSchema } from 'graphql';
import { buildFederatedSchema } from '../../platform/graphql/federation.js';
import { keyedMutation } from '../shared/keyed-mutation.js';
import { AssessmentResolver } from './assessment/assessment.resolver.js';
import { AssistResolver } from './assist/assist.resolver.js';
import { BackfillResolver } from './backfill/backfill.resolver.js';
import { FeatureFlagResolver } from './flags/feature-flag.resolver.js';
import { KeyRetentionResolver } from './keys/key-retention.resolver.js';
import { QuotaSettingsResolver } from './quota/quota-settings.resolver.js';
import { ReviewResolver } from './review/review.resolver.js';
import { ShadowResolver } from './shadow/shadow.resolver.js';
import type { AiContext } from './context.js';
import {
  Course,
  CourseProvenanceResolver,
  ProvenanceResolver,
  resolveProvenanceReference,
} from './provenance/provenance.resolver.js';
import { ProvenanceReceiptResolver, ReceiptResolver } from './provenance/receipts/receipt.resolver.js';
import { HitlPolicyResolver, resolveHitlPolicyReference } from './review/hitl-policy.resolver.js';
import { GlobalRoutingRuleResolver } from './routing/global-rule.resolver.js';
import { resolveRoutingRuleReference, RoutingRuleResolver } from './routing/routing-rule.resolver.js';
import { PromptTemplateResolver, resolvePromptTemplateReference } from './templates/prompt-template.resolver.js';

export const aiResolvers = [
  AssistResolver,
  RoutingRuleResolver,
  GlobalRoutingRuleResolver,
  PromptTemplateResolver,
  ProvenanceResolver,
  CourseProvenanceResolver,
  ProvenanceReceiptResolver,
  ReceiptResolver,
  HitlPolicyResolver,
  ReviewResolver,
  FeatureFlagResolver,
  AssessmentResolver,
  KeyRetentionResolver,
  ShadowResolver,
  BackfillResolver,
  QuotaSettingsResolver,
] as const;

export function buildAiSchema(): Promise<GraphQLSchema> {
  return buildFederatedSchema(
    { resolvers: [...aiResolvers], orphanedTypes: [Course] },
    {
      ProviderRoutingRule: {
        __resolveReference: (ref: { ruleId: string }, ctx: AiContext) => resolveRoutingRuleReference(ref, ctx),
      },
      PromptTemplate: {
        __resolveReference: (ref: { templateId: string }, ctx: AiContext) => resolvePromptTemplateReference(ref, ctx),
      },
      AIProvenance: {
        __resolveReference: (ref: { provenanceId: string }, ctx: AiContext) => resolveProvenanceReference(ref, ctx),
      },
      HITLPolicy: { __resolveReference: (ref: { policyId: string }, ctx: AiContext) => resolveHitlPolicyReference(ref, ctx) },
      // The course itself lives in the catalog; here it only carries the key.
      Course: { __resolveReference: (ref: { courseId: string }) => ({ courseId: ref.courseId }) },
    },
    keyedMutation,
  );
}
