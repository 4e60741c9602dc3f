/**
 * A circuit breaker per provider: closed → open after N consecutive health failures; open →
 * half-open when the cool-down has passed, letting one probe through; the probe's success closes
 * it, its failure re-opens it for another cool-down.
 */
export type BreakerState =
  { state: 'closed'; failures: number } | { state: 'open'; openedAt: number } | { state: 'half_open'; probeInFlight: boolean };

export interface BreakerPolicy {
  failureThreshold: number;
  cooldownMs: number;
}

export const initialBreaker: BreakerState = { state: 'closed', failures: 0 };

/** May a call go through now? Returns the state to keep (taking the half-open probe slot). */
export function breakerAcquire(
  current: BreakerState,
  nowMs: number,
  policy: BreakerPolicy,
): { allowed: boolean; next: BreakerState } {
  switch (current.state) {
    case 'closed':
      return { allowed: true, next: current };
    case 'open':
      if (nowMs - current.openedAt >= policy.cooldownMs)
        return { allowed: true, next: { state: 'half_open', probeInFlight: true } };
      return { allowed: false, next: current };
    case 'half_open':
      if (current.probeInFlight) return { allowed: false, next: current };
      return { allowed: true, next: { state: 'half_open', probeInFlight: true } };
  }
}

export function breakerSuccess(): BreakerState {
  return { state: 'closed', failures: 0 };
}

export function breakerFailure(current: BreakerState, nowMs: number, policy: BreakerPolicy): BreakerState {
  if (current.state === 'half_open') return { state: 'open', openedAt: nowMs };
  if (current.state === 'open') return current;
  const failures = current.failures + 1;
  return failures >= policy.failureThreshold ? { state: 'open', openedAt: nowMs } : { state: 'closed', failures };
}

/** A call that ended without saying anything about health (e.g. a 400) frees the probe slot. */
export function breakerNeutral(current: BreakerState): BreakerState {
  return current.state === 'half_open' ? { state: 'half_open', probeInFlight: false } : current;
}

export function breakerLabel(state: BreakerState, nowMs: number, policy: BreakerPolicy): 'closed' | 'open' | 'half_open' {
  if (state.state === 'open' && nowMs - state.openedAt >= policy.cooldownMs) return 'half_open';
  return state.state;
}
