import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../../gateway/response-cache/redis-store.js';
import { TokenCheck } from '../../../gateway/response-cache/token-check.js';
import { newId } from '../../../platform/ids.js';
import { createLogger } from '../../../platform/logger.js';
import { connectRedis } from '../../../platform/redis.js';

/**
 * The L2 store's tag tokens against a real Redis (redis-store.ts): an answer read before an
 * invalidation is never stored as current, and a lost tag key is a miss, never a stale hit.
 */
const redisUrl = process.env.REDIS_URL;
let redis: Redis;
let store: RedisStore;

const keyHash = () => randomBytes(32).toString('hex');
const tag = () => `c:${newId('tenant')}:${newId('course')}`;

describe.skipIf(!redisUrl)('response cache L2 (set REDIS_URL to run)', () => {
  beforeAll(async () => {
    redis = await connectRedis(redisUrl!, createLogger({ level: 'silent' }));
    store = new RedisStore(redis, { ttlSeconds: 60, slots: 1 << 20 }, () => randomBytes(9).toString('base64url'));
  });
  afterAll(() => redis?.disconnect());

  it('stores, serves, and stops serving once a tag is invalidated', async () => {
    const [key, t] = [keyHash(), tag()];
    const first = await store.read(key);
    expect(first.hit).toBeUndefined();
    expect(await store.store(key, first.startMicros, '{"data":1}', [t])).toHaveLength(1);
    expect((await store.read(key)).hit?.body).toBe('{"data":1}');
    await store.invalidate([t]);
    expect((await store.read(key)).hit).toBeUndefined();
  });

  it('refuses an answer whose tag was invalidated after its read began', async () => {
    const [key, t] = [keyHash(), tag()];
    const read = await store.read(key);
    await store.invalidate([t]);
    expect(await store.store(key, read.startMicros, '{"data":"old"}', [t])).toBeUndefined();
    expect((await store.read(key)).hit).toBeUndefined();
  });

  it('treats a lost tag key as a miss, never a stale hit', async () => {
    const [key, t] = [keyHash(), tag()];
    const read = await store.read(key);
    await store.store(key, read.startMicros, '{"data":2}', [t]);
    await redis.del(`rc:t:${t}`);
    expect((await store.read(key)).hit).toBeUndefined();
  });

  it('confirms an L1 entry by its tokens without reading the body', async () => {
    const [key, t] = [keyHash(), tag()];
    const read = await store.read(key);
    const tokens = (await store.store(key, read.startMicros, '{"data":3}', [t]))!;
    const check = new TokenCheck((tags) => store.tokens(tags));
    expect(await check.check([t], tokens)).toBe(true);
    await store.invalidate([t]);
    expect(await check.check([t], tokens)).toBe(false);
    await redis.del(`rc:t:${t}`);
    expect(await store.tokens([t])).toEqual([undefined]);
  });
});
