import Negotiator from 'negotiator';
import { answerableError } from '../../errors/errors.js';
import type { Logger } from '../../observability/logger.js';
import { toProblem } from '../http.js';
import { jsonReply, reply, type ErrorFormat, type Reply, type Stage } from '../pipeline.js';

/**
 * An error as the client of an endpoint reads it: GraphQL clients get `{ errors: [...] }` with the
 * code in `extensions.code`, everyone else RFC 9457 problem+json with a `code` member. Anything that
 * is not an AppError is a 500 whose message never leaves the process (it is logged).
 */
export function errorReply(error: unknown, format: ErrorFormat, logger?: Logger, accept?: string): Reply {
  const { problem, headers } = toProblem(error, logger);
  if (format === 'graphql') {
    const details = answerableError(error)?.details ?? {};
    const body = {
      errors: [{ message: problem.detail, extensions: { code: problem.code, status: problem.status, ...details } }],
    };
    return jsonReply(problem.status, body, { ...headers, 'content-type': graphqlErrorMediaType(accept) });
  }
  return reply(problem.status, JSON.stringify(problem), {
    'content-type': 'application/problem+json; charset=utf-8',
    ...headers,
  });
}

/**
 * Turns whatever a later stage throws into the reply its endpoint's clients understand. Requests no
 * endpoint took are answered as problems, except under /graphql where a GraphQL client is talking.
 */
export function errorReplies(logger: Logger): Stage {
  return async (exchange, next) => {
    try {
      return await next(exchange);
    } catch (error) {
      const format = exchange.endpoint?.errors ?? (exchange.url.pathname === '/graphql' ? 'graphql' : 'problem');
      return errorReply(error, format, logger, exchange.req.headers.accept);
    }
  };
}

const GRAPHQL_RESPONSE = 'application/graphql-response+json; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The media type of a GraphQL error reply, negotiated as Apollo Server negotiates its answers. A
 * client that accepts application/graphql-response+json (Apollo Client 4, graphql-http) reads a
 * non-2xx reply in that type as GraphQL errors with their codes (GraphQL over HTTP, §7.1.2); in
 * application/json it sees only an HTTP failure (issue #26: 401 and 403 reached Apollo Client as a
 * ServerError with the code buried in its text).
 */
export function graphqlErrorMediaType(accept: string | undefined): string {
  if (!accept) return JSON_TYPE;
  return new Negotiator({ headers: { accept } }).mediaType([JSON_TYPE, GRAPHQL_RESPONSE]) === GRAPHQL_RESPONSE
    ? GRAPHQL_RESPONSE
    : JSON_TYPE;
}
