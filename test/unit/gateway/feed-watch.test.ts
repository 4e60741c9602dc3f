import { describe, expect, it } from 'vitest';
import { ResponseCache } from '../../../gateway/response-cache/response-cache.js';
import { cacheServes, feedReadiness, feedStatus } from '../../../gateway/response-cache/feed-watch.logic.js';
import { createLogger } from '../../../platform/observability/logger.js';

const MATERIAL = {
  tenantId: 't1',
  scopes: new Set(['catalog.read']),
  queryHash: 'q',
  operationName: null,
  variables: '{}',
  acceptLanguage: '',
};

describe('feed watch', () => {
  it('serves while following and within the grace after a loss, not after it', () => {
    expect(cacheServes(feedStatus({}, 10_000, 5_000))).toBe(true);
    expect(cacheServes(feedStatus({ lostSince: 10_000 }, 14_999, 5_000))).toBe(true);
    expect(cacheServes(feedStatus({ lostSince: 10_000 }, 15_000, 5_000))).toBe(false);
    expect(cacheServes(feedStatus({ lostSince: 10_000 }, 10_000, 0))).toBe(false);
  });

  it('reports a lost feed as degraded, never down', () => {
    expect(feedReadiness(feedStatus({}, 0, 5_000))).toEqual({ status: 'up' });
    const within = feedReadiness(feedStatus({ lostSince: 0 }, 1_000, 5_000));
    expect(within).toMatchObject({ status: 'degraded', detail: expect.stringContaining('still served') });
    const past = feedReadiness(feedStatus({ lostSince: 0 }, 6_000, 5_000));
    expect(past).toMatchObject({ status: 'degraded', detail: expect.stringContaining('lost 6.0 s ago') });
  });

  it('a cache past its grace neither serves nor stores, and comes back empty', async () => {
    let now = 1_000;
    const cache = new ResponseCache(
      { memoryBytes: 100_000, ttlSeconds: 60, maxEntryBytes: 10_000, redisSlots: 10, feedGraceMs: 5_000 },
      { logger: createLogger({ level: 'silent' }), now: () => now },
    );
    const store = async () => {
      const looked = await cache.lookup(MATERIAL);
      if ('pending' in looked) await cache.store(looked.pending, '{"data":{}}', ['t:t1']);
    };
    const hit = async () => 'body' in (await cache.lookup(MATERIAL));
    await store();
    cache.feedLost();
    now += 4_999;
    expect(await hit()).toBe(true);
    now += 1;
    expect(await hit()).toBe(false);
    await store();
    expect(await hit()).toBe(false);
    await cache.feedBack();
    expect(await hit()).toBe(false);
    await store();
    expect(await hit()).toBe(true);
  });
});
