import type { Redis } from 'ioredis';
import type { Logger } from '../../../platform/observability/logger.js';

/**
 * Which AI replicas are alive, learned while the shared store is up, so that the quota's
 * fallback (Redis down) can divide its share among them. Each replica beats into one sorted set
 * (member = its instance id, score = Redis's own clock, so replica clocks cannot skew it); a beat
 * drops members that missed their beats and answers how many are left. When Redis goes down, the
 * last count answered is what the replica keeps using.
 */
export interface ReplicaCensus {
  /** Records this replica and refreshes the count; never throws (a failed beat keeps the last count). */
  beat(): Promise<void>;
  /** The count of live replicas last seen, or undefined when this process never reached the store. */
  lastCount(): number | undefined;
}

/** One beat every 5 s; a replica silent for three beats is gone. */
export const REPLICA_BEAT_MS = 5_000;
const REPLICA_TTL_MS = 3 * REPLICA_BEAT_MS;
export const REPLICA_SET_KEY = 'quota:replicas';

const BEAT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return redis.call('ZCARD', KEYS[1])
`;

type CensusRedis = Redis & { quotaReplicaBeat(key: string, instance: string, ttlMs: number): Promise<number> };

export function createRedisReplicaCensus(redis: Redis, instance: string, logger: Logger): ReplicaCensus {
  const client = redis as CensusRedis;
  if (typeof client.quotaReplicaBeat !== 'function') {
    redis.defineCommand('quotaReplicaBeat', { numberOfKeys: 1, lua: BEAT_LUA });
  }
  let count: number | undefined;
  return {
    async beat() {
      try {
        const seen = await client.quotaReplicaBeat(REPLICA_SET_KEY, instance, REPLICA_TTL_MS);
        if (seen !== count) logger.info({ replicas: seen }, 'AI replicas sharing the quota fallback');
        count = seen;
      } catch {
        // The outage itself is logged by the quota and the Redis client; the last count stands.
      }
    },
    lastCount: () => count,
  };
}

/** Embedded mode (no Redis): nothing to discover, and no fallback ever runs. */
export const noReplicaCensus: ReplicaCensus = { beat: async () => undefined, lastCount: () => undefined };
