import { describe, expect, it } from 'vitest';
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
    let now = 0;
    const store = countingStore([{ api_key: 'one' }, { api_key: 'two' }]);
    const secrets = cacheSecrets(store, { ttlMs: 1000, now: () => now });
    expect(await secrets.field('p', 'api_key')).toBe('one');
    now = 999;
    expect(await secrets.field('p', 'api_key')).toBe('one');
    expect(store.reads).toBe(1);
    now = 1000;
    expect(await secrets.field('p', 'api_key')).toBe('two');
    expect(secrets.status()).toMatchObject({ status: 'up', kind: 'vault' });
  });

  it('shares one read among concurrent misses', async () => {
    const store = countingStore([{ api_key: 'k' }]);
    const secrets = cacheSecrets(store, { ttlMs: 1000, now: () => 0 });
    await Promise.all([secrets.read('p'), secrets.read('p'), secrets.read('p')]);
    expect(store.reads).toBe(1);
  });

  it('keeps serving a recent value for one more TTL while the store is down, then fails', async () => {
    let now = 0;
    const store = countingStore([{ api_key: 'k' }, new SecretStoreError('vault unreachable')]);
    const secrets = cacheSecrets(store, { ttlMs: 1000, now: () => now });
    await secrets.read('p');
    now = 1500;
    expect(await secrets.field('p', 'api_key')).toBe('k');
    expect(secrets.status()).toMatchObject({ status: 'down', detail: 'vault unreachable' });
    now = 2000;
    await expect(secrets.read('p')).rejects.toThrow('vault unreachable');
  });
});
