/**
 * Typed errors with stable codes. Every boundary (GraphQL, REST, event consumer) maps an AppError
 * once: GraphQL puts `code` in `extensions.code`, REST in a problem+json `code` member with `status`.
 * Anything that is not an AppError is an internal error and its message never leaves the process.
 */
/**
 * The codes shared across parts, with the HTTP status each one answers. Our own codes are
 * lower-case `area.reason` (the spec's `authz.tenant_not_a_member`); the upper-case ones are
 * GraphQL's and Apollo's standard codes, kept as clients know them. A part's own codes (review.*,
 * keys.*, events.* …) are thrown where they arise with their status, and listed in
 * docs/rest-compat.md ("Errors").
 */
const STATUS_BY_CODE = {
  // GraphQL / Apollo standard codes.
  BAD_USER_INPUT: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  INTERNAL_SERVER_ERROR: 500,
  // The request itself, at any HTTP door.
  'request.not_found': 404,
  'request.method_not_allowed': 405,
  'request.conflict': 409,
  'request.precondition_failed': 412,
  'request.payload_too_large': 413,
  'request.unsupported_media_type': 415,
  'request.unsupported_content_encoding': 415,
  'request.precondition_required': 428,
  // The client went away mid-request (nginx's 499): never seen by it, only in the access log.
  'request.client_closed': 499,
  'request.not_implemented': 501,
  'lifecycle.illegal_transition': 409,
  'quota.exceeded': 429,
  'authz.tenant_not_a_member': 403,
  'authz.scope_missing': 403,
  'idempotency.key_required': 400,
  'idempotency.key_invalid': 400,
  'idempotency.key_reused': 422,
  'idempotency.in_flight': 409,
  'routing.no_provider_for_residency': 422,
  'routing.no_rule': 422,
  'routing.assessment_required': 422,
  'provider.unavailable': 503,
  'provider.rejected': 502,
  'moderation.blocked': 422,
  'schema.invalid_event': 400,
  // The server cannot take the request now (shutting down, a part not wired in): retry later.
  'service.unavailable': 503,
  // A dependency this request needs cannot be reached.
  'dependency.unavailable': 503,
  // The gateway could not reach a subgraph (its fields only; gateway/subgraph-fetch.ts).
  'subgraph.unavailable': 503,
} as const satisfies Record<string, number>;

export type KnownErrorCode = keyof typeof STATUS_BY_CODE;

/** A known code, or a part's own `area.reason` code. */
export type ErrorCode = KnownErrorCode | (string & {});

export interface AppErrorOptions {
  status?: number;
  /** Safe, client-facing details (e.g. the failing JSON path). Never secrets or stack traces. */
  details?: Record<string, unknown>;
  /** Extra response headers, e.g. Retry-After on quota.exceeded. */
  headers?: Record<string, string>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = options.status ?? statusOf(code) ?? 400;
    this.details = options.details;
    this.headers = options.headers;
  }
}

export const badInput = (message: string, details?: Record<string, unknown>) =>
  new AppError('BAD_USER_INPUT', message, { details });
export const notFound = (what: string) => new AppError('request.not_found', `${what} not found`);
export const unauthenticated = (message = 'A valid bearer token is required') => new AppError('UNAUTHENTICATED', message);
export const forbidden = (code: ErrorCode, message: string) => new AppError(code, message, { status: 403 });

/**
 * A dependency this request needs (the database, the idempotency store) cannot be reached: the
 * caller did nothing wrong and may retry shortly.
 */
export const dependencyUnavailable = (what: string) =>
  new AppError('dependency.unavailable', `${what[0].toUpperCase()}${what.slice(1)} is unavailable; retry shortly`, {
    status: 503,
    headers: { 'retry-after': '1' },
    details: { retryAfterSeconds: 1 },
  });

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}

function statusOf(code: string): number | undefined {
  return Object.hasOwn(STATUS_BY_CODE, code) ? STATUS_BY_CODE[code as KnownErrorCode] : undefined;
}

export function statusForCode(code: string): number {
  return statusOf(code) ?? 500;
}
