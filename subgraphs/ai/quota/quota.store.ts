import { admit, windowKeys, type QuotaLimitName, type QuotaLimits } from './quota.logic.js';

export interface ReserveRequest {
  tenantId: string;
  limits: QuotaLimits;
  tokens: number;
  nowMs: number;
}

export type ReserveResult =
  { admitted: true; tpdKey: string } | { admitted: false; limit: QuotaLimitName; retryAfterSeconds: number };

/**
 * The shared counters behind per-tenant quotas. `reserve` checks both limits and bumps both
 * counters as one atomic step, so concurrent requests can never together pass a limit.
 */
export interface QuotaStore {
  readonly kind: 'redis' | 'memory';
  reserve(request: ReserveRequest): Promise<ReserveResult>;
  /** Adds `delta` tokens (negative to give back) to the day counter, never below zero. */
  adjustTokens(tpdKey: string, delta: number): Promise<void>;
  ping(): Promise<void>;
}

/** Thrown by a store that cannot reach its backend; the quota service degrades on it. */
export class QuotaStoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super('quota store unavailable', { cause });
    this.name = 'QuotaStoreUnavailableError';
  }
}

/** Embedded mode: one process, so a Map is the shared store; JavaScript's one thread makes it atomic. */
export function createMemoryQuotaStore(): QuotaStore {
  const counters = new Map<string, { value: number; expiresAt: number }>();
  const read = (key: string, nowMs: number) => {
    const entry = counters.get(key);
    if (!entry || entry.expiresAt <= nowMs) return 0;
    return entry.value;
  };
  const write = (key: string, value: number, expiresAt: number) => counters.set(key, { value, expiresAt });
  const sweep = (nowMs: number) => {
    for (const [key, entry] of counters) if (entry.expiresAt <= nowMs) counters.delete(key);
  };
  let lastSweep = 0;
  return {
    kind: 'memory',
    async reserve({ tenantId, limits, tokens, nowMs }) {
      if (nowMs - lastSweep > 60_000) {
        sweep(nowMs);
        lastSweep = nowMs;
      }
      const keys = windowKeys(tenantId, nowMs);
      const current = { requests: read(keys.rpmKey, nowMs), tokens: read(keys.tpdKey, nowMs) };
      const decision = admit(current, limits, tokens);
      if (!decision.admitted) {
        const retryAfterSeconds = decision.limit === 'requests_per_minute' ? keys.rpmResetSeconds : keys.tpdResetSeconds;
        return { admitted: false, limit: decision.limit, retryAfterSeconds };
      }
      write(keys.rpmKey, current.requests + 1, nowMs + keys.rpmResetSeconds * 1000);
      write(keys.tpdKey, current.tokens + tokens, nowMs + keys.tpdResetSeconds * 1000);
      return { admitted: true, tpdKey: keys.tpdKey };
    },
    async adjustTokens(tpdKey, delta) {
      const entry = counters.get(tpdKey);
      if (!entry) return;
      entry.value = Math.max(0, entry.value + delta);
    },
    async ping() {},
  };
}
