import { describe, expect, it } from 'vitest';
import { manualClock } from '../../../platform/clock.js';
import {
  breakerAcquire,
  breakerFailure,
  breakerNeutral,
  breakerSuccess,
  initialBreaker,
  type BreakerState,
} from '../../../subgraphs/ai/providers/breaker.logic.js';
import { Breakers } from '../../../subgraphs/ai/providers/breakers.js';
import type { ProviderErrorKind } from '../../../subgraphs/ai/providers/provider.js';
import { parseRetryAfter, kindForStatus } from '../../../subgraphs/ai/providers/provider.js';
import { countsAgainstBreaker, isRetryable, retryDecision, stopsFallback } from '../../../subgraphs/ai/providers/retry.logic.js';

const policy = { baseMs: 100, maxMs: 1000, retryAfterMaxMs: 5000 };

describe('what is retried', () => {
  it('retries 429, 5xx, timeouts and connect errors only', () => {
    const retryable: ProviderErrorKind[] = ['rate_limited', 'server_error', 'timeout', 'connect_error'];
    const never: ProviderErrorKind[] = ['bad_request', 'auth_error', 'content_filter', 'not_configured', 'malformed_response'];
    for (const kind of retryable) expect(isRetryable(kind), kind).toBe(true);
    for (const kind of never) expect(isRetryable(kind), kind).toBe(false);
  });

  it('maps HTTP statuses to kinds', () => {
    expect([400, 401, 403, 404, 408, 429, 500, 503].map(kindForStatus)).toEqual([
      'bad_request',
      'auth_error',
      'auth_error',
      'bad_request',
      'timeout',
      'rate_limited',
      'server_error',
      'server_error',
    ]);
  });

  it('stops the fallback chain on a content filter only', () => {
    expect(stopsFallback('content_filter')).toBe(true);
    expect(stopsFallback('bad_request')).toBe(false);
    expect(countsAgainstBreaker('bad_request')).toBe(false);
    expect(countsAgainstBreaker('server_error')).toBe(true);
  });

  it('does not retry a non-retryable failure or past the attempts', () => {
    expect(
      retryDecision({ kind: 'auth_error', attempt: 1, maxAttempts: 3, remainingMs: 10_000, policy, random: () => 0.5 }),
    ).toEqual({ retry: false, reason: 'not_retryable' });
    expect(
      retryDecision({ kind: 'server_error', attempt: 3, maxAttempts: 3, remainingMs: 10_000, policy, random: () => 0.5 }),
    ).toEqual({ retry: false, reason: 'attempts_exhausted' });
  });

  it('backs off with full jitter under an exponential ceiling', () => {
    const delay = (attempt: number, random: number) =>
      retryDecision({ kind: 'server_error', attempt, maxAttempts: 10, remainingMs: 60_000, policy, random: () => random });
    expect(delay(1, 0.999)).toEqual({ retry: true, delayMs: 99 });
    expect(delay(2, 0.999)).toEqual({ retry: true, delayMs: 199 });
    expect(delay(5, 0.999)).toEqual({ retry: true, delayMs: 999 });
    expect(delay(3, 0)).toEqual({ retry: true, delayMs: 0 });
  });

  it("honours the server's Retry-After, unless it is longer than we wait or than the deadline", () => {
    const base = { kind: 'rate_limited' as const, attempt: 1, maxAttempts: 3, policy, random: () => 0 };
    expect(retryDecision({ ...base, retryAfterMs: 2000, remainingMs: 10_000 })).toEqual({ retry: true, delayMs: 2000 });
    expect(retryDecision({ ...base, retryAfterMs: 6000, remainingMs: 10_000 })).toEqual({
      retry: false,
      reason: 'retry_after_too_long',
    });
    expect(retryDecision({ ...base, retryAfterMs: 2000, remainingMs: 1000 })).toEqual({ retry: false, reason: 'deadline' });
  });

  it('parses Retry-After as seconds, HTTP date or retry-after-ms', () => {
    const now = Date.parse('2026-11-21T00:00:00Z');
    expect(parseRetryAfter('3', null, now)).toBe(3000);
    expect(parseRetryAfter('Sat, 21 Nov 2026 00:00:05 GMT', null, now)).toBe(5000);
    expect(parseRetryAfter('2', '150', now)).toBe(150);
    expect(parseRetryAfter('soon', null, now)).toBeUndefined();
  });
});

describe('circuit breaker', () => {
  const breaker = { failureThreshold: 3, cooldownMs: 1000 };

  it('opens after N consecutive failures and refuses calls while open', () => {
    let state: BreakerState = initialBreaker;
    state = breakerFailure(state, 0, breaker);
    state = breakerFailure(state, 0, breaker);
    expect(state).toEqual({ state: 'closed', failures: 2 });
    state = breakerFailure(state, 10, breaker);
    expect(state).toEqual({ state: 'open', openedAt: 10 });
    expect(breakerAcquire(state, 500, breaker).allowed).toBe(false);
  });

  it('lets one probe through after the cool-down; success closes, failure re-opens', () => {
    const open: BreakerState = { state: 'open', openedAt: 0 };
    const probe = breakerAcquire(open, 1000, breaker);
    expect(probe).toEqual({ allowed: true, next: { state: 'half_open', probeInFlight: true } });
    expect(breakerAcquire(probe.next, 1001, breaker).allowed).toBe(false);
    expect(breakerSuccess()).toEqual({ state: 'closed', failures: 0 });
    expect(breakerFailure(probe.next, 1500, breaker)).toEqual({ state: 'open', openedAt: 1500 });
    expect(breakerNeutral(probe.next)).toEqual({ state: 'half_open', probeInFlight: false });
  });

  it('a success resets the failure count', () => {
    const breakers = new Breakers(breaker, manualClock());
    breakers.failure('p');
    breakers.failure('p');
    breakers.success('p');
    breakers.failure('p');
    breakers.failure('p');
    expect(breakers.state('p')).toBe('closed');
  });

  it('tracks each provider on its own and recovers with the clock', () => {
    const clock = manualClock();
    const breakers = new Breakers(breaker, clock);
    for (let i = 0; i < 3; i++) breakers.failure('a');
    expect(breakers.state('a')).toBe('open');
    expect(breakers.state('b')).toBe('closed');
    expect(breakers.acquire('a')).toBe(false);
    clock.advance(1000);
    expect(breakers.state('a')).toBe('half_open');
    expect(breakers.acquire('a')).toBe(true);
    expect(breakers.acquire('a')).toBe(false);
    breakers.success('a');
    expect(breakers.state('a')).toBe('closed');
    expect(breakers.acquire('a')).toBe(true);
  });
});
