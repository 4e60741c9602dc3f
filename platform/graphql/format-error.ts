import type { GraphQLFormattedError } from 'graphql';
import { GraphQLError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { ERROR_DETAIL_MEMBERS } from '../errors/error-codes.js';
import { answerableError, isAppError, isKnownErrorCode, type AppError } from '../errors/errors.js';
import type { Logger } from '../observability/logger.js';
import { isTokenLimitError, limitError } from './query-limits.js';

/** Codes Apollo and graphql-js assign themselves; they describe client mistakes and pass through. */
const CLIENT_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'OPERATION_RESOLUTION_FAILURE',
  'BAD_REQUEST',
]);

/**
 * Maps errors once at the GraphQL boundary: an AppError keeps its message and stable code in
 * `extensions.code` (+ `status`); a subgraph's error at the gateway keeps them only when its code
 * is one of ours (subgraphErrorFormatted); a database that cannot be reached is 503 `dependency.unavailable`
 * (retry shortly); anything else — an uncoded GraphQLError included, whatever its origin — becomes
 * INTERNAL_SERVER_ERROR with no detail (logged). Only errors known to be the caller's are 4xx.
 */
export function formatGraphQLError(logger: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const unwrapped = unwrapResolverError(error);
    // An AppError thrown by a plugin hook or a validation rule arrives wrapped in a GraphQLError.
    const original =
      unwrapped instanceof GraphQLError && isAppError(unwrapped.originalError) ? unwrapped.originalError : unwrapped;
    if (isAppError(original)) return appErrorFormatted(original, formatted);
    // An error a subgraph answered, forwarded by the gateway: Apollo Gateway unwraps it to the
    // subgraph's plain JSON error (its class cannot tell) and adds serviceName (which can).
    if (typeof formatted.extensions?.serviceName === 'string') return subgraphErrorFormatted(formatted, logger);
    const code = formatted.extensions?.code;
    if (code === 'GRAPHQL_PARSE_FAILED' && isTokenLimitError(original)) {
      const max = Number(/more th(?:an|at) (\d+) tokens/.exec((original as Error).message)?.[1]);
      return appErrorFormatted(limitError('tokens', undefined, max), formatted);
    }
    if (typeof code === 'string' && CLIENT_CODES.has(code)) return formatted;
    if (declaredClientError(original)) {
      return { message: formatted.message, locations: formatted.locations, extensions: { code: 'BAD_USER_INPUT' } };
    }
    if (isArgumentCoercionError(original)) {
      return {
        message: formatted.message,
        path: formatted.path,
        locations: formatted.locations,
        extensions: { code: 'BAD_USER_INPUT' },
      };
    }
    const unreachable = answerableError(original);
    if (unreachable) {
      logger.warn({ err: (original as Error).message }, 'database unreachable');
      return appErrorFormatted(unreachable, formatted);
    }
    if (isUnstorableText(original)) {
      return {
        message: 'A text value contains a character the database cannot store (e.g. NUL)',
        path: formatted.path,
        locations: formatted.locations,
        extensions: { code: 'BAD_USER_INPUT', status: 400 },
      };
    }
    logger.error({ err: original }, 'unhandled GraphQL error');
    return { message: 'Internal server error', path: formatted.path, extensions: { code: 'INTERNAL_SERVER_ERROR' } };
  };
}

/**
 * graphql-js coerces an argument's literal or variable value while executing a field and throws
 * an uncoded GraphQLError when it cannot (a null for a non-null argument whose variable has a
 * default, say): the caller's mistake. It is recognised by graphql-js's own messages
 * (execution/values.js), as Apollo Server recognises its variable coercion errors; an uncoded
 * error that says anything else is not taken for the client's fault.
 */
const ARGUMENT_COERCION =
  /^Argument "[^"]+" (?:of required type .* was not provided|of non-null type .* must not be null|has invalid value )/;

function isArgumentCoercionError(error: unknown): boolean {
  return (
    error instanceof GraphQLError &&
    error.extensions?.code === undefined &&
    !error.originalError &&
    ARGUMENT_COERCION.test(error.message)
  );
}

/**
 * Apollo Server raises a few request errors without a code but with the HTTP status it answers
 * them with (a persisted query whose hash does not match its text: 400). It judged them the
 * client's; they keep their message and BAD_USER_INPUT, as before.
 */
function declaredClientError(error: unknown): boolean {
  if (!(error instanceof GraphQLError) || error.extensions?.code !== undefined || error.originalError) return false;
  const status = (error.extensions?.http as { status?: unknown } | undefined)?.status;
  return typeof status === 'number' && status >= 400 && status < 500;
}

function appErrorFormatted(error: AppError, formatted: GraphQLFormattedError): GraphQLFormattedError {
  return {
    message: error.message,
    path: formatted.path,
    locations: formatted.locations,
    extensions: { code: error.code, status: error.status, ...(error.details ?? {}) },
  };
}

/**
 * Postgres refuses text it cannot store — a NUL character (22021) or one outside the encoding
 * (22P05) — wherever an unvalidated string reaches a query. That is the caller's input, not our
 * failure: 400, not 500.
 */
function isUnstorableText(error: unknown): boolean {
  const cause = (error as { meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } } } | null)?.meta
    ?.driverAdapterError?.cause;
  return cause?.originalCode === '22021' || cause?.originalCode === '22P05';
}

/** What a subgraph error may keep of its extensions: the registry's members and the gateway's own. */
const SUBGRAPH_ERROR_MEMBERS = new Set<string>(['code', 'status', 'serviceName', ...ERROR_DETAIL_MEMBERS]);

/**
 * A subgraph's error at the gateway. One of our stable codes was made for clients at the
 * subgraph's own boundary: it keeps its message and the registry's members of its extensions,
 * nothing else (not `exception`, `stacktrace` or a library's own members). Anything else — an
 * uncoded error (Apollo Gateway's DOWNSTREAM_SERVICE_ERROR), a code we do not know, or
 * INTERNAL_SERVER_ERROR whatever its text — may carry a subgraph's internals (a database URL, a
 * stack, a secret): it is logged with the request's id and answered with a fixed message, as the
 * REST door answers it.
 */
function subgraphErrorFormatted(formatted: GraphQLFormattedError, logger: Logger): GraphQLFormattedError {
  const extensions = formatted.extensions ?? {};
  const { code, serviceName } = extensions;
  if (typeof code === 'string' && code !== 'INTERNAL_SERVER_ERROR' && isKnownErrorCode(code)) {
    const kept = Object.fromEntries(Object.entries(extensions).filter(([name]) => SUBGRAPH_ERROR_MEMBERS.has(name)));
    return { message: formatted.message, path: formatted.path, extensions: kept };
  }
  logger.error({ serviceName, subgraphError: { message: formatted.message, extensions } }, 'subgraph error masked');
  return {
    message: 'Internal server error',
    path: formatted.path,
    extensions: { code: 'INTERNAL_SERVER_ERROR', serviceName },
  };
}
