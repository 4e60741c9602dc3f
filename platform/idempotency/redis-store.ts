import { systemClock } from '../clock.js';
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { waitForRedis } from '../redis.js';
import { classifyExisting, type RecordSnapshot, type StoredResponse } from './idempotency.logic.js';
import type { BeginOutcome, IdempotencyStore, Lease, StoreTiming } from './store.js';

interface RedisRecord extends RecordSnapshot {
  token?: string;
  expiresAt: number;
}

/*
 * Records carry their own expiry and the scripts compare it with the caller's clock, so lease and
 * retention follow one clock in both stores (and tests can move it); the Redis TTL only collects
 * the garbage. Each script is one atomic step, which is what makes `begin` safe under concurrency.
 */
const BEGIN = `
local current = redis.call('GET', KEYS[1])
if current then
  local record = cjson.decode(current)
  if tonumber(record.expiresAt) > tonumber(ARGV[1]) then return current end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return false
`;

/** Completes (ARGV[2] = the record) or releases (ARGV[2] = '') a key, only for the lease holder. */
const SETTLE = `
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local record = cjson.decode(current)
if record.state ~= 'in_flight' or record.token ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 1
`;

/** Moves a live lease's expiry to ARGV[2] (ms since the epoch), only for its holder. */
const RENEW = `
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local record = cjson.decode(current)
if record.state ~= 'in_flight' or record.token ~= ARGV[1] then return 0 end
if tonumber(record.expiresAt) <= tonumber(ARGV[3]) then return 0 end
record.expiresAt = tonumber(ARGV[2])
redis.call('SET', KEYS[1], cjson.encode(record), 'PX', ARGV[4])
return 1
`;

/** Where the records live in the state Redis: `idem:` + the scoped key (idempotency.logic.ts). */
export const IDEMPOTENCY_REDIS_PREFIX = 'idem:';

export function createRedisIdempotencyStore(
  redis: Redis,
  timing: StoreTiming,
  prefix = IDEMPOTENCY_REDIS_PREFIX,
): IdempotencyStore {
  const clock = timing.clock ?? systemClock;
  const now = () => clock.now().getTime();
  const ready = async () => {
    // At start-up the connection may still be opening and the offline queue is off.
    if (redis.status !== 'ready') await waitForRedis(redis, 2_000);
  };
  const settle = async (lease: Lease, record: RedisRecord | undefined, ttlMs: number) => {
    await ready();
    const args = [lease.token, record ? JSON.stringify(record) : '', String(ttlMs)];
    return (await redis.eval(SETTLE, 1, prefix + lease.key, ...args)) === 1;
  };
  return {
    kind: 'redis',
    leaseMs: timing.leaseSeconds * 1000,
    async begin(key: string, fingerprint: string): Promise<BeginOutcome> {
      await ready();
      const leaseMs = timing.leaseSeconds * 1000;
      const token = randomUUID();
      const record: RedisRecord = { fingerprint, state: 'in_flight', token, expiresAt: now() + leaseMs };
      const current = (await redis.eval(BEGIN, 1, prefix + key, String(now()), JSON.stringify(record), String(leaseMs))) as
        string | null;
      if (current === null) return { kind: 'started', lease: { key, token, fingerprint } };
      return classifyExisting(JSON.parse(current) as RedisRecord, fingerprint, now());
    },
    complete(lease: Lease, response: StoredResponse) {
      const ttlMs = timing.ttlSeconds * 1000;
      return settle(lease, { fingerprint: lease.fingerprint, state: 'completed', response, expiresAt: now() + ttlMs }, ttlMs);
    },
    release(lease: Lease) {
      return settle(lease, undefined, 0);
    },
    async renew(lease: Lease) {
      await ready();
      const leaseMs = timing.leaseSeconds * 1000;
      const args = [lease.token, String(now() + leaseMs), String(now()), String(leaseMs)];
      return (await redis.eval(RENEW, 1, prefix + lease.key, ...args)) === 1;
    },
  };
}
