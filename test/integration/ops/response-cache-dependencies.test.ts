import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResponseCache } from '../../../gateway/response-cache/response-cache.js';
import { createLogger } from '../../../platform/observability/logger.js';
import { createMetrics } from '../../../platform/observability/metrics.js';
import { connectRedis } from '../../../platform/redis.js';
import { MEASURED, readArbitrary } from '../../support/cache-documents.js';
import { CatalogModel, changeArbitrary, checkNoStaleAnswer, modelServer, type ModelReplica } from '../../support/cache-model.js';

/**
 * The generative dependency check of test/unit/gateway/response-cache-dependencies.test.ts on two
 * gateway replicas sharing the cache Redis of REDIS_URL (L1 each, L2 shared): every read is cached
 * on both, the catalog changes, both follow the events, and neither serves an answer that differs
 * from a fresh one. Each run uses a tenant of its own, so runs (and other suites) never share keys.
 */
const redisUrl = process.env.REDIS_URL;
const SETTINGS = {
  memoryBytes: 8_000_000,
  ttlSeconds: 600,
  maxEntryBytes: 1_000_000,
  redisSlots: 1 << 20,
  tenantRedisSlots: 4096,
  feedGraceMs: 5_000,
};

let redis: Redis;
let model = new CatalogModel();
const metrics = createMetrics();
const replicas: ModelReplica[] = [];

describe.skipIf(!redisUrl)('response cache dependencies on two replicas (set REDIS_URL to run)', () => {
  beforeAll(async () => {
    const logger = createLogger({ level: 'silent' });
    redis = await connectRedis(redisUrl!, logger);
    for (let i = 0; i < 2; i++) {
      const cache = new ResponseCache(SETTINGS, { redis, logger, metrics });
      replicas.push({ cache, server: await modelServer(() => model, cache) });
    }
  });
  afterAll(async () => {
    for (const { server } of replicas) await server.stop();
    redis?.disconnect();
  });

  it('serves no answer that a followed catalog change made differ, on either replica', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(readArbitrary, { minLength: 1, maxLength: 5 }),
        fc.array(changeArbitrary, { minLength: 1, maxLength: 3 }),
        (reads, changes) => checkNoStaleAnswer(replicas, () => (model = new CatalogModel()), reads, changes),
      ),
      { numRuns: 150, examples: MEASURED },
    );
    // Not vacuous: the second replica's first reads came from the shared L2.
    const text = (await metrics.render()).body;
    const hits = Number(/^response_cache_requests_total\{result="hit"\} (\S+)$/m.exec(text)?.[1] ?? 0);
    expect(hits).toBeGreaterThan(150);
  }, 120_000);
});
