import type { Clock } from '../../../platform/clock.js';
import { AppError } from '../../../platform/errors.js';
import type { Logger } from '../../../platform/logger.js';
import { degradedPolicy, tokenCorrection, windowKeys, type QuotaLimitName, type QuotaLimits } from './quota.logic.js';
import { QuotaStoreUnavailableError, type QuotaStore } from './quota.store.js';

export interface TenantQuota extends QuotaLimits {
  enabled: boolean;
}

/** What a request holds after admission; `settle` corrects the token part to the real usage. */
export interface QuotaReservation {
  tenantId: string;
  tokens: number;
  /** Absent when quota is off for the tenant or the admission was local (store down). */
  tpdKey?: string;
  mode: 'disabled' | 'shared' | 'local_cap';
}

export interface QuotaHealth {
  status: 'up' | 'degraded';
  store: 'redis' | 'memory';
  detail?: string;
}

export interface QuotaService {
  reserve(tenantId: string, quota: TenantQuota, tokens: number): Promise<QuotaReservation>;
  settle(reservation: QuotaReservation, actualTokens: number | undefined): Promise<void>;
  health(): Promise<QuotaHealth>;
}

export const QUOTA_DEGRADED_DETAIL =
  'shared quota store unreachable: request rate falls back to a local cap per replica; token budgets fail closed';

export function quotaExceeded(limit: QuotaLimitName, retryAfterSeconds: number): AppError {
  return new AppError('quota.exceeded', `The tenant's ${limit.replaceAll('_', ' ')} quota is used up`, {
    details: { limit, retryAfterSeconds },
    headers: { 'retry-after': String(retryAfterSeconds) },
  });
}

export function createQuotaService(deps: {
  store: QuotaStore;
  fallbackRpmPercent: number;
  clock: Clock;
  logger: Logger;
}): QuotaService {
  const { store, logger } = deps;
  const nowMs = () => deps.clock.now().getTime();
  // Per-replica request counters used only while the shared store is down.
  const local = new Map<string, number>();
  let localMinute = -1;
  let lastDegradedLog = 0;

  const admitLocally = (tenantId: string, quota: TenantQuota, tokens: number): QuotaReservation => {
    const atMs = nowMs();
    const keys = windowKeys(tenantId, atMs);
    const decision = degradedPolicy(quota, deps.fallbackRpmPercent);
    if (atMs - lastDegradedLog > 10_000) {
      lastDegradedLog = atMs;
      logger.warn({ tenantId, mode: decision.mode }, 'quota store unreachable; degraded admission');
    }
    if (decision.mode === 'fail_closed') {
      throw new AppError('quota.unavailable', 'Token budgets cannot be checked right now; retry shortly', {
        status: 503,
        details: { retryAfterSeconds: 5 },
        headers: { 'retry-after': '5' },
      });
    }
    const minute = Math.floor(atMs / 60_000);
    if (minute !== localMinute) {
      local.clear();
      localMinute = minute;
    }
    const used = local.get(tenantId) ?? 0;
    if (used + 1 > decision.cap) throw quotaExceeded('requests_per_minute', keys.rpmResetSeconds);
    local.set(tenantId, used + 1);
    return { tenantId, tokens, mode: 'local_cap' };
  };

  return {
    async reserve(tenantId, quota, tokens) {
      if (!quota.enabled) return { tenantId, tokens, mode: 'disabled' };
      let result;
      try {
        result = await store.reserve({ tenantId, limits: quota, tokens, nowMs: nowMs() });
      } catch (error) {
        if (error instanceof QuotaStoreUnavailableError) return admitLocally(tenantId, quota, tokens);
        throw error;
      }
      if (!result.admitted) throw quotaExceeded(result.limit, result.retryAfterSeconds);
      return { tenantId, tokens, tpdKey: result.tpdKey, mode: 'shared' };
    },

    async settle(reservation, actualTokens) {
      if (reservation.mode !== 'shared' || !reservation.tpdKey) return;
      const delta = tokenCorrection(reservation.tokens, actualTokens);
      // The answer is already computed; a failed correction only leaves the reservation standing
      // (the tenant is charged the estimate), which errs on the safe side.
      await store.adjustTokens(reservation.tpdKey, delta).catch((error) => {
        logger.warn({ err: (error as Error).message, tenantId: reservation.tenantId }, 'quota token correction failed');
      });
    },

    async health() {
      try {
        await store.ping();
        return { status: 'up', store: store.kind };
      } catch {
        return { status: 'degraded', store: store.kind, detail: QUOTA_DEGRADED_DETAIL };
      }
    },
  };
}
