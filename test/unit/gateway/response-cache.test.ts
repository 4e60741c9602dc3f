import { describe, expect, it } from 'vitest';
import { ResponseCache } from '../../../gateway/response-cache/response-cache.js';
import { createLogger } from '../../../platform/observability/logger.js';
import { createMetrics, type Metrics } from '../../../platform/observability/metrics.js';

/**
 * The response cache without Redis (L1 only): what it stores while invalidations happen, and
 * response_cache_invalidation_lag_seconds as a replica records it (the integration test checks both
 * with the cache Redis and real events).
 */
const SETTINGS = { memoryBytes: 1_000_000, ttlSeconds: 60, maxEntryBytes: 10_000, redisSlots: 100, feedGraceMs: 5_000 };
const NOW = Date.parse('2026-11-26T10:00:00.300Z');

function cacheWithMetrics(): { cache: ResponseCache; metrics: Metrics } {
  const metrics = createMetrics();
  const cache = new ResponseCache(SETTINGS, { metrics, logger: createLogger({ level: 'silent' }), now: () => NOW });
  return { cache, metrics };
}

/** A histogram's series (buckets, count, sum) as /metrics renders them; the occurredAt lag unless named. */
async function lagSeries(metrics: Metrics, name = 'response_cache_invalidation_lag_seconds'): Promise<Record<string, number>> {
  const text = (await metrics.render()).body;
  const out: Record<string, number> = {};
  for (const m of text.matchAll(new RegExp(`^${name}_(bucket\\{le="[^"]+"\\}|count|sum) (\\S+)$`, 'gm'))) {
    out[m[1]] = Number(m[2]);
  }
  return out;
}

describe('response_cache_invalidation_lag_seconds', () => {
  it("records each event's lag once its invalidation is done, in the bucket around it", async () => {
    const { cache, metrics } = cacheWithMetrics();
    await cache.invalidate(['t:a'], 'event', { occurredAt: '2026-11-26T10:00:00.100Z' });
    await cache.invalidate(['t:a'], 'event', { occurredAt: '2026-11-26T10:00:00.000Z' });
    const series = await lagSeries(metrics);
    expect(series.count).toBe(2);
    expect(series.sum).toBeCloseTo(0.5, 6);
    expect(series['bucket{le="0.15"}']).toBe(0);
    expect(series['bucket{le="0.25"}']).toBe(1);
    expect(series['bucket{le="0.5"}']).toBe(2);
  });

  it('records nothing for a mutation or an event without a readable occurredAt, and 0 for one from the future', async () => {
    const { cache, metrics } = cacheWithMetrics();
    await cache.invalidate(['t:a'], 'mutation');
    await cache.invalidate(['t:a'], 'event');
    await cache.invalidate(['t:a'], 'event', { occurredAt: 'not a date' });
    expect((await lagSeries(metrics)).count).toBe(0);
    await cache.invalidate(['t:a'], 'event', { occurredAt: '2026-11-26T10:00:01.000Z' });
    const series = await lagSeries(metrics);
    expect(series.count).toBe(1);
    expect(series['bucket{le="0.005"}']).toBe(1);
    expect(series.sum).toBe(0);
  });
});

describe('response_cache_invalidation_commit_lag_seconds', () => {
  const commitLagSeries = (metrics: Metrics) => lagSeries(metrics, 'response_cache_invalidation_commit_lag_seconds');

  it('records the time from the commit the relay stamped, apart from the occurredAt lag', async () => {
    const { cache, metrics } = cacheWithMetrics();
    // occurredAt 300 ms before now, the commit 40 ms before: the transaction took the rest.
    await cache.invalidate(['t:a'], 'event', { occurredAt: '2026-11-26T10:00:00.000Z', committedAtMs: NOW - 40 });
    const series = await commitLagSeries(metrics);
    expect(series.count).toBe(1);
    expect(series.sum).toBeCloseTo(0.04, 6);
    expect(series['bucket{le="0.025"}']).toBe(0);
    expect(series['bucket{le="0.05"}']).toBe(1);
    expect((await lagSeries(metrics)).sum).toBeCloseTo(0.3, 6);
  });

  it('records nothing for an event without a stamped commit or for a mutation, and 0 for a commit from the future', async () => {
    const { cache, metrics } = cacheWithMetrics();
    await cache.invalidate(['t:a'], 'event', { occurredAt: '2026-11-26T10:00:00.000Z' });
    await cache.invalidate(['t:a'], 'mutation', { committedAtMs: NOW - 40 });
    expect((await commitLagSeries(metrics)).count).toBe(0);
    await cache.invalidate(['t:a'], 'event', { committedAtMs: NOW + 5 });
    const series = await commitLagSeries(metrics);
    expect(series.count).toBe(1);
    expect(series.sum).toBe(0);
  });
});

