import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * The stores of automatic persisted queries (APQ). A registered document costs memory for as long
 * as it lives, and any caller with a token can register one, so every store here is bounded in
 * bytes however many documents arrive (issue #24: 300 registrations of 900 KB documents filled the
 * Redis that held quotas and Idempotency-Key records until its LRU evicted them).
 */

/** The shape Apollo Server's caches take (`@apollo/utils.keyvaluecache`'s KeyValueCache). */
export interface StringKeyValueCache {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, options?: { ttl?: number | null }): Promise<void>;
  delete(key: string): Promise<boolean | void>;
}

/** Documents above `maxDocumentBytes` still run; they are just never registered (the client resends them). */
export function sizeLimited(store: StringKeyValueCache, maxDocumentBytes: number): StringKeyValueCache {
  return {
    get: (key) => store.get(key),
    delete: (key) => store.delete(key),
    async set(key, value, options) {
      if (Buffer.byteLength(value, 'utf8') > maxDocumentBytes) return;
      await store.set(key, value, options);
    },
  };
}

/** A least-recently-used map of at most `maxBytes` of documents, in this process. */
export function memoryLru(maxBytes: number): StringKeyValueCache & { bytes(): number } {
  const entries = new Map<string, { value: string; bytes: number; expiresAt: number }>();
  let bytes = 0;
  const drop = (key: string) => {
    const entry = entries.get(key);
    if (!entry) return false;
    entries.delete(key);
    bytes -= entry.bytes;
    return true;
  };
  return {
    bytes: () => bytes,
    async get(key) {
      const entry = entries.get(key);
      if (!entry) return undefined;
      if (entry.expiresAt <= Date.now()) {
        drop(key);
        return undefined;
      }
      // Re-inserting moves it to the young end of the Map's order.
      entries.delete(key);
      entries.set(key, entry);
      return entry.value;
    },
    async set(key, value, options) {
      drop(key);
      const size = Buffer.byteLength(key) + Buffer.byteLength(value);
      if (size > maxBytes) return;
      const ttlMs = options?.ttl ? options.ttl * 1000 : Number.POSITIVE_INFINITY;
      entries.set(key, { value, bytes: size, expiresAt: Date.now() + ttlMs });
      bytes += size;
      for (const oldest of entries.keys()) {
        if (bytes <= maxBytes) break;
        drop(oldest);
      }
    },
    async delete(key) {
      return drop(key);
    },
  };
}

/**
 * A direct-mapped cache in Redis: `slots` keys at most, each holding one document and the key it
 * belongs to, so Redis never holds more than `slots` × the largest document, whatever a flood of
 * registrations sends. Two documents that share a slot replace each other (a miss, and the client
 * resends the full query); with a few hundred hot operations and thousands of slots that is rare.
 * Redis being down is a miss, never a failed request.
 */
export function slottedRedisCache(
  redis: Redis,
  options: { prefix: string; slots: number; defaultTtlSeconds: number },
): StringKeyValueCache {
  const slotOf = (key: string) => {
    const digest = createHash('sha256').update(key).digest();
    return `${options.prefix}${digest.readUInt32BE(0) % options.slots}`;
  };
  return {
    async get(key) {
      try {
        const stored = await redis.get(slotOf(key));
        if (!stored) return undefined;
        const entry = JSON.parse(stored) as { k: string; v: string };
        return entry.k === key ? entry.v : undefined;
      } catch {
        return undefined;
      }
    },
    async set(key, value, setOptions) {
      const ttl = Math.max(1, Math.ceil(setOptions?.ttl ?? options.defaultTtlSeconds));
      try {
        await redis.set(slotOf(key), JSON.stringify({ k: key, v: value }), 'EX', ttl);
      } catch {
        // A lost registration only costs the client one more full-query round trip.
      }
    },
    async delete(key) {
      try {
        const slot = slotOf(key);
        const stored = await redis.get(slot);
        if (!stored || (JSON.parse(stored) as { k: string }).k !== key) return false;
        return (await redis.del(slot)) > 0;
      } catch {
        return false;
      }
    },
  };
}
