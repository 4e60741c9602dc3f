import type { ProviderErrorKind } from './provider.js';

/** Transient by nature; anything else (400/401/403, content filter, config) fails the same way again. */
const RETRYABLE: ReadonlySet<ProviderErrorKind> = new Set(['rate_limited', 'server_error', 'timeout', 'connect_error']);
/** Failures that say something about the provider's health, as opposed to this request. */
const BREAKER_FAILURES: ReadonlySet<ProviderErrorKind> = new Set([
  'rate_limited',
  'server_error',
  'timeout',
  'connect_error',
  'malformed_response',
]);

export function isRetryable(kind: ProviderErrorKind): boolean {
  return RETRYABLE.has(kind);
}

export function countsAgainstBreaker(kind: ProviderErrorKind): boolean {
  return BREAKER_FAILURES.has(kind);
}

/**
 * A content filter is the provider declining the content: sending the same content to the next
 * provider would be a way around a safety control, so the request ends there (status blocked).
 */
export function stopsFallback(kind: ProviderErrorKind): boolean {
  return kind === 'content_filter';
}

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
  /** A Retry-After above this is not waited for: the next fallback is tried instead. */
  retryAfterMaxMs: number;
}

export type RetryDecision =
  | { retry: true; delayMs: number }
  | { retry: false; reason: 'not_retryable' | 'attempts_exhausted' | 'retry_after_too_long' | 'deadline' };

/**
 * Whether and when to retry the same provider. Full jitter (AWS Architecture Blog, "Exponential
 * Backoff and Jitter") spreads retries of many clients; a server's Retry-After wins over it.
 */
export function retryDecision(input: {
  kind: ProviderErrorKind;
  attempt: number;
  maxAttempts: number;
  retryAfterMs?: number;
  remainingMs: number;
  policy: BackoffPolicy;
  random: () => number;
}): RetryDecision {
  if (!isRetryable(input.kind)) return { retry: false, reason: 'not_retryable' };
  if (input.attempt >= input.maxAttempts) return { retry: false, reason: 'attempts_exhausted' };
  let delayMs: number;
  if (input.retryAfterMs !== undefined) {
    if (input.retryAfterMs > input.policy.retryAfterMaxMs) return { retry: false, reason: 'retry_after_too_long' };
    delayMs = input.retryAfterMs;
  } else {
    const ceiling = Math.min(input.policy.maxMs, input.policy.baseMs * 2 ** (input.attempt - 1));
    delayMs = Math.floor(input.random() * ceiling);
  }
  if (delayMs >= input.remainingMs) return { retry: false, reason: 'deadline' };
  return { retry: true, delayMs };
}
