import type { Principal } from '../../platform/auth/verifier.js';
import type { EffectClaim } from '../../platform/idempotency/effect.logic.js';
import type { SubgraphCaller } from '../../platform/graphql/subgraph-server.js';
import { parseAcceptLanguage } from '../../platform/text/locale.logic.js';
import { lazyChild, type Logger } from '../../platform/observability/logger.js';

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

/** What the door (or the in-process gateway) established about the caller (ids, trace), for resolvers. */
export function requestInfo(caller: SubgraphCaller, logger: Logger, effectTtlSeconds: number): RequestInfo {
  const { principal, trace, requestId } = caller;
  return {
    principal,
    tenantId: principal.tenantId,
    requestId,
    traceparent: trace.traceparent,
    locales: parseAcceptLanguage(caller.header('accept-language')),
    ifMatch: caller.header('if-match'),
    idempotencyKey: caller.header('idempotency-key'),
    effectTtlSeconds,
    logger: lazyChild(logger, { requestId, traceId: trace.traceId, tenantId: principal.tenantId }),
  };
}
