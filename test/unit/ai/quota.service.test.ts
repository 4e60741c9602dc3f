import { describe, expect, it } from 'vitest';
import { manualClock } from '../../../platform/clock.js';
import { AppError } from '../../../platform/errors/errors.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { createQuotaService, type TenantQuota } from '../../../subgraphs/ai/quota/quota.service.js';
import { createMemoryQuotaStore, QuotaStoreUnavailableError, type QuotaStore } from '../../../subgraphs/ai/quota/quota.store.js';
import { rejected } from './catching.js';

const T = 'ten_01JD0000000000000000000000';
const NOW = '2026-11-21T10:15:30Z';

const downStore: QuotaStore = {
  kind: 'redis',
  reserve: async () => {
    throw new QuotaStoreUnavailableError(new Error('ECONNREFUSED'));
  },
  adjustTokens: async () => {
    throw new QuotaStoreUnavailableError(new Error('ECONNREFUSED'));
  },
  ping: async () => {
    throw new QuotaStoreUnavailableError(new Error('ECONNREFUSED'));
  },
};

describe('quota service', () => {
  it('does nothing for a tenant without quota', async () => {
    const service = createQuotaService({
      store: downStore,
      fallbackRpmPercent: 25,
      fallbackReplicas: 1,
      clock: manualClock(NOW),
      logger: silentLogger,
    });
    await expect(service.reserve(T, { enabled: false, requestsPerMinute: 1, tokensPerDay: 1 }, 10)).resolves.toMatchObject({
      mode: 'disabled',
    });
  });

  it('answers quota.exceeded with Retry-After and retryAfterSeconds', async () => {
    const service = createQuotaService({
      store: createMemoryQuotaStore(),
      fallbackRpmPercent: 25,
      fallbackReplicas: 1,
      clock: manualClock(NOW),
      logger: silentLogger,
    });
    const quota: TenantQuota = { enabled: true, requestsPerMinute: 1, tokensPerDay: 0 };
    await service.reserve(T, quota, 10);
    const error = await rejected(AppError, service.reserve(T, quota, 10));
    expect(error.code).toBe('quota.exceeded');
    expect(error.status).toBe(429);
    expect(error.details).toMatchObject({ limit: 'requests_per_minute', retryAfterSeconds: 30 });
    expect(error.headers).toEqual({ 'retry-after': '30' });
  });

  it('corrects the token reservation to the real usage', async () => {
    const service = createQuotaService({
      store: createMemoryQuotaStore(),
      fallbackRpmPercent: 25,
      fallbackReplicas: 1,
      clock: manualClock(NOW),
      logger: silentLogger,
    });
    const quota: TenantQuota = { enabled: true, requestsPerMinute: 0, tokensPerDay: 100 };
    const first = await service.reserve(T, quota, 80);
    await service.settle(first, 20);
    await expect(service.reserve(T, quota, 80)).resolves.toMatchObject({ mode: 'shared' });
    expect((await rejected(AppError, service.reserve(T, quota, 1))).details).toMatchObject({ limit: 'tokens_per_day' });
  });

  describe('while the shared store is down', () => {
    it('fails closed when a token budget applies (503 quota.unavailable, Retry-After)', async () => {
      const service = createQuotaService({
        store: downStore,
        fallbackRpmPercent: 25,
        fallbackReplicas: 1,
        clock: manualClock(NOW),
        logger: silentLogger,
      });
      const error = await rejected(
        AppError,
        service.reserve(T, { enabled: true, requestsPerMinute: 100, tokensPerDay: 1000 }, 10),
      );
      expect(error.code).toBe('quota.unavailable');
      expect(error.status).toBe(503);
      expect(error.headers).toEqual({ 'retry-after': '5' });
    });

    it('caps the request rate locally at the configured share of the limit', async () => {
      const clock = manualClock(NOW);
      const service = createQuotaService({
        store: downStore,
        fallbackRpmPercent: 25,
        fallbackReplicas: 1,
        clock,
        logger: silentLogger,
      });
      const quota: TenantQuota = { enabled: true, requestsPerMinute: 8, tokensPerDay: 0 };
      await expect(service.reserve(T, quota, 1)).resolves.toMatchObject({ mode: 'local_cap' });
      await expect(service.reserve(T, quota, 1)).resolves.toMatchObject({ mode: 'local_cap' });
      expect((await rejected(AppError, service.reserve(T, quota, 1))).code).toBe('quota.exceeded');
      clock.advance(60_000);
      await expect(service.reserve(T, quota, 1)).resolves.toMatchObject({ mode: 'local_cap' });
    });

    it('reports degraded health', async () => {
      const service = createQuotaService({
        store: downStore,
        fallbackRpmPercent: 25,
        fallbackReplicas: 1,
        clock: manualClock(NOW),
        logger: silentLogger,
      });
      await expect(service.health()).resolves.toMatchObject({ status: 'degraded', store: 'redis' });
    });
  });
});
