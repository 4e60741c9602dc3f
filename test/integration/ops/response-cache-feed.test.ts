import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectJetStreamBus } from '../../../events/bus/jetstream-bus.js';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { followCatalogEvents, type CatalogEventFollower } from '../../../gateway/response-cache/catalog-events.js';
import { feedReadiness } from '../../../gateway/response-cache/feed-watch.logic.js';
import { ResponseCache } from '../../../gateway/response-cache/response-cache.js';
import { createLogger } from '../../../platform/observability/logger.js';
import { createMetrics, type Metrics } from '../../../platform/observability/metrics.js';
import { catalogEventFeed } from '../../../processes/parts.js';
import { eventually } from '../../support/eventually.js';
import { privateServicesAvailable, startPrivateNats, type PrivateNats } from '../../support/private-services.js';
import { startProxy, type Proxy } from '../../support/tcp-proxy.js';

/**
 * issue #34, item 2: the response cache fails safe without its invalidation feed. Measured on
 * 6446199: with both gateways cut from NATS, changed courses were served stale for 54–60 s (the
 * TTL), /readyz stayed up and nothing said invalidations had stopped. Here the gateway's bus
 * reaches a private NATS through a proxy the test freezes (a half-open link: the socket stays
 * open, nothing flows) or cuts.
 */
const runs = privateServicesAvailable('response cache feed', ['nats-server']);
const GRACE_MS = 500;
const TAGS = ['t:tenant-feed', 'course:c1'];
const MATERIAL = {
  tenantId: 'tenant-feed',
  scopes: new Set(['catalog.read']),
  queryHash: 'q1',
  operationName: null,
  variables: '{}',
  acceptLanguage: '',
};

describe.skipIf(!runs)('response cache without its event feed', () => {
  let nats: PrivateNats;
  let proxy: Proxy;
  let bus: EventBus;
  let metrics: Metrics;
  let cache: ResponseCache;
  let follower: CatalogEventFollower;

  beforeAll(async () => {
    nats = await startPrivateNats();
    proxy = await startProxy(new URL(nats.url));
    const logger = createLogger({ level: 'silent' });
    bus = await connectJetStreamBus(proxy.url, { logger, linkProbe: { intervalMs: 200, timeoutMs: 400 } });
    metrics = createMetrics();
    cache = new ResponseCache(
      { memoryBytes: 1_000_000, ttlSeconds: 300, maxEntryBytes: 100_000, redisSlots: 100, feedGraceMs: GRACE_MS },
      { metrics, logger },
    );
    follower = await followCatalogEvents(catalogEventFeed(bus), cache, logger);
  });

  afterAll(async () => {
    await follower?.close();
    await bus?.close().catch(() => undefined);
    await proxy?.close();
    await nats?.destroy();
  });

  async function storeAnswer(body: string): Promise<void> {
    const looked = await cache.lookup(MATERIAL);
    if (!('pending' in looked)) throw new Error('expected a miss');
    await cache.store(looked.pending, body, TAGS);
  }

  const served = async () => 'body' in (await cache.lookup(MATERIAL));

  /** Until the cache has stopped serving (its feed lost past the grace), or follows again. */
  function until(wanted: 'stopped' | 'following', what: string, timeoutMs = 15_000) {
    return eventually(
      async () => {
        const status = cache.feedStatus();
        const reached = wanted === 'following' ? status.state === 'following' : status.state === 'lost' && !status.serving;
        if (!reached) throw new Error(`feed ${JSON.stringify(status)}`);
      },
      what,
      { timeoutMs, intervalMs: 50 },
    );
  }
  const feedUp = async () => (await metrics.render()).body.match(/^response_cache_feed_up (\d)/m)?.[1];

  it('stops serving once a half-open link outlives the grace, says so, and starts empty when the link is back', async () => {
    await storeAnswer('{"data":{"courses":[]}}');
    expect(await served()).toBe(true);
    expect(feedReadiness(cache.feedStatus()).status).toBe('up');

    proxy.freeze();
    await until('stopped', 'the frozen link is noticed and the grace runs out');
    expect(await served()).toBe(false);
    expect(await feedUp()).toBe('0');
    const readiness = feedReadiness(cache.feedStatus());
    expect(readiness.status).toBe('degraded');
    expect(readiness.detail).toContain('not served');
    // Nothing fetched meanwhile is kept: it could not be invalidated either.
    await storeAnswer('{"data":{"courses":[{"id":"c1"}]}}').catch(() => undefined);
    expect(await served()).toBe(false);

    proxy.thaw();
    await until('following', 'the link answers again');
    expect(await feedUp()).toBe('1');
    // Events may have been missed: what was cached before the loss is gone.
    expect(await served()).toBe(false);
    await storeAnswer('{"data":{"courses":[]}}');
    expect(await served()).toBe(true);
  });

  it('treats a dropped connection the same way and follows again after the reconnect', async () => {
    proxy.cut();
    await until('stopped', 'the dropped connection is noticed');
    expect(await served()).toBe(false);
    proxy.restore();
    await until('following', 'the client reconnects', 30_000);
    expect(await served()).toBe(false);
  });
});
