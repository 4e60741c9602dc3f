import type { GraphQLFieldResolver } from 'graphql';
import { effectClaim, type EffectClaim } from '../../platform/idempotency/effect.logic.js';
import { parseIdempotencyKey } from '../../platform/idempotency/idempotency.logic.js';
import type { RequestInfo } from './request-context.js';

/**
 * Mutations whose repetition has no further effect, so they record no effect row. Each names why.
 */
export const EFFECT_EXEMPT_MUTATIONS: Readonly<Record<string, string>> = {
  // Replaying moves the matching dead letters out of the DLQ; a second run finds none of them, and
  // the handlers dedupe by event id in their inbox. Its effect is on NATS, outside any transaction.
  replayDeadLetters: 'the DLQ is drained by the first run and handlers dedupe by event id',
};

/**
 * Wraps each root Mutation resolver: when the request carries an Idempotency-Key, the field gets
 * an effect claim (scoped by tenant, caller, field and alias) on `ctx.effect` while it runs, and the
 * transaction it writes in records its result under it (`keyedTransaction`). Root mutation fields
 * run one after another (GraphQL spec, "Normal and Serial Execution"), so one slot on the context
 * is enough. A keyed mutation that succeeds without recording is reported, not silently accepted.
 */
export function keyedMutation(resolve: GraphQLFieldResolver<unknown, unknown>): GraphQLFieldResolver<unknown, unknown> {
  return async (root, args, context, info) => {
    const ctx = context as RequestInfo;
    if (ctx.idempotencyKey === undefined) return resolve(root, args, context, info);
    const claim: EffectClaim = effectClaim(
      {
        tenantId: ctx.tenantId,
        subject: ctx.principal.subject,
        field: info.fieldName,
        alias: info.path.key as string,
        args,
        idempotencyKey: parseIdempotencyKey(ctx.idempotencyKey, 'mutations'),
      },
      ctx.effectTtlSeconds,
    );
    ctx.effect = claim;
    try {
      const result = await resolve(root, args, context, info);
      if (!claim.consumed && !(info.fieldName in EFFECT_EXEMPT_MUTATIONS)) {
        ctx.logger.error(
          { code: 'idempotency.effect_unrecorded', field: info.fieldName },
          'a keyed mutation completed without recording its effect; a retry after a crash could run it again',
        );
      }
      return result;
    } finally {
      ctx.effect = undefined;
    }
  };
}
