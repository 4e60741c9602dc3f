import { AppError, statusForCode, type ErrorCode } from '../platform/errors/errors.js';

export interface GraphQLErrorLike {
  message: string;
  extensions?: Record<string, unknown>;
}

/**
 * Members of `extensions` that describe the transport, not the problem, or must never leave
 * (`response` is where Apollo Gateway puts a subgraph's URL and body).
 */
const INTERNAL_EXTENSIONS = new Set([
  'code',
  'status',
  'serviceName',
  'stacktrace',
  'exception',
  'http',
  'retryAfterSeconds',
  'response',
]);

const DEFAULT_RETRY_AFTER_SECONDS = 1;

/**
 * Maps the first GraphQL error of a REST route's operation to the problem the REST door answers,
 * with the same code as the GraphQL door. A validation error can only mean the supergraph lacks
 * the operation the route was written for (the route's document is fixed and its variables were
 * validated), which is 501, not the caller's fault and not a crash.
 */
export function errorFromGraphQL(errors: ReadonlyArray<GraphQLErrorLike>): AppError {
  const [error] = errors;
  const extensions = error?.extensions ?? {};
  // Relayed as the graph gave it: the subgraphs throw only codes of the registry (ErrorCode).
  const code = (typeof extensions.code === 'string' ? extensions.code : 'INTERNAL_SERVER_ERROR') as ErrorCode;
  if (code === 'GRAPHQL_VALIDATION_FAILED' || code === 'GRAPHQL_PARSE_FAILED') {
    return new AppError('request.not_implemented', 'This route is not available yet: the graph does not offer its operation', {
      status: 501,
    });
  }
  const declared =
    typeof extensions.status === 'number' && extensions.status >= 400 && extensions.status <= 599 ? extensions.status : undefined;
  const status = declared ?? statusForCode(code);
  const details: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(extensions)) if (!INTERNAL_EXTENSIONS.has(name)) details[name] = value;
  const headers: Record<string, string> = {};
  const retryAfter = extensions.retryAfterSeconds;
  if (typeof retryAfter === 'number' && Number.isFinite(retryAfter) && retryAfter >= 0) {
    headers['retry-after'] = String(Math.ceil(retryAfter));
    details.retryAfterSeconds = retryAfter;
  } else if (status === 429 || status === 503) {
    // Every 429 and 503 of the REST door says when to retry (the OpenAPI document promises it).
    headers['retry-after'] = String(DEFAULT_RETRY_AFTER_SECONDS);
  }
  // A server error without a status of ours did not come from an AppError: its text may be internal.
  const message =
    status >= 500 && declared === undefined ? 'The request could not be completed' : (error?.message ?? 'Request failed');
  return new AppError(status >= 500 && declared === undefined ? 'INTERNAL_SERVER_ERROR' : code, message, {
    status,
    details,
    headers,
  });
}
