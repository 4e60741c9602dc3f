import type { IncomingMessage } from 'node:http';
import type { Principal } from '../../platform/auth/verifier.js';
import type { EffectClaim } from '../../platform/idempotency/effect.logic.js';
import { header } from '../../platform/http/http.js';
import { parseAcceptLanguage } from '../../platform/locale.logic.js';
import type { Logger } from '../../platform/logger.js';
import { continueTrace } from '../../platform/tracing.js';

/** What every subgraph resolver knows about the request, whatever the subgraph. */
export interface RequestInfo {
  principal: Principal;
  tenantId: string;
  requestId: string;
  traceparent: string;
  locales: string[];
  ifMatch?: string;
  idempotencyKey?: string;
  /** How long a keyed mutation's effect row answers retries (IDEMPOTENCY_TTL_SECONDS). */
  effectTtlSeconds: number;
  /** The running keyed mutation's claim (set by `keyedMutation`); services pass it to `keyedTransaction`. */
  effect?: EffectClaim;
  logger: Logger;
}

export function requestInfo(
  req: IncomingMessage,
  principal: Principal,
  requestId: string,
  logger: Logger,
  effectTtlSeconds: number,
): RequestInfo {
  const trace = continueTrace(header(req, 'traceparent'));
  return {
    principal,
    tenantId: principal.tenantId,
    requestId,
    traceparent: trace.traceparent,
    locales: parseAcceptLanguage(header(req, 'accept-language')),
    ifMatch: header(req, 'if-match'),
    idempotencyKey: header(req, 'idempotency-key'),
    effectTtlSeconds,
    logger: logger.child({ requestId, traceId: trace.traceId, tenantId: principal.tenantId }),
  };
}
