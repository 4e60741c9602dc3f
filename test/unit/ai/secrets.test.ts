import { describe, expect, it } from 'vitest';
import { manualClock } from '../../../platform/clock.js';
import { cacheSecrets, SecretStoreError, type SecretStore } from '../../../subgraphs/ai/vault/secrets.js';

function countingStore(values: Array<Record<string, string> | Error>): SecretStore & { reads: number } {
  const store = {
    kind: 'vault' as const,
    reads: 0,
    async read() {
      const value = values[Math.min(store.reads, values.length - 1)];
      store.reads++;
      if (value instanceof Error) throw value;
      return value;
    },
  };
  return store;
}

describe('secret cache', () => {
  it('serves from the cache within the TTL and re-reads after it', async () => {
    const clock = manualClock();
    const store = countingStore([{ api_key: 'one' }, { api_key: 'two' }]);
    const secrets = cacheSecrets(store, { ttlMs: 1000, clock });
    expect(await secrets.field('p', 'api_key')).toBe('one');
    clock.advance(999);
    expect(await secrets.field('p', 'api_key')).toBe('one');
    expect(store.reads).toBe(1);
    clock.advance(1);
    expect(await secrets.field('p', 'api_key')).toBe('two');
    expect(secrets.status()).toMatchObject({ status: 'up', kind: 'vault' });
  });

  it('shares one read among concurrent misses', async () => {
    const store = countingStore([{ api_key: 'k' }]);
    const secrets = cacheSecrets(store, { ttlMs: 1000, clock: manualClock() });
    await Promise.all([secrets.read('p'), secrets.read('p'), secrets.read('p')]);
    expect(store.reads).toBe(1);
  });

  it('keeps serving a recent value for one more TTL while the store is down, then fails', async () => {
    const clock = manualClock();
    const store = countingStore([{ api_key: 'k' }, new SecretStoreError('vault unreachable')]);
    const secrets = cacheSecrets(store, { ttlMs: 1000, clock });
    await secrets.read('p');
    clock.advance(1500);
    expect(await secrets.field('p', 'api_key')).toBe('k');
    expect(secrets.status()).toMatchObject({ status: 'down', detail: 'vault unreachable' });
    clock.advance(500);
    await expect(secrets.read('p')).rejects.toThrow('vault unreachable');
  });
});