describe('storing an answer fetched while something was invalidated', () => {
  const material = (id: string) => ({
    tenantId: 'ten_a',
    scopes: new Set(['catalog.read']),
    queryHash: 'q',
    operationName: null,
    variables: JSON.stringify({ id }),
    acceptLanguage: '',
  });

  /** Looks `id` up (a miss), lets `meanwhile` happen during the fetch, stores the answer; true when the next lookup hits. */
  async function storedAfter(tags: string[], meanwhile: (cache: ResponseCache) => Promise<void> | void): Promise<boolean> {
    const { cache } = cacheWithMetrics();
    const found = await cache.lookup(material('c1'));
    if (!('pending' in found)) throw new Error('expected a miss');
    await meanwhile(cache);
    await cache.store(found.pending, '{"data":{}}', tags);
    return 'body' in (await cache.lookup(material('c1')));
  }

  const tags = ['g', 't:ten_a', 'c:ten_a:c1'];

  it('stores it when only other tags were invalidated (a steady flow of events does not stop the cache filling)', async () => {
    expect(await storedAfter(tags, (cache) => cache.invalidate(['c:ten_a:c2', 'l:ten_a'], 'event'))).toBe(true);
    expect(await storedAfter(tags, (cache) => cache.invalidate(['t:ten_b'], 'mutation'))).toBe(true);
  });

  it('refuses it when one of its own tags was invalidated, or the whole L1 was cleared', async () => {
    expect(await storedAfter(tags, (cache) => cache.invalidate(['c:ten_a:c1'], 'event'))).toBe(false);
    expect(await storedAfter(tags, (cache) => cache.invalidate(['t:ten_a'], 'mutation'))).toBe(false);
    expect(await storedAfter(tags, (cache) => cache.invalidate(['g'], 'event'))).toBe(false);
    expect(await storedAfter(tags, (cache) => cache.clearLocal())).toBe(false);
  });
});

describe('the TTL', () => {
  const material = {
    tenantId: 'ten_a',
    scopes: new Set(['catalog.read']),
    queryHash: 'q',
    operationName: null,
    variables: '{}',
    acceptLanguage: '',
  };

  it('counts from the fetch, not from the store: a slow fetch leaves its entry less time', async () => {
    let now = NOW;
    const cache = new ResponseCache(SETTINGS, { logger: createLogger({ level: 'silent' }), now: () => now });
    const found = await cache.lookup(material);
    if (!('pending' in found)) throw new Error('expected a miss');
    now += 30_000;
    await cache.store(found.pending, '{"data":{}}', ['g']);
    now += 29_999;
    expect('body' in (await cache.lookup(material))).toBe(true);
    now += 1;
    expect('body' in (await cache.lookup(material))).toBe(false);
  });

  it('keeps nothing fetched longer ago than the TTL', async () => {
    let now = NOW;
    const cache = new ResponseCache(SETTINGS, { logger: createLogger({ level: 'silent' }), now: () => now });
    const found = await cache.lookup(material);
    if (!('pending' in found)) throw new Error('expected a miss');
    now += SETTINGS.ttlSeconds * 1000;
    await cache.store(found.pending, '{"data":{}}', ['g']);
    expect(cache.memoryBytes()).toBe(0);
  });
});
