/**
 * What one attempt to fetch from a subgraph replica came back with, decided once, where the answer
 * arrives: a GraphQL response (whatever its HTTP status: a subgraph answers its own coded errors
 * with 4xx), or the replica could not serve — it was unreachable, did not answer in time, answered
 * 5xx (a balancer's own page, a draining process) or answered something that is not GraphQL.
 * Only the second kind is `subgraph.unavailable`; it never reaches a client as the client's fault.
 */
export interface GraphQLAnswer {
  data?: Record<string, unknown> | null;
  errors?: ReadonlyArray<{ message: string; path?: ReadonlyArray<string | number>; extensions?: Record<string, unknown> }>;
  extensions?: Record<string, unknown>;
}

export type AttemptOutcome =
  | { kind: 'answered'; status: number; answer: GraphQLAnswer }
  | {
      kind: 'unavailable';
      /** For the log and the span: never sent to a client. */
      reason: string;
      /** What answered, cut short (a balancer's page, say): for the log only. */
      excerpt?: string;
      /**
       * Whether any byte of the request may have reached the replica. A request that may have
       * been read must not be sent again unless it is a read.
       */
      sent: boolean;
    };

const EXCERPT_CHARS = 300;

/** An HTTP answer of a replica, read whole. */
export function classifyAnswer(status: number, body: string): AttemptOutcome {
  if (status >= 500) {
    return { kind: 'unavailable', reason: `answered HTTP ${status}`, excerpt: excerpt(body), sent: true };
  }
  const answer = graphqlAnswer(body);
  if (answer) return { kind: 'answered', status, answer };
  return {
    kind: 'unavailable',
    reason: `answered HTTP ${status} with a body that is not a GraphQL response`,
    excerpt: excerpt(body),
    sent: true,
  };
}

/**
 * Error codes that mean the connection was never made, so the request was never written: the
 * same request may go to another replica whatever it does. Anything else (a reset, a socket closed
 * mid-way, a timeout) may have happened after the replica read the request.
 */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

export interface TransportFailure {
  /** The error's `code`, or its cause's (undici and Node put it in either). */
  code?: string;
  /** The attempt's own deadline ended it. */
  timedOut: boolean;
  timeoutMs: number;
}

export function classifyTransportFailure(failure: TransportFailure): AttemptOutcome {
  if (failure.timedOut) {
    return { kind: 'unavailable', reason: `no answer within ${failure.timeoutMs} ms`, sent: true };
  }
  const code = failure.code ?? 'unknown error';
  return {
    kind: 'unavailable',
    reason: `connection failed (${code})`,
    sent: !NOT_SENT_CODES.has(code),
  };
}

/**
 * Whether a failed attempt may be made again on another replica. A read may (a query changes
 * nothing, so running it twice is harmless). A write only when it was never sent: a mutation
 * that may have reached a subgraph — a 5xx, a reset, a timeout — may have had its effect, and
 * sending it again could repeat it. Its client holds an Idempotency-Key (the gateway requires
 * one on every mutation) and may retry with it after the 503: that retry is exactly-once.
 */
export function mayRetryElsewhere(outcome: AttemptOutcome, read: boolean): boolean {
  return outcome.kind === 'unavailable' && (read || !outcome.sent);
}

function graphqlAnswer(body: string): GraphQLAnswer | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const { data, errors } = parsed as Record<string, unknown>;
  const hasData = data === null || (typeof data === 'object' && data !== undefined && !Array.isArray(data));
  const hasErrors = Array.isArray(errors) && errors.length > 0;
  if (!hasData && !hasErrors) return undefined;
  if (errors !== undefined && !Array.isArray(errors)) return undefined;
  return parsed as GraphQLAnswer;
}

function excerpt(body: string): string {
  const flat = body.replace(/\s+/g, ' ').trim();
  return flat.length > EXCERPT_CHARS ? `${flat.slice(0, EXCERPT_CHARS)}…` : flat;
}
