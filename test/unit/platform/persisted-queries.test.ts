import { describe, expect, it } from 'vitest';
import { memoryLru, sizeLimited } from '../../../platform/graphql/persisted-queries.js';
import { evicts } from '../../../platform/redis.js';

describe('persisted query stores are bounded in bytes', () => {
  it('never registers a document above the size limit, and keeps the ones below', async () => {
    const store = sizeLimited(memoryLru(1024 * 1024), 1_000);
    await store.set('apq:big', 'x'.repeat(1_001));
    await store.set('apq:small', 'y'.repeat(1_000));
    expect(await store.get('apq:big')).toBeUndefined();
    expect(await store.get('apq:small')).toBe('y'.repeat(1_000));
  });

  it('keeps at most its budget in memory, dropping the least recently used first', async () => {
    const lru = memoryLru(10_000);
    for (let i = 0; i < 100; i++) await lru.set(`apq:${i}`, 'z'.repeat(990));
    expect(lru.bytes()).toBeLessThanOrEqual(10_000);
    expect(await lru.get('apq:0')).toBeUndefined();
    expect(await lru.get('apq:99')).toBe('z'.repeat(990));
    // A read makes an entry young again: it outlives the ones written before it.
    const survivor = 'apq:95';
    expect(await lru.get(survivor)).toBeDefined();
    for (let i = 100; i < 108; i++) await lru.set(`apq:${i}`, 'z'.repeat(990));
    expect(await lru.get(survivor)).toBeDefined();
    expect(await lru.get('apq:96')).toBeUndefined();
  });

  it('forgets an entry after its TTL', async () => {
    const lru = memoryLru(10_000);
    await lru.set('apq:gone', 'q', { ttl: -1 });
    expect(await lru.get('apq:gone')).toBeUndefined();
    expect(lru.bytes()).toBe(0);
  });
});

describe('a Redis that evicts', () => {
  it.each([
    [{ maxmemory: 0, policy: 'allkeys-lru' }, false],
    [{ maxmemory: 64 * 1024 * 1024, policy: 'noeviction' }, false],
    [{ maxmemory: 64 * 1024 * 1024, policy: 'allkeys-lru' }, true],
    // Every quota and Idempotency-Key record has a TTL: volatile-* policies evict them too.
    [{ maxmemory: 64 * 1024 * 1024, policy: 'volatile-ttl' }, true],
  ])('%o evicts: %s', (settings, expected) => {
    expect(evicts(settings)).toBe(expected);
  });
});
