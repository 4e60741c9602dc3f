/**
 * Typed errors with stable codes. Every boundary (GraphQL, REST, event consumer) maps an AppError
 * once: GraphQL puts `code` in `extensions.code`, REST in a problem+json `code` member with `status`.
 * Anything that is not an AppError is an internal error and its message never leaves the process.
 */
import { databaseUnreachable } from '../db/unreachable.js';
import { ERROR_CODES, type ErrorDetailMember, type KnownErrorCode } from './error-codes.js';

export type { KnownErrorCode } from './error-codes.js';

/**
 * Safe, client-facing details (e.g. the failing JSON path); never secrets or stack traces. Only
 * members of the registry's list (ERROR_DETAIL_MEMBERS): the gateway drops any other.
 */
export type ErrorDetails = Partial<Record<ErrorDetailMember, unknown>>;

/**
 * A code of the registry: a code thrown anywhere must be added there first (with its status and
 * meaning), so the compiler, the docs and the changelog guard all see it.
 */
export type ErrorCode = KnownErrorCode;

export interface AppErrorOptions {
  status?: number;
  details?: ErrorDetails;
  /** Extra response headers, e.g. Retry-After on quota.exceeded. */
  headers?: Record<string, string>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: ErrorDetails;
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

export const badInput = (message: string, details?: ErrorDetails) => new AppError('BAD_USER_INPUT', message, { details });
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

/**
 * The AppError a door answers for `error`: itself, or 503 `dependency.unavailable` (Retry-After)
 * for a database that cannot be reached or a session that died under the request
 * (platform/db/unreachable.ts); undefined for anything else (an internal error, 500).
 */
export function answerableError(error: unknown): AppError | undefined {
  if (isAppError(error)) return error;
  if (databaseUnreachable(error)) return dependencyUnavailable('the database');
  return undefined;
}

/** Whether `code` is one of the registry's (platform/errors/error-codes.ts). */
export function isKnownErrorCode(code: string): code is KnownErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}

/** The status of a code in the registry (platform/errors/error-codes.ts), the one source of statuses. */
function statusOf(code: string): number | undefined {
  return isKnownErrorCode(code) ? ERROR_CODES[code].status : undefined;
}

export function statusForCode(code: string): number {
  return statusOf(code) ?? 500;
}
