import type { GraphQLFormattedError } from 'graphql';
import { GraphQLError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { databaseUnreachable } from '../db/unreachable.js';
import { dependencyUnavailable, isAppError, type AppError } from '../errors.js';
import type { Logger } from '../logger.js';
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
 * `extensions.code` (+ `status`); a database that cannot be reached is 503 `dependency.unavailable`
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
    const code = formatted.extensions?.code;
    if (code === 'GRAPHQL_PARSE_FAILED' && isTokenLimitError(original)) {
      const max = Number(/more th(?:an|at) (\d+) tokens/.exec((original as Error).message)?.[1]);
      return appErrorFormatted(limitError('tokens', undefined, max), formatted);
    }
    if (typeof code === 'string' && CLIENT_CODES.has(code)) return withoutStack(formatted);
    // Errors forwarded by the gateway from a subgraph were already formatted there. The gateway
    // unwraps to the subgraph's plain JSON error, so its class cannot tell; serviceName can.
    if (typeof code === 'string' && formatted.extensions?.serviceName) {
      return withoutStack(formatted);
    }
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
    if (databaseUnreachable(original)) {
      logger.warn({ err: (original as Error).message }, 'database unreachable');
      return appErrorFormatted(dependencyUnavailable('the database'), formatted);
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

/** Apollo adds `stacktrace` outside production; a response never carries one. */
function withoutStack(formatted: GraphQLFormattedError): GraphQLFormattedError {
  if (!formatted.extensions || !('stacktrace' in formatted.extensions)) return formatted;
  const { stacktrace: _stacktrace, ...extensions } = formatted.extensions;
  return { ...formatted, extensions };
}
