import { requireAnyScope } from '../../platform/auth/verifier.js';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db/database.js';
import type { RequestInfo } from '../shared/request-context.js';
import type { AdminCaller } from './admin-caller.js';
import { AI_ADMIN, PLATFORM_ADMIN } from './scopes.js';
import type { AiServices } from './services.js';

export interface AiContext extends RequestInfo {
  db: Db;
  clock: Clock;
  services: AiServices;
}

/** Who calls, for a use case: the tenant, the token subject, the request's ids and its Idempotency-Key claim. */
export function callerOf(ctx: AiContext): AdminCaller {
  return {
    tenantId: ctx.tenantId,
    subject: ctx.principal.subject,
    requestId: ctx.requestId,
    traceparent: ctx.traceparent,
    effect: ctx.effect,
  };
}

export function adminCaller(ctx: AiContext): AdminCaller {
  requireAnyScope(ctx.principal, AI_ADMIN);
  return callerOf(ctx);
}

/** A platform operator acting on the global configuration (scope platform.admin). */
export function platformCaller(ctx: AiContext): AdminCaller {
  requireAnyScope(ctx.principal, PLATFORM_ADMIN);
  return callerOf(ctx);
}
