import type { Clock } from '../../../platform/clock.js';
import type { Target } from '../routing/routing.logic.js';
import type { Breakers } from './breakers.js';
import {
  ProviderError,
  type MockDirective,
  type ModelProvider,
  type ProviderErrorKind,
  type ProviderResponse,
} from './provider.js';
import { countsAgainstBreaker, retryDecision, stopsFallback, type BackoffPolicy } from './retry.logic.js';

export type AttemptOutcome = 'ok' | ProviderErrorKind | 'skipped_open_circuit' | 'skipped_residency' | 'deadline_exceeded';

/** One provider call (or a target passed over), as recorded in provenance. */
export interface AttemptRecord {
  provider: string;
  model: string;
  attempt: number;
  outcome: AttemptOutcome;
  latencyMs: number;
  /** Provider HTTP status or our reason code; never provider text. */
  errorCode?: string | null;
}

export type CallResult =
  | { ok: true; response: ProviderResponse; target: Target; attempts: AttemptRecord[]; providerMs: number }
  | { ok: false; blocked: boolean; attempts: AttemptRecord[]; providerMs: number };

export interface CallEngineDeps {
  providers: ReadonlyMap<string, ModelProvider>;
  breakers: Breakers;
  retries: number;
  backoff: BackoffPolicy;
  clock: Clock;
  random: () => number;
  sleep: (ms: number) => Promise<void>;
}

export interface CallInput {
  prompt: string;
  maxOutputTokens: number;
  mock?: MockDirective;
  /** Clock time (ms) after which no new attempt starts and running ones are aborted. */
  deadlineAt: number;
}

/**
 * Tries the targets in order: per attempt a timeout (the provider's, cut to the deadline), retries
 * of retryable failures with jittered backoff or the server's Retry-After, the provider's circuit
 * breaker, then the next target. The first answer wins.
 */
export async function callWithFallbacks(deps: CallEngineDeps, targets: Target[], input: CallInput): Promise<CallResult> {
  const attempts: AttemptRecord[] = [];
  let providerMs = 0;
  const maxAttempts = deps.retries + 1;
  const nowMs = () => deps.clock.now().getTime();

  for (const target of targets) {
    const provider = deps.providers.get(target.provider);
    if (!provider) {
      attempts.push({ ...target, attempt: 0, outcome: 'not_configured', latencyMs: 0, errorCode: 'not_configured' });
      continue;
    }
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const remaining = input.deadlineAt - nowMs();
      if (remaining <= 0) {
        attempts.push({ ...target, attempt, outcome: 'deadline_exceeded', latencyMs: 0, errorCode: 'deadline_exceeded' });
        return { ok: false, blocked: false, attempts, providerMs };
      }
      if (!deps.breakers.acquire(provider.name)) {
        attempts.push({ ...target, attempt, outcome: 'skipped_open_circuit', latencyMs: 0, errorCode: 'circuit_open' });
        break;
      }
      const started = nowMs();
      const signal = AbortSignal.timeout(Math.max(1, Math.min(provider.timeoutMs, remaining)));
      let failure: ProviderError;
      try {
        const response = await provider.complete({
          model: target.model,
          prompt: input.prompt,
          maxOutputTokens: input.maxOutputTokens,
          attempt,
          signal,
          mock: provider.name === 'mock' ? input.mock : undefined,
        });
        const latencyMs = nowMs() - started;
        providerMs += latencyMs;
        deps.breakers.success(provider.name);
        attempts.push({ ...target, attempt, outcome: 'ok', latencyMs });
        return { ok: true, response, target, attempts, providerMs };
      } catch (error) {
        failure = asProviderError(error, signal);
      }
      const latencyMs = nowMs() - started;
      providerMs += latencyMs;
      if (countsAgainstBreaker(failure.kind)) deps.breakers.failure(provider.name);
      else deps.breakers.neutral(provider.name);
      attempts.push({
        ...target,
        attempt,
        outcome: failure.kind,
        latencyMs,
        errorCode: failure.status ? String(failure.status) : failure.kind,
      });
      if (stopsFallback(failure.kind)) return { ok: false, blocked: true, attempts, providerMs };
      const decision = retryDecision({
        kind: failure.kind,
        attempt,
        maxAttempts,
        retryAfterMs: failure.retryAfterMs,
        remainingMs: input.deadlineAt - nowMs(),
        policy: deps.backoff,
        random: deps.random,
      });
      if (!decision.retry) break;
      if (decision.delayMs > 0) await deps.sleep(decision.delayMs);
    }
  }
  return { ok: false, blocked: false, attempts, providerMs };
}

function asProviderError(error: unknown, signal: AbortSignal): ProviderError {
  if (signal.aborted) return new ProviderError('timeout', 'provider call timed out');
  if (error instanceof ProviderError) return error;
  // An adapter bug must not escape as a 500 with its message: treat it as a bad answer.
  return new ProviderError('malformed_response', 'provider adapter failed');
}
