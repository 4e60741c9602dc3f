import { Arg, Ctx, Mutation, Resolver } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import { AppError } from '../../../platform/errors/errors.js';
import type { CatalogContext } from '../context.js';
import { CATALOG_ADMIN } from '../scopes.js';
import { validateDeadLetterFilter } from './dead-letter.logic.js';
import { DeadLetterFilterInput, DeadLetterReplayResult } from './dead-letter.type.js';
import { replayTenantDeadLetters } from './tenant-dead-letters.js';

@Resolver()
export class DeadLetterResolver {
  @Mutation(() => DeadLetterReplayResult, {
    description:
      "Sends the caller's tenant's matching dead letters back to their original subjects (new message ids, same event ids), oldest first, and removes them from the DLQ. Handlers are idempotent through their inbox, so an event is processed once. Scope catalog.admin.",
  })
  async replayDeadLetters(
    @Arg('filter', () => DeadLetterFilterInput) filter: DeadLetterFilterInput,
    @Ctx() ctx: CatalogContext,
  ): Promise<DeadLetterReplayResult> {
    requireAnyScope(ctx.principal, CATALOG_ADMIN);
    const valid = validateDeadLetterFilter(filter);
    const deadLetters = ctx.services.deadLetters;
    if (!deadLetters) {
      throw new AppError(
        'service.unavailable',
        'Dead-letter replay needs the event bus, and this catalog process runs without one',
        { status: 503 },
      );
    }
    const result = await replayTenantDeadLetters(deadLetters.bus, deadLetters.deadLetterStream, ctx.tenantId, valid);
    ctx.logger.info({ matched: result.matched, replayed: result.replayed, dryRun: result.dryRun }, 'dead letters replayed');
    return result;
  }
}
