import type { Redis } from 'ioredis';
import { sha256Hex } from '../../platform/text/canonical-json.js';

/**
 * The response cache's second level, in the Redis of REDIS_CACHE_URL (never the state Redis), shared
 * by every gateway replica. Invalidation is by tag token, not by deleting keys:
 *
 * - each tag (`rc:t:<tag>`) holds a token, `<microseconds of Redis's clock>:<nonce>`; invalidating
 *   a tag writes a new token;
 * - an entry records the token of each tag it depends on and is served only while every one is
 *   unchanged; a tag key that is missing (evicted, expired) matches nothing, so eviction can only
 *   cost a miss, never serve a stale answer;
 * - an answer is stored only if none of its tags was invalidated after its read began (the read
 *   took Redis's time when it looked the key up): an answer computed before a change but stored
 *   after it would otherwise be recorded under the new tokens.
 *
 * So no replica has to reach another one's keys: the store needs no tag → keys sets and stays
 * correct whichever replica wrote an entry. Entries live in `slots` keys at most (as APQ does), so
 * Redis holds at most slots × the largest entry; each script is one round trip.
 *
 * Correctness needs no deletion, but privacy does: a dropped entry keeps its bytes (an erased
 * person's id) until its TTL. So after an invalidation `sweep` deletes the entries that can no
 * longer be served in the slots of the tenants it concerns; a tenant's entries sit in its window
 * of slots, so the keys to read are known without a tag → keys index.
 */

/** Entry value: `<key hash>\n<tags>\n<tokens>\n<body>`. */
const READ = `
local v = redis.call('GET', ARGV[1])
local t = redis.call('TIME')
local now = t[1] .. string.format('%06d', tonumber(t[2]))
if not v then return {now, false} end
local a = string.find(v, '\\n', 1, true)
local b = string.find(v, '\\n', a + 1, true)
local c = string.find(v, '\\n', b + 1, true)
if string.sub(v, 1, a - 1) ~= ARGV[2] then return {now, false} end
local tags = string.sub(v, a + 1, b - 1)
local tokens = string.sub(v, b + 1, c - 1)
local want = {}
for tok in string.gmatch(tokens, '%S+') do want[#want + 1] = tok end
local i = 1
for tag in string.gmatch(tags, '%S+') do
  if redis.call('GET', 'rc:t:' .. tag) ~= want[i] then return {now, false} end
  i = i + 1
end
return {now, string.sub(v, c + 1), tags, tokens, redis.call('PTTL', ARGV[1])}
`;

/**
 * ARGV: slot key, key hash, ttl, tag ttl, read start (µs), nonce, body, tags...
 * Returns the tokens recorded (space-separated), or false when a tag changed after the read began
 * or the answer is already older than the TTL. A tag never invalidated gets a token of time 0, so
 * its later invalidation is seen as a change. The entry expires `ttl` after its read began, by
 * Redis's clock: the TTL counts from the fetch, not from the store.
 */
const STORE = `
local start = tonumber(ARGV[5])
local t = redis.call('TIME')
local age = math.floor((tonumber(t[1]) * 1000000 + tonumber(t[2]) - start) / 1000)
local px = tonumber(ARGV[3]) * 1000 - math.max(0, age)
if px <= 0 then return false end
local tokens = {}
local tags = {}
for i = 8, #ARGV do
  local k = 'rc:t:' .. ARGV[i]
  local tok = redis.call('GET', k)
  if not tok then
    tok = '0:' .. ARGV[6]
    redis.call('SET', k, tok, 'EX', ARGV[4])
  else
    local at = tonumber(string.match(tok, '^(%d+):'))
    -- One second of margin against Redis's clock stepping back.
    if at == nil or at >= start - 1000000 then return false end
    redis.call('EXPIRE', k, ARGV[4])
  end
  tokens[#tokens + 1] = tok
  tags[#tags + 1] = ARGV[i]
end
local recorded = table.concat(tokens, ' ')
redis.call('SET', ARGV[1], ARGV[2] .. '\\n' .. table.concat(tags, ' ') .. '\\n' .. recorded .. '\\n' .. ARGV[7], 'PX', px)
return recorded
`;

/** ARGV: tag ttl, nonce, tags... Every tag gets a new token stamped with Redis's clock. */
const INVALIDATE = `
local t = redis.call('TIME')
local tok = t[1] .. string.format('%06d', tonumber(t[2])) .. ':' .. ARGV[2]
for i = 3, #ARGV do
  redis.call('SET', 'rc:t:' .. ARGV[i], tok, 'EX', ARGV[1])
end
return #ARGV - 2
`;

/**
 * KEYS: slot keys. Deletes each entry that can no longer be served (a tag's token is not the one
 * it recorded): an invalidated entry would otherwise keep its bytes, e.g. an erased person's id,
 * until its TTL. The same test as READ, so a live entry is never deleted. Returns how many went.
 */
const SWEEP = `
local deleted = 0
for _, key in ipairs(KEYS) do
  local v = redis.call('GET', key)
  if v then
    local a = string.find(v, '\\n', 1, true)
    local b = a and string.find(v, '\\n', a + 1, true)
    local c = b and string.find(v, '\\n', b + 1, true)
    local stale = c == nil
    if not stale then
      local want = {}
      for tok in string.gmatch(string.sub(v, b + 1, c - 1), '%S+') do want[#want + 1] = tok end
      local i = 1
      for tag in string.gmatch(string.sub(v, a + 1, b - 1), '%S+') do
        if redis.call('GET', 'rc:t:' .. tag) ~= want[i] then stale = true break end
        i = i + 1
      end
    end
    if stale then
      redis.call('DEL', key)
      deleted = deleted + 1
    end
  end
end
return deleted
`;

