import { describe, expect, it } from 'vitest';
import { loadGatewaySlice } from '../../../gateway/config.js';

/** The response cache's per-tenant bounds, parsed once with the gateway's configuration. */
const PLATFORM = { host: '127.0.0.1', catalogPort: 4001, aiPort: 4002 };
const cacheConfig = (env: Record<string, string>) => loadGatewaySlice(env, PLATFORM).gateway.responseCache;

describe('response cache configuration', () => {
  it("defaults each tenant's share to a quarter of L1 and a sixteenth of the L2 slots", () => {
    const config = cacheConfig({ RESPONSE_CACHE_MEMORY_BYTES: String(8 * 1024 * 1024), RESPONSE_CACHE_REDIS_SLOTS: '4096' });
    expect(config.tenantMemoryBytes).toBe(2 * 1024 * 1024);
    expect(config.tenantRedisSlots).toBe(256);
  });

  it('refuses a tenant share larger than the whole cache', () => {
    expect(() => cacheConfig({ RESPONSE_CACHE_MEMORY_BYTES: '1048576', RESPONSE_CACHE_TENANT_MEMORY_BYTES: '2097152' })).toThrow(
      /RESPONSE_CACHE_TENANT_MEMORY_BYTES must be between 65536 and 1048576/,
    );
    expect(() => cacheConfig({ RESPONSE_CACHE_REDIS_SLOTS: '64', RESPONSE_CACHE_TENANT_REDIS_SLOTS: '65' })).toThrow(
      /RESPONSE_CACHE_TENANT_REDIS_SLOTS must be between 1 and 64/,
    );
  });
});
