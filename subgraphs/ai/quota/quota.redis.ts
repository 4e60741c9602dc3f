import type { Redis } from 'ioredis';
import { windowKeys } from './quota.logic.js';
import { QuotaStoreUnavailableError, type QuotaStore } from './quota.store.js';

/**
 * The same rule as `admit()` in quota.logic.ts, run inside Redis so check-and-bump is one atomic
 * step across every replica. Both keys carry the `{tenantId}` hash tag, so on Redis Cluster they
 * are in one slot and the script is legal. Returns {admitted, limitIndex}.
 */
const RESERVE_LUA = `
local requests = tonumber(redis.call('GET', KEYS[1]) or '0')
local tokens = tonumber(redis.call('GET', KEYS[2]) or '0')
local rpmLimit = tonumber(ARGV[1])
local tpdLimit = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
if rpmLimit > 0 and requests + 1 > rpmLimit then return {0, 1} end
if tpdLimit > 0 and tokens + want > tpdLimit then return {0, 2} end
redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
redis.call('INCRBY', KEYS[2], want)
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[5]))
return {1, 0}
`;

/** Token correction, clamped at zero; a key that already expired is left alone. */
const ADJUST_LUA = `
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local next = tonumber(current) + tonumber(ARGV[1])
if next < 0 then next = 0 end
redis.call('SET', KEYS[1], next, 'KEEPTTL')
return next
`;

type QuotaRedis = Redis & {
  quotaReserve(
    rpmKey: string,
    tpdKey: string,
    rpmLimit: number,
    tpdLimit: number,
    tokens: number,
    rpmTtl: number,
    tpdTtl: number,
  ): Promise<[number, number]>;
  quotaAdjust(tpdKey: string, delta: number): Promise<number>;
};

export function createRedisQuotaStore(redis: Redis): QuotaStore {
  const client = redis as QuotaRedis;
  if (typeof client.quotaReserve !== 'function') {
    redis.defineCommand('quotaReserve', { numberOfKeys: 2, lua: RESERVE_LUA });
    redis.defineCommand('quotaAdjust', { numberOfKeys: 1, lua: ADJUST_LUA });
  }
  const guard = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw new QuotaStoreUnavailableError(error);
    }
  };
  return {
    kind: 'redis',
    async reserve({ tenantId, limits, tokens, nowMs }) {
      const keys = windowKeys(tenantId, nowMs);
      const [admitted, limitIndex] = await guard(() =>
        client.quotaReserve(
          keys.rpmKey,
          keys.tpdKey,
          limits.requestsPerMinute,
          limits.tokensPerDay,
          tokens,
          // A little longer than the window, so a slow clock on another replica still sees it.
          keys.rpmResetSeconds + 5,
          keys.tpdResetSeconds + 60,
        ),
      );
      if (admitted === 1) return { admitted: true, tpdKey: keys.tpdKey };
      return limitIndex === 1
        ? { admitted: false, limit: 'requests_per_minute', retryAfterSeconds: keys.rpmResetSeconds }
        : { admitted: false, limit: 'tokens_per_day', retryAfterSeconds: keys.tpdResetSeconds };
    },
    async adjustTokens(tpdKey, delta) {
      if (delta === 0) return;
      await guard(() => client.quotaAdjust(tpdKey, delta));
    },
    async ping() {
      await guard(() => redis.ping());
    },
  };
}
