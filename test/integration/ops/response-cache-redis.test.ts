import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../../gateway/response-cache/redis-store.js';
import { ResponseCache } from '../../../gateway/response-cache/response-cache.js';
import { TokenCheck } from '../../../gateway/response-cache/token-check.js';
import { newId } from '../../../platform/ids.js';
import { createLogger } from '../../../platform/observability/logger.js';
import { connectRedis } from '../../../platform/redis.js';

/**
 * The L2 store's tag tokens against a real Redis (redis-store.ts): an answer read before an
 * invalidation is never stored as current, and a lost tag key is a miss, never a stale hit.
 */
const redisUrl = process.env.REDIS_URL;
let redis: Redis;
let store: RedisStore;

const keyHash = () => randomBytes(32).toString('hex');
const TENANT = newId('tenant');
const tag = () => `c:${newId('tenant')}:${newId('course')}`;

describe.skipIf(!redisUrl)('response cache L2 (set REDIS_URL to run)', () => {
  beforeAll(async () => {
    redis = await connectRedis(redisUrl!, createLogger({ level: 'silent' }));
    store = new RedisStore(redis, { ttlSeconds: 60, slots: 1 << 20, tenantSlots: 1 << 20 }, () =>
      randomBytes(9).toString('base64url'),
    );
  });
  afterAll(() => redis?.disconnect());

  it('stores, serves, and stops serving once a tag is invalidated', async () => {
    const [key, t] = [keyHash(), tag()];
    const first = await store.read(key, TENANT);
    expect(first.hit).toBeUndefined();
    expect(await store.store(key, TENANT, first.startMicros, '{"data":1}', [t])).toHaveLength(1);
    expect((await store.read(key, TENANT)).hit?.body).toBe('{"data":1}');
    await store.invalidate([t]);
    expect((await store.read(key, TENANT)).hit).toBeUndefined();
  });

  it('refuses an answer whose tag was invalidated after its read began', async () => {
    const [key, t] = [keyHash(), tag()];
    const read = await store.read(key, TENANT);
    await store.invalidate([t]);
    expect(await store.store(key, TENANT, read.startMicros, '{"data":"old"}', [t])).toBeUndefined();
    expect((await store.read(key, TENANT)).hit).toBeUndefined();
  });

  it('treats a lost tag key as a miss, never a stale hit', async () => {
    const [key, t] = [keyHash(), tag()];
    const read = await store.read(key, TENANT);
    await store.store(key, TENANT, read.startMicros, '{"data":2}', [t]);
    await redis.del(`rc:t:${t}`);
    expect((await store.read(key, TENANT)).hit).toBeUndefined();
  });

  it('confirms an L1 entry by its tokens without reading the body', async () => {
    const [key, t] = [keyHash(), tag()];
    const read = await store.read(key, TENANT);
    const tokens = (await store.store(key, TENANT, read.startMicros, '{"data":3}', [t]))!;
    const check = new TokenCheck((tags) => store.tokens(tags));
    expect(await check.check([t], tokens)).toBe(true);
    await store.invalidate([t]);
    expect(await check.check([t], tokens)).toBe(false);
    await redis.del(`rc:t:${t}`);
    expect(await store.tokens([t])).toEqual([undefined]);
  });

  it('expires an entry its TTL after its read began, and hands a replica the time it has left', async () => {
    const [key, t] = [keyHash(), tag()];
    const read = await store.read(key, TENANT);
    // Read 10 s ago by Redis's clock: 50 s of the 60 s TTL are left.
    const tenSecondsAgo = String(BigInt(read.startMicros) - 10_000_000n);
    expect(await store.store(key, TENANT, tenSecondsAgo, '{"data":4}', [t])).toHaveLength(1);
    const pttl = await redis.pttl(store.slotOf(key, TENANT));
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(50_000);
    expect((await store.read(key, TENANT)).hit?.remainingMs).toBeLessThanOrEqual(50_000);
    // Read longer ago than the TTL: not stored at all.
    const key2 = keyHash();
    const old = String(BigInt((await store.read(key2, TENANT)).startMicros) - 61_000_000n);
    expect(await store.store(key2, TENANT, old, '{"data":5}', [t])).toBeUndefined();
    expect((await store.read(key2, TENANT)).hit).toBeUndefined();
  });

  it('a second replica keeps a shared entry only for the time it has left, never a fresh TTL', async () => {
    const settings = {
      memoryBytes: 1_000_000,
      ttlSeconds: 60,
      maxEntryBytes: 10_000,
      redisSlots: 1 << 20,
      tenantRedisSlots: 1 << 20,
      feedGraceMs: 5_000,
    };
    const logger = createLogger({ level: 'silent' });
    let bNow = Date.now();
    const a = new ResponseCache(settings, { redis, logger });
    const b = new ResponseCache(settings, { redis, logger, now: () => bNow });
    const material = {
      tenantId: newId('tenant'),
      scopes: new Set(['catalog.read']),
      queryHash: keyHash(),
      operationName: null,
      variables: '{}',
      acceptLanguage: '',
    };
    const found = await a.lookup(material);
    if (!('pending' in found)) throw new Error('expected a miss');
    await a.store(found.pending, '{"data":6}', ['g']);
    // The entry has aged in Redis: 1.5 s of its TTL are left when replica B first reads it.
    await redis.pexpire(store.slotOf(a.keyHash(material), material.tenantId), 1_500);
    expect(await b.lookup(material)).toEqual({ body: '{"data":6}' });
    // Past that time on B's clock, and gone from Redis as it would be: B's L1 must not serve it.
    bNow += 2_000;
    await redis.del(store.slotOf(a.keyHash(material), material.tenantId));
    expect('pending' in (await b.lookup(material))).toBe(true);
  });
});
