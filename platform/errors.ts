/**
 * Typed errors with stable codes. Every boundary (GraphQL, REST, event consumer) maps an AppError
 * once: GraphQL puts `code` in `extensions.code`, REST in a problem+json `code` member with `status`.
 * Anything that is not an AppError is an internal error and its message never leaves the process.
 */
export type ErrorCode =
  | 'BAD_USER_INPUT'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'PRECONDITION_REQUIRED'
  | 'PRECONDITION_FAILED'
  | 'QUOTA_EXCEEDED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'METHOD_NOT_ALLOWED'
  | 'ILLEGAL_TRANSITION'
  | 'SERVICE_UNAVAILABLE'
  | 'INTERNAL_SERVER_ERROR'
  | 'authz.tenant_not_a_member'
  | 'authz.scope_missing'
  | 'idempotency.key_required'
  | 'idempotency.key_invalid'
  | 'idempotency.key_reused'
  | 'idempotency.in_flight'
  | 'routing.no_provider_for_residency'
  | 'routing.no_rule'
  | 'routing.assessment_required'
  | 'provider.unavailable'
  | 'provider.rejected'
  | 'moderation.blocked'
  | 'schema.invalid_event'
  | (string & {});

const STATUS_BY_CODE: Record<string, number> = {
  BAD_USER_INPUT: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PRECONDITION_REQUIRED: 428,
  PRECONDITION_FAILED: 412,
  QUOTA_EXCEEDED: 429,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  METHOD_NOT_ALLOWED: 405,
  ILLEGAL_TRANSITION: 409,
  SERVICE_UNAVAILABLE: 503,
  INTERNAL_SERVER_ERROR: 500,
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
};

export interface AppErrorOptions {
  status?: number;
  /** Safe, client-facing details (e.g. the failing JSON path). Never secrets or stack traces. */
  details?: Record<string, unknown>;
  /** Extra response headers, e.g. Retry-After on QUOTA_EXCEEDED. */
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
    this.status = options.status ?? STATUS_BY_CODE[code] ?? 400;
    this.details = options.details;
    this.headers = options.headers;
  }
}

export const badInput = (message: string, details?: Record<string, unknown>) =>
  new AppError('BAD_USER_INPUT', message, { details });
export const notFound = (what: string) => new AppError('NOT_FOUND', `${what} not found`);
export const unauthenticated = (message = 'A valid bearer token is required') => new AppError('UNAUTHENTICATED', message);
export const forbidden = (code: ErrorCode, message: string) => new AppError(code, message, { status: 403 });

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}

export function statusForCode(code: string): number {
  return STATUS_BY_CODE[code] ?? 500;
}
