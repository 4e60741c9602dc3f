import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../platform/observability/logger.js';
import { createRedis, waitForRedis } from '../../../platform/redis.js';
import { createRedisQuotaStore } from '../../../subgraphs/ai/quota/quota.redis.js';
import { createQuotaService } from '../../../subgraphs/ai/quota/quota.service.js';
import { createMemoryQuotaStore, QuotaStoreUnavailableError, type QuotaStore } from '../../../subgraphs/ai/quota/quota.store.js';
import { realService } from '../../support/services.js';
import { closedPort } from './support.js';

const redisUrl = realService('REDIS_URL');
const NOW = Date.parse('2026-11-21T10:15:30Z');

/** A fresh tenant id per test, so runs against a shared Redis never see each other's counters. */
const tenant = () =>
  `ten_${randomBytes(13)
    .toString('hex')
    .toUpperCase()
    .replace(/[ILOU]/g, 'X')
    .slice(0, 26)}`;

/** Redis Cluster's rule: only the part between the first `{` and the next `}` is hashed, when non-empty. */
function clusterHashTag(key: string): string {
  const open = key.indexOf('{');
  const close = open >= 0 ? key.indexOf('}', open + 1) : -1;
  return open >= 0 && close > open + 1 ? key.slice(open + 1, close) : key;
}

const kinds: Array<'memory' | 'redis'> = redisUrl ? ['memory', 'redis'] : ['memory'];

describe.each(kinds)('quota store contract: %s', (kind) => {
  let store: QuotaStore;
  let redis: Redis | undefined;

  beforeAll(async () => {
    if (kind === 'redis') {
      redis = createRedis(redisUrl!, silentLogger);
      await waitForRedis(redis);
      store = createRedisQuotaStore(redis);
    } else {
      store = createMemoryQuotaStore();
    }
  });
  afterAll(() => redis?.disconnect());

  it('admits exactly the request limit out of 200 concurrent requests', async () => {
    const t = tenant();
    const results = await Promise.all(
      Array.from({ length: 200 }, () =>
        store.reserve({ tenantId: t, limits: { requestsPerMinute: 50, tokensPerDay: 0 }, tokens: 1, nowMs: NOW }),
      ),
    );
    const admitted = results.filter((r) => r.admitted);
    expect(admitted.length).toBe(50);
    for (const r of results)
      if (!r.admitted) expect(r).toEqual({ admitted: false, limit: 'requests_per_minute', retryAfterSeconds: 30 });
  });

  it('admits exactly the token budget out of 200 concurrent requests', async () => {
    const t = tenant();
    const results = await Promise.all(
      Array.from({ length: 200 }, () =>
        store.reserve({ tenantId: t, limits: { requestsPerMinute: 0, tokensPerDay: 1000 }, tokens: 10, nowMs: NOW }),
      ),
    );
    expect(results.filter((r) => r.admitted).length).toBe(100);
    expect(results.find((r) => !r.admitted)).toMatchObject({
      limit: 'tokens_per_day',
      retryAfterSeconds: 13 * 3600 + 44 * 60 + 30,
    });
  });

  it('starts a fresh request window each minute and keeps tenants apart', async () => {
    const t = tenant();
    const limits = { requestsPerMinute: 1, tokensPerDay: 0 };
    expect((await store.reserve({ tenantId: t, limits, tokens: 1, nowMs: NOW })).admitted).toBe(true);
    expect((await store.reserve({ tenantId: t, limits, tokens: 1, nowMs: NOW })).admitted).toBe(false);
    expect((await store.reserve({ tenantId: tenant(), limits, tokens: 1, nowMs: NOW })).admitted).toBe(true);
    expect((await store.reserve({ tenantId: t, limits, tokens: 1, nowMs: NOW + 60_000 })).admitted).toBe(true);
  });

  it('corrects token reservations, never below zero', async () => {
    const t = tenant();
    const limits = { requestsPerMinute: 0, tokensPerDay: 100 };
    const first = await store.reserve({ tenantId: t, limits, tokens: 80, nowMs: NOW });
    if (!first.admitted) throw new Error('not admitted');
    expect((await store.reserve({ tenantId: t, limits, tokens: 80, nowMs: NOW })).admitted).toBe(false);
    await store.adjustTokens(first.tpdKey, -60);
    expect((await store.reserve({ tenantId: t, limits, tokens: 80, nowMs: NOW })).admitted).toBe(true);
    await store.adjustTokens(first.tpdKey, -10_000);
    expect((await store.reserve({ tenantId: t, limits, tokens: 100, nowMs: NOW })).admitted).toBe(true);
    expect((await store.reserve({ tenantId: t, limits, tokens: 1, nowMs: NOW })).admitted).toBe(false);
  });

  // Redis-only: the keys as Redis holds them (the memory store has no keys to inspect).
  if (kind === 'redis') {
    it('keeps both counters of a tenant under one hash tag (one cluster slot), with expiry', async () => {
      const t = tenant();
      const result = await store.reserve({
        tenantId: t,
        limits: { requestsPerMinute: 5, tokensPerDay: 50 },
        tokens: 5,
        nowMs: Date.now(),
      });
      if (!result.admitted) throw new Error('not admitted');
      const keys = await redis!.keys(`quota:{${t}}:*`);
      expect(keys.length).toBe(2);
      for (const key of keys) expect(await redis!.ttl(key)).toBeGreaterThan(0);
      expect(keys.map(clusterHashTag)).toEqual([t, t]);
    });
  }
});

describe('quota with Redis down', () => {
  let redis: Redis;
  beforeAll(async () => {
    // A closed local port: the machine's Redis keeps running for everyone else.
    redis = createRedis(`redis://127.0.0.1:${await closedPort()}`, silentLogger);
  });
  afterAll(() => redis?.disconnect());

  it('the Redis store reports itself unavailable instead of hanging', async () => {
    const store = createRedisQuotaStore(redis);
    await expect(
      store.reserve({ tenantId: tenant(), limits: { requestsPerMinute: 5, tokensPerDay: 0 }, tokens: 1, nowMs: NOW }),
    ).rejects.toBeInstanceOf(QuotaStoreUnavailableError);
    await expect(store.ping()).rejects.toBeInstanceOf(QuotaStoreUnavailableError);
  });

  it('fails token budgets closed, caps the request rate locally, and reports degraded health', async () => {
    const service = createQuotaService({
      store: createRedisQuotaStore(redis),
      fallbackRpmPercent: 50,
      fallbackReplicas: 1,
      clock: { now: () => new Date(NOW) },
      logger: silentLogger,
    });
    const budgeted = service.reserve(tenant(), { enabled: true, requestsPerMinute: 100, tokensPerDay: 1000 }, 10);
    await expect(budgeted).rejects.toMatchObject({ code: 'quota.unavailable', status: 503, headers: { 'retry-after': '5' } });

    const t = tenant();
    const rateOnly = { enabled: true, requestsPerMinute: 4, tokensPerDay: 0 };
    await expect(service.reserve(t, rateOnly, 1)).resolves.toMatchObject({ mode: 'local_cap' });
    await expect(service.reserve(t, rateOnly, 1)).resolves.toMatchObject({ mode: 'local_cap' });
    await expect(service.reserve(t, rateOnly, 1)).rejects.toMatchObject({ code: 'quota.exceeded' });
    await expect(service.health()).resolves.toMatchObject({ status: 'degraded', store: 'redis' });
  });
});
