import { isAppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { toProblem } from '../http.js';
import { jsonReply, reply, type ErrorFormat, type Reply, type Stage } from '../pipeline.js';

/**
 * An error as the client of an endpoint reads it: GraphQL clients get `{ errors: [...] }` with the
 * code in `extensions.code`, everyone else RFC 9457 problem+json with a `code` member. Anything that
 * is not an AppError is a 500 whose message never leaves the process (it is logged).
 */
export function errorReply(error: unknown, format: ErrorFormat, logger?: Logger): Reply {
  const { problem, headers } = toProblem(error, logger);
  if (format === 'graphql') {
    const details = isAppError(error) ? (error.details ?? {}) : {};
    return jsonReply(
      problem.status,
      { errors: [{ message: problem.detail, extensions: { code: problem.code, status: problem.status, ...details } }] },
      headers,
    );
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
      return errorReply(error, format, logger);
    }
  };
}
