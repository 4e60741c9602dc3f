import type { EffectClaim } from '../../platform/idempotency/effect.logic.js';

/** Who makes an admin change or acts on a review task, from the request context (context.ts, callerOf). */
export interface AdminCaller {
  tenantId: string;
  subject: string;
  requestId: string;
  traceparent: string;
  /** The request's Idempotency-Key claim: the change records its result under it (keyedTransaction). */
  effect?: EffectClaim;
}
