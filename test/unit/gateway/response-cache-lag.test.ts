import { describe, expect, it } from 'vitest';
import { ResponseCache } from '../../../gateway/response-cache/response-cache.js';
import { createLogger } from '../../../platform/logger.js';
import { createMetrics, type Metrics } from '../../../platform/metrics.js';

/**
 * response_cache_invalidation_lag_seconds as a replica records it (L1 only here; the integration
 * test checks it with the cache Redis and real events).
 */
const SETTINGS = { memoryBytes: 1_000_000, ttlSeconds: 60, maxEntryBytes: 10_000, redisSlots: 100 };
const NOW = Date.parse('2026-11-26T10:00:00.300Z');

function cacheWithMetrics(): { cache: ResponseCache; metrics: Metrics } {
  const metrics = createMetrics();
  const cache = new ResponseCache(SETTINGS, { metrics, logger: createLogger({ level: 'silent' }), now: () => NOW });
  return { cache, metrics };
}

async function lagSeries(metrics: Metrics): Promise<Record<string, number>> {
  const text = (await metrics.render()).body;
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^response_cache_invalidation_lag_seconds_(bucket\{le="[^"]+"\}|count|sum) (\S+)$/gm)) {
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
