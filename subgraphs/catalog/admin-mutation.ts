import { keyedTransaction } from '../../platform/idempotency/effect-store.js';
import { requireAnyScope } from '../../platform/auth/verifier.js';
import type { CatalogContext } from './context.js';
import { CATALOG_ADMIN } from './scopes.js';
import type { AdminCommandContext } from './use-cases/admin.js';

/**
 * Every catalog mutation: scope `catalog.admin`, then one transaction holding the state change
 * and its outbox rows, so an event exists if and only if its change committed.
 */
export async function runAdminMutation<T>(ctx: CatalogContext, work: (admin: AdminCommandContext) => Promise<T>): Promise<T> {
  requireAnyScope(ctx.principal, CATALOG_ADMIN);
  let emitted = false;
  const result = await keyedTransaction(
    ctx.db,
    ctx.effect,
    (tx) => {
      const events = ctx.services.events.forRequest(tx, { correlationId: ctx.requestId, traceparent: ctx.traceparent });
      return work({
        tx,
        tenantId: ctx.tenantId,
        actor: { type: 'user', id: ctx.principal.subject },
        events: {
          emit: (event) => {
            emitted = true;
            return events.emit(event);
          },
        },
        now: ctx.clock.now(),
        requestId: ctx.requestId,
        gdprZeroingRetentionClasses: ctx.services.gdprZeroingRetentionClasses,
      });
    },
    { timeout: 15_000, maxWait: 10_000 },
  );
  if (emitted) ctx.services.afterEventsCommitted?.();
  return result;
}
