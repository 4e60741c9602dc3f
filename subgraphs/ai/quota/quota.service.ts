import type { Clock } from '../../../platform/clock.js';
import { AppError } from '../../../platform/errors/errors.js';
import type { Logger } from '../../../platform/observability/logger.js';
import {
  degradedPolicy,
  fallbackReplicas,
  tokenCorrection,
  windowKeys,
  type QuotaLimitName,
  type QuotaLimits,
} from './quota.logic.js';
import type { ReplicaCensus } from './quota.replicas.js';
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
  /** How many replicas the fallback's share is divided by, were the store down now. */
  fallbackReplicas?: number;
  detail?: string;
}

export interface QuotaService {
  reserve(tenantId: string, quota: TenantQuota, tokens: number): Promise<QuotaReservation>;
  settle(reservation: QuotaReservation, actualTokens: number | undefined): Promise<void>;
  health(): Promise<QuotaHealth>;
}

export const QUOTA_DEGRADED_DETAIL =
  'shared quota store unreachable: request rate falls back to a local cap per replica (the fallback share divided by the replica count); token budgets fail closed';

function quotaUnavailable(): AppError {
  return new AppError('quota.unavailable', 'The quota cannot be checked right now; retry shortly', {
    status: 503,
    details: { retryAfterSeconds: 5 },
    headers: { 'retry-after': '5' },
  });
}

export function quotaExceeded(limit: QuotaLimitName, retryAfterSeconds: number): AppError {
  return new AppError('quota.exceeded', `The tenant's ${limit.replaceAll('_', ' ')} quota is used up`, {
    details: { limit, retryAfterSeconds },
    headers: { 'retry-after': String(retryAfterSeconds) },
  });
}

export interface QuotaServiceDeps {
  store: QuotaStore;
  /** QUOTA_FALLBACK_RPM_PERCENT: the share of a tenant's request rate all replicas together admit while the store is down. */
  fallbackRpmPercent: number;
  /** QUOTA_FALLBACK_REPLICAS: the replica count the share is divided by, at least. */
  fallbackReplicas: number;
  /** The replicas seen alive while the store was up (a larger count wins over the configured one). */
  census?: ReplicaCensus;
  clock: Clock;
  logger: Logger;
}

export function createQuotaService(deps: QuotaServiceDeps): QuotaService {
  const { store, logger } = deps;
  const nowMs = () => deps.clock.now().getTime();
  const replicasNow = () => fallbackReplicas(deps.fallbackReplicas, deps.census?.lastCount());
  // Per-replica request counters used only while the shared store is down.
  const local = new Map<string, number>();
  let localMinute = -1;
  let lastDegradedLog = 0;

  const admitLocally = (tenantId: string, quota: TenantQuota, tokens: number): QuotaReservation => {
    const atMs = nowMs();
    const keys = windowKeys(tenantId, atMs);
    const replicas = replicasNow();
    const decision = degradedPolicy(quota, deps.fallbackRpmPercent, replicas);
    if (atMs - lastDegradedLog > 10_000) {
      lastDegradedLog = atMs;
      logger.warn({ tenantId, mode: decision.mode, replicas }, 'quota store unreachable; degraded admission');
    }
    if (decision.mode === 'fail_closed') throw quotaUnavailable();
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
        return { status: 'up', store: store.kind, fallbackReplicas: replicasNow() };
      } catch {
        return { status: 'degraded', store: store.kind, fallbackReplicas: replicasNow(), detail: QUOTA_DEGRADED_DETAIL };
      }
    },
  };
}
