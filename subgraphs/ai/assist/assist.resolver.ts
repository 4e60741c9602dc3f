import { Arg, Ctx, Mutation, Resolver } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import type { AiContext } from '../context.js';
import { AI_ASSIST } from '../scopes.js';
import { AssistInput, AssistResult } from './assist.type.js';

@Resolver(() => AssistResult)
export class AssistResolver {
  @Mutation(() => AssistResult, {
    description:
      "Runs a feature's prompt template through the routed providers and records its provenance (scope ai.assist). Errors: BAD_USER_INPUT, quota.exceeded (retryAfterSeconds), template.not_found, routing.no_rule, routing.no_provider_for_residency, routing.assessment_required, provider.unavailable (with provenanceId), moderation.unavailable (503, the classifier of a feature that requires moderation could not judge). A blocked request is not an error: status blocked with code moderation.blocked or provider.content_filter.",
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
