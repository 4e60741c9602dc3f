import type { Principal } from '../platform/auth/verifier.js';
import { header } from '../platform/http/http.js';
import type { Exchange } from '../platform/http/pipeline.js';

/**
 * Headers the gateway passes to every subgraph: the subgraphs verify the same token and tenant
 * again and need the request's locale, write preconditions and Idempotency-Key. The trace and the
 * request id are the gateway's own (the caller's were validated or replaced on the way in).
 */
export const FORWARDED_HEADERS = ['authorization', 'x-tenant-id', 'accept-language', 'if-match', 'idempotency-key'] as const;

/** What every operation the gateway runs knows about the request it runs for. */
export interface GatewayContext {
  principal: Principal;
  requestId: string;
  /** Lower-case header name to value, sent to every subgraph fetch. */
  forward: Record<string, string>;
  /** Set once the Idempotency-Key rules were applied; mutations without it are refused. */
  idempotencyChecked: boolean;
  /**
   * Set for the service's own fixed documents (REST-compat's route table, bounded by each route's
   * limits): the cost limit is for operations written by clients, not by this service.
   */
  trustedOperation: boolean;
}

/** The context of an operation run on behalf of an authenticated exchange. */
export function gatewayContext(exchange: Exchange, options: { trusted: boolean; ifMatch?: string }): GatewayContext {
  if (!exchange.principal || !exchange.trace) throw new Error('An operation needs an authenticated, traced exchange');
  const forward: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS) {
    const value = header(exchange.req, name);
    if (value !== undefined) forward[name] = value;
  }
  if (options.ifMatch !== undefined) forward['if-match'] = options.ifMatch;
  forward.traceparent = exchange.trace.traceparent;
  forward['x-request-id'] = exchange.requestId;
  return {
    principal: exchange.principal,
    requestId: exchange.requestId,
    forward,
    idempotencyChecked: exchange.idempotencyChecked === true,
    trustedOperation: options.trusted,
  };
}
