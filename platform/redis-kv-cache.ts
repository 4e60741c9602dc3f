import type { Redis } from 'ioredis';

/** The shape Apollo Server's caches take (`@apollo/utils.keyvaluecache`'s KeyValueCache). */
export interface StringKeyValueCache {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, options?: { ttl?: number | null }): Promise<void>;
  delete(key: string): Promise<boolean | void>;
}

/**
 * A Redis-backed cache for Apollo (persisted queries), so a query registered through one gateway
 * replica is found by the others. Every entry expires (`defaultTtlSeconds` unless the caller gives
 * one), which bounds the key space. Redis being down is a cache miss, never a failed request: the
 * APQ protocol makes the client resend the full query.
 */
export function redisKeyValueCache(redis: Redis, options: { prefix: string; defaultTtlSeconds: number }): StringKeyValueCache {
  const key = (name: string) => `${options.prefix}${name}`;
  return {
    async get(name) {
      try {
        return (await redis.get(key(name))) ?? undefined;
      } catch {
        return undefined;
      }
    },
    async set(name, value, setOptions) {
      const ttl = Math.max(1, Math.ceil(setOptions?.ttl ?? options.defaultTtlSeconds));
      try {
        await redis.set(key(name), value, 'EX', ttl);
      } catch {
        // A lost registration only costs the client one more full-query round trip.
      }
    },
    async delete(name) {
      try {
        return (await redis.del(key(name))) > 0;
      } catch {
        return false;
      }
    },
  };
}
