import { canonicalHash } from '../text/canonical-json.js';
import { AppError } from '../errors/errors.js';

/**
 * The Idempotency-Key rules of the spec, as pure functions: which methods need a key, what a valid
 * key is, how a key is scoped, what makes two requests "the same", and which outcomes are kept.
 */
export const METHODS_NEEDING_KEY: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH']);

/** Crockford base32, 26 characters; a first character above 7 would overflow the 48-bit time. */
const ULID_RE = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

/**
 * Accepts the bare ULID and the RFC 8941 sf-string form (`"01J..."`, as the IETF Idempotency-Key
 * draft writes it). Crockford base32 is case-insensitive, so the key is upper-cased before use.
 */
export function parseIdempotencyKey(raw: string | undefined, requiredOn = 'POST, PUT and PATCH requests'): string {
  const value = raw?.trim() ?? '';
  if (value === '' || value === '""') {
    throw new AppError('idempotency.key_required', `The Idempotency-Key header is required on ${requiredOn}`);
  }
  const unquoted = /^"[^"\\]*"$/.test(value) ? value.slice(1, -1) : value;
  const key = unquoted.toUpperCase();
  if (!ULID_RE.test(key)) {
    throw new AppError('idempotency.key_invalid', 'The Idempotency-Key header must be a ULID (26 Crockford base32 characters)');
  }
  return key;
}

export interface IdempotencyScope {
  tenantId: string;
  /** The caller: the token's subject. */
  subject: string;
  /** A stable name of the operation, e.g. `rest:courses.update` or `graphql:CreateRule`. */
  route: string;
}

/** Tenant first, so every stored key is tenant-scoped and one tenant's keys can be listed or purged. */
export function scopedKey(scope: IdempotencyScope, key: string): string {
  return callerKeyPrefix(scope.tenantId, scope.subject) + [encodeURIComponent(scope.route), key].join('|');
}

/** The start of every key stored for a tenant's requests. */
export function tenantKeyPrefix(tenantId: string): string {
  return `${tenantId}|`;
}

/** The start of every key a caller's requests in a tenant are stored under (a GDPR erasure deletes them). */
export function callerKeyPrefix(tenantId: string, subject: string): string {
  return `${tenantKeyPrefix(tenantId)}${encodeURIComponent(subject)}|`;
}

/** "The same request": method, target and canonical (RFC 8785) body, so key order and spacing do not matter. */
export function requestFingerprint(method: string, target: string, body: unknown): string {
  return canonicalHash({ method: method.toUpperCase(), target, body: body ?? null });
}

/**
 * Only outcomes of a request that ran are replayed. Refusals the caller fixes and retries with the
 * same key (bad input, auth, missing If-Match, quota) and server failures (the effect may not have
 * happened) free the key instead.
 */
export function isStorableStatus(status: number): boolean {
  if (status >= 200 && status < 300) return true;
  return status === 404 || status === 409 || status === 410 || status === 412 || status === 422;
}

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RecordSnapshot {
  fingerprint: string;
  state: 'in_flight' | 'completed';
  response?: StoredResponse;
}

export type ExistingDecision =
  { kind: 'mismatch' } | { kind: 'in_flight'; retryAfterMs: number } | { kind: 'replay'; response: StoredResponse };

/**
 * A live record under the key: a different request is a client bug whatever the record's state;
 * one still running can be retried once its lease has run out (`expiresAt`, ms since the epoch).
 */
export function classifyExisting(
  record: RecordSnapshot & { expiresAt: number },
  fingerprint: string,
  nowMs: number,
): ExistingDecision {
  if (record.fingerprint !== fingerprint) return { kind: 'mismatch' };
  if (record.state === 'in_flight' || !record.response) {
    return { kind: 'in_flight', retryAfterMs: Math.max(0, record.expiresAt - nowMs) };
  }
  return { kind: 'replay', response: record.response };
}

/** Retry-After for a key in flight: whole seconds, at least 1, never past the holder's lease. */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}

/** Per-request headers are never replayed: the replay gets its own trace and request id. */
const NOT_REPLAYED = new Set([
  'traceparent',
  'tracestate',
  'x-request-id',
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
]);

export function replayableHeaders(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!NOT_REPLAYED.has(name.toLowerCase())) kept[name.toLowerCase()] = value;
  }
  return kept;
}
