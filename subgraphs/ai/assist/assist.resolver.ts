import { Arg, Ctx, Mutation, Resolver } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import type { AiContext } from '../context.js';
import { AI_ASSIST } from '../scopes.js';
import { AssistInput, AssistResult } from './assist.type.js';

@Resolver(() => AssistResult)
export class AssistResolver {
  // Nullable on purpose: a refused assist answers null with its error at its own path, so the other
  // aliases of the same mutation keep the outputs they produced and were charged for (a non-null
  // field would null the whole `data`). docs/ai-gateway.md, "Several assists in one mutation".
  @Mutation(() => AssistResult, {
    nullable: true,
    description:
      "Runs a feature's prompt template through the routed providers and records its provenance (scope ai.assist). Null when refused or failed, with the error at this field's path (other aliases of the mutation keep their answers). Errors: BAD_USER_INPUT, quota.exceeded (retryAfterSeconds), template.not_found, routing.no_rule, routing.no_provider_for_residency, routing.assessment_required, routing.residency_not_allowed (a residency the tenant's mapping does not allow), routing.residency_unavailable (503, no configured provider serves the residency the tenant is mapped to), provider.unavailable (with provenanceId), moderation.unavailable (503, the classifier of a feature that requires moderation could not judge). A blocked request is not an error: status blocked with code moderation.blocked or provider.content_filter.",
  })
  async assist(@Arg('input', () => AssistInput) input: AssistInput, @Ctx() ctx: AiContext): Promise<AssistResult> {
    requireAnyScope(ctx.principal, AI_ASSIST);
    return ctx.services.assistPipeline.run(
      {
        tenantId: ctx.tenantId,
        subject: ctx.principal.subject,
        requestId: ctx.requestId,
        traceparent: ctx.traceparent,
        locales: ctx.locales,
        logger: ctx.logger,
        effect: ctx.effect,
      },
      input,
    );
  }
}
