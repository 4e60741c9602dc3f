import type { Clock } from '../../../platform/clock.js';
import {
  breakerAcquire,
  breakerFailure,
  breakerLabel,
  breakerNeutral,
  breakerSuccess,
  initialBreaker,
  type BreakerPolicy,
  type BreakerState,
} from './breaker.logic.js';

/**
 * Breaker state per provider, in this process: each replica judges a provider by the failures it
 * sees itself, which is the usual trade (no shared store on the hot path, slower to trip).
 */
export class Breakers {
  private readonly states = new Map<string, BreakerState>();

  constructor(
    private readonly policy: BreakerPolicy,
    private readonly clock: Clock,
  ) {}

  private nowMs(): number {
    return this.clock.now().getTime();
  }

  acquire(provider: string): boolean {
    const { allowed, next } = breakerAcquire(this.states.get(provider) ?? initialBreaker, this.nowMs(), this.policy);
    this.states.set(provider, next);
    return allowed;
  }

  success(provider: string): void {
    this.states.set(provider, breakerSuccess());
  }

  failure(provider: string): void {
    this.states.set(provider, breakerFailure(this.states.get(provider) ?? initialBreaker, this.nowMs(), this.policy));
  }

  neutral(provider: string): void {
    this.states.set(provider, breakerNeutral(this.states.get(provider) ?? initialBreaker));
  }

  state(provider: string): 'closed' | 'open' | 'half_open' {
    return breakerLabel(this.states.get(provider) ?? initialBreaker, this.nowMs(), this.policy);
  }
}