/** Slot keys one SWEEP call reads at most: each call is short, so Redis never blocks for long. */
export const SWEEP_BATCH = 256;

export interface RedisStoreOptions {
  ttlSeconds: number;
  slots: number;
  /** Slots one tenant's entries use at most: a window of `slots` starting where its id hashes. */
  tenantSlots: number;
}

export interface RedisRead {
  /** Redis's clock when the key was looked up (µs): the start of the read, for `store`. */
  startMicros: string;
  /**
   * The entry, with the milliseconds it has left in Redis: a replica that copies it to its L1
   * keeps it that long, never a fresh TTL (an entry lived 116 s of a 60 s TTL, issue #33).
   */
  hit?: { body: string; tags: string[]; tokens: string[]; remainingMs: number };
}

/** The scripts as commands: sent by SHA (EVALSHA), the script text only when Redis lacks it. */
interface ScriptCommands {
  rcRead(slotKey: string, keyHash: string): Promise<[string, string | null, string?, string?, number?]>;
  rcStore(...args: string[]): Promise<string | null>;
  rcInvalidate(...args: string[]): Promise<number>;
  rcSweep(keyCount: number, ...keys: string[]): Promise<number>;
}

export class RedisStore {
  private readonly tagTtlSeconds: number;
  private readonly scripts: ScriptCommands;

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisStoreOptions,
    private readonly nonce: () => string,
  ) {
    // A tag outlives every entry that recorded its token (entries live ttlSeconds), with margin
    // for a read in flight; a tag that expires anyway only costs misses.
    this.tagTtlSeconds = options.ttlSeconds * 2 + 60;
    redis.defineCommand('rcRead', { numberOfKeys: 0, lua: READ });
    redis.defineCommand('rcStore', { numberOfKeys: 0, lua: STORE });
    redis.defineCommand('rcInvalidate', { numberOfKeys: 0, lua: INVALIDATE });
    redis.defineCommand('rcSweep', { lua: SWEEP });
    this.scripts = redis as unknown as ScriptCommands;
  }

  /**
   * The slot of an entry: within its tenant's window of `tenantSlots` consecutive slots, so one
   * tenant's churn (e.g. many distinct variables) overwrites only its own window, never the whole
   * cache. Windows of tenants may overlap; a tenant still holds at most `tenantSlots` keys.
   */
  slotOf(keyHash: string, tenantId: string): string {
    const within = Number.parseInt(keyHash.slice(0, 8), 16) % this.windowSize();
    return `rc:e:${(this.windowStart(tenantId) + within) % this.options.slots}`;
  }

  private windowStart(tenantId: string): number {
    return Number.parseInt(sha256Hex(tenantId).slice(0, 8), 16);
  }

  private windowSize(): number {
    return Math.min(this.options.tenantSlots, this.options.slots);
  }

  /**
   * Deletes the entries that can no longer be served in the slots of `tenants` (their windows) or
   * of every tenant: an invalidation only changes tag tokens, and the dropped entries' bytes would
   * stay until their TTL. Bounded: the windows' slots, SWEEP_BATCH per call, no KEYS or SCAN (the
   * slots are known). Idempotent, so every replica hearing the same event may run it. Returns how
   * many entries were deleted.
   */
  async sweep(tenants: 'all' | ReadonlySet<string>): Promise<number> {
    const slots = new Set<number>();
    if (tenants === 'all') for (let slot = 0; slot < this.options.slots; slot++) slots.add(slot);
    else
      for (const tenantId of tenants) {
        const start = this.windowStart(tenantId);
        for (let i = 0; i < this.windowSize(); i++) slots.add((start + i) % this.options.slots);
      }
    const keys = [...slots].map((slot) => `rc:e:${slot}`);
    let deleted = 0;
    for (let i = 0; i < keys.length; i += SWEEP_BATCH) {
      const batch = keys.slice(i, i + SWEEP_BATCH);
      deleted += await this.scripts.rcSweep(batch.length, ...batch);
    }
    return deleted;
  }

  async read(keyHash: string, tenantId: string): Promise<RedisRead> {
    const [startMicros, body, tags, tokens, remainingMs] = await this.scripts.rcRead(this.slotOf(keyHash, tenantId), keyHash);
    // PTTL is -1 for a key without expiry (never written so here) and -2 for one gone: no time left.
    return body
      ? {
          startMicros,
          hit: {
            body,
            tags: (tags ?? '').split(' '),
            tokens: (tokens ?? '').split(' '),
            remainingMs: Math.max(0, remainingMs ?? 0),
          },
        }
      : { startMicros };
  }

  /** The token each tag holds now (undefined when its key is gone), in one round trip. */
  async tokens(tags: readonly string[]): Promise<Array<string | undefined>> {
    const values = await this.redis.mget(tags.map((tag) => `rc:t:${tag}`));
    return values.map((value) => value ?? undefined);
  }

  /** The tokens recorded, or undefined when the answer was already stale (not stored). */
  async store(
    keyHash: string,
    tenantId: string,
    startMicros: string,
    body: string,
    tags: readonly string[],
  ): Promise<string[] | undefined> {
    const recorded = await this.scripts.rcStore(
      this.slotOf(keyHash, tenantId),
      keyHash,
      String(this.options.ttlSeconds),
      String(this.tagTtlSeconds),
      startMicros,
      this.nonce(),
      body,
      ...tags,
    );
    return recorded ? recorded.split(' ') : undefined;
  }

  async invalidate(tags: readonly string[]): Promise<void> {
    await this.scripts.rcInvalidate(String(this.tagTtlSeconds), this.nonce(), ...tags);
  }
}
