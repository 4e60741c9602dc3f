import type { IncomingMessage } from 'node:http';
import type { Principal } from '../../platform/auth/verifier.js';
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
  logger: Logger;
}

export function requestInfo(req: IncomingMessage, principal: Principal, requestId: string, logger: Logger): RequestInfo {
  const trace = continueTrace(header(req, 'traceparent'));
  return {
    principal,
    tenantId: principal.tenantId,
    requestId,
    traceparent: trace.traceparent,
    locales: parseAcceptLanguage(header(req, 'accept-language')),
    ifMatch: header(req, 'if-match'),
    idempotencyKey: header(req, 'idempotency-key'),
    logger: logger.child({ requestId, traceId: trace.traceId, tenantId: principal.tenantId }),
  };
}
