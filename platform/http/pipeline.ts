import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../auth/verifier.js';
import type { TraceContext } from '../observability/trace-context.js';

/**
 * One HTTP request as it passes the stages of a server's pipeline. Each stage adds what it
 * establishes (the request id, the trace, the body, the caller) and the later stages read it; the
 * raw request and response stay available for the few stages that need the socket (access log,
 * body reading).
 */
export interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly method: string;
  readonly url: URL;
  /** Set by `requestId()`. */
  requestId: string;
  /** Set by `traceContext()`. */
  trace?: TraceContext;
  /** The endpoint `route()` chose, with the path parameters it matched. */
  endpoint?: Endpoint;
  params: Record<string, string>;
  /** Parsed JSON body, set by `readBody()` for endpoints that take one. */
  body?: unknown;
  /** The verified caller, set by `authenticate()`. */
  principal?: Principal;
  /** The endpoint's keyed write and the request's Idempotency-Key, set by `idempotencyKey()`. */
  keyed?: { write: KeyedWrite; key: string };
  /** Set once the Idempotency-Key rules apply to this request (its key was read and is valid). */
  idempotencyChecked?: boolean;
  /** What the endpoint's `prepare` made of the request (its validated input). */
  input?: unknown;
  /** Headers every reply carries (request id, traceparent, CORS), whatever produced it. */
  readonly replyHeaders: Record<string, string>;
}

/** A complete answer; the pipeline never streams, so a stage can look at (or store) the whole reply. */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
}

export type Handler = (exchange: Exchange) => Promise<Reply>;

/** A stage does its part and calls `next` (or answers itself); it may change what `next` returned. */
export type Stage = (exchange: Exchange, next: Handler) => Promise<Reply>;

/** How errors of an endpoint are written: GraphQL clients read `errors[]`, everyone else problem+json. */
export type ErrorFormat = 'graphql' | 'problem';

/**
 * The Idempotency-Key rule of one request, declared by its endpoint: the key's scope (the operation)
 * and what makes two requests the same, and which outcomes may be replayed.
 */
export interface KeyedWrite {
  /** A stable name of the operation, e.g. `rest:courses.update` or `graphql:CreateRule`. */
  route: string;
  fingerprint: string;
  /** Outcomes that are stored for replay; by default 2xx and the final 4xx (404, 409, 410, 412, 422). */
  storable?: (reply: Reply & { body: string }) => boolean;
  /** Where the rule comes from, for the error that names the missing key ("mutations", "POST, PUT and PATCH requests"). */
  requiredOn: string;
}

/**
 * One thing a server answers: its access rule, whether it takes a JSON body, and its handler. In
 * the order the stages ask: `keyedWrite` (is this request under the Idempotency-Key rule, and what
 * makes two requests the same), `prepare` (validate the input; nothing is stored for a request
 * refused there), then `handle` once the replay check has run.
 */
export interface Endpoint {
  /** The route template, as metrics and logs name it (`/api/v1/courses/{courseId}`). */
  route: string;
  /** `public` endpoints skip authentication and the tenant rule. */
  access: 'public' | 'tenant';
  /** Reads a JSON body (limit, depth, media type) before authentication. */
  body?: boolean;
  errors: ErrorFormat;
  keyedWrite?(exchange: Exchange): KeyedWrite | undefined;
  prepare?(exchange: Exchange): unknown;
  handle(exchange: Exchange): Promise<Reply>;
}

/** What a table of endpoints says about one request. */
export type Resolution =
  | { kind: 'found'; endpoint: Endpoint; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allow: readonly string[] }
  | { kind: 'not_found' };

/** A group of endpoints (operations routes, GraphQL, the REST table) that `route()` asks in turn. */
export interface EndpointTable {
  resolve(exchange: Exchange): Resolution;
}

/**
 * Folds stages around a handler: the first stage is the outermost. Each call is async, so a stage
 * that throws before its first await still rejects (and reaches the error stage) instead of
 * throwing through the server's request listener.
 */
export function pipeline(stages: readonly Stage[], handler: Handler): Handler {
  return stages.reduceRight<Handler>(
    (next, stage) => async (exchange) => stage(exchange, next),
    async (exchange) => handler(exchange),
  );
}

export function reply(status: number, body: string | Buffer, headers: Record<string, string> = {}): Reply {
  return { status, headers, body };
}

export function jsonReply(status: number, value: unknown, headers: Record<string, string> = {}): Reply {
  return reply(status, JSON.stringify(value), { 'content-type': 'application/json; charset=utf-8', ...headers });
}

/** The endpoint a stage after `route()` works for; a stage placed before it is a wiring mistake. */
export function endpointOf(exchange: Exchange): Endpoint {
  if (!exchange.endpoint) throw new Error('This stage must come after route()');
  return exchange.endpoint;
}
