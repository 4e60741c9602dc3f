import type { Redis } from 'ioredis';
import { Prisma, type Tx } from '../db/database.js';
import { ERASED_USER_ID } from '../ids.js';
import { effectCallerPrefix, effectTenantPrefix } from './effect.logic.js';
import { callerKeyPrefix, tenantKeyPrefix } from './idempotency.logic.js';
import { IDEMPOTENCY_REDIS_PREFIX } from './redis-store.js';

/*
 * A GDPR erasure of a user in a tenant, applied to what is kept for Idempotency-Key retries: the
 * gateway's records (the IdempotencyRecord table, and the state Redis when REDIS_URL is set) and
 * the subgraphs' effect rows (IdempotentEffect).
 *
 * - Records of the subject's own requests are deleted. Their key names the caller, and a record
 *   with its caller zeroed could answer nobody: the subject's retry computes its key from its own
 *   id, so it would run again either way. Deleting keeps no dead copy of what the person did.
 * - Records of other callers whose stored answer quotes the subject (an admin's mutation that
 *   returned the subject as author) keep answering their caller's retry, with the id zeroed: what
 *   a fresh read would show after the erasure.
 *
 * Both whatever the tenant's retention class: these are copies of answers kept for a day, not the
 * records a class protects (those keep the id where the class says so).
 */

export interface IdempotencySubject {
  tenantId: string;
  userId: string;
}

export interface IdempotencyRecordsErased {
  deleted: number;
  rewritten: number;
}

/** The tenant's records in the database: the subject's deleted, others' answers quoting it zeroed. */
export async function eraseSubjectFromIdempotencyTables(tx: Tx, subject: IdempotencySubject): Promise<IdempotencyRecordsErased> {
  const { tenantId, userId } = subject;
  const own = callerKeyPrefix(tenantId, userId);
  const tenant = tenantKeyPrefix(tenantId);
  const ownEffect = effectCallerPrefix(tenantId, userId);
  const tenantEffect = effectTenantPrefix(tenantId);
  const deleted =
    (await tx.$executeRaw`DELETE FROM "IdempotencyRecord" WHERE starts_with(key, ${own})`) +
    (await tx.$executeRaw`DELETE FROM "IdempotentEffect" WHERE starts_with(key, ${ownEffect})`);
  const rewritten =
    (await tx.$executeRaw(Prisma.sql`
      UPDATE "IdempotencyRecord"
         SET body = replace(body, ${userId}, ${ERASED_USER_ID}),
             headers = replace(headers::text, ${userId}, ${ERASED_USER_ID})::jsonb
       WHERE starts_with(key, ${tenant})
         AND (strpos(body, ${userId}) > 0 OR strpos(headers::text, ${userId}) > 0)`)) +
    (await tx.$executeRaw(Prisma.sql`
      UPDATE "IdempotentEffect" SET value = replace(value::text, ${userId}, ${ERASED_USER_ID})::jsonb
       WHERE starts_with(key, ${tenantEffect}) AND strpos(value::text, ${userId}) > 0`));
  return { deleted, rewritten };
}

/**
 * KEYS: one tenant's records. ARGV: the subject's key prefix, the id, the zero id. A record of the
 * subject's is deleted; another record whose text quotes the id has every occurrence replaced
 * (plain text: a user id holds nothing JSON escapes), keeping its expiry.
 */
const ERASE = `
local deleted, rewritten = 0, 0
for _, key in ipairs(KEYS) do
  if string.sub(key, 1, #ARGV[1]) == ARGV[1] then
    deleted = deleted + redis.call('DEL', key)
  else
    local v = redis.call('GET', key)
    if v and string.find(v, ARGV[2], 1, true) then
      local out, from = {}, 1
      while true do
        local s, e = string.find(v, ARGV[2], from, true)
        if not s then break end
        out[#out + 1] = string.sub(v, from, s - 1)
        out[#out + 1] = ARGV[3]
        from = e + 1
      end
      out[#out + 1] = string.sub(v, from)
      redis.call('SET', key, table.concat(out), 'KEEPTTL')
      rewritten = rewritten + 1
    end
  end
end
return {deleted, rewritten}
`;

/** Keys SCAN is asked for per call, and so at most per ERASE call: each step is short. */
const SCAN_COUNT = 500;

/** A glob pattern matching `text` literally. */
const globLiteral = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&');

/**
 * The tenant's records in the state Redis, with the same rule as the tables. SCAN walks the whole
 * keyspace of that Redis (no index names a tenant's records), SCAN_COUNT keys per step, never KEYS.
 */
export async function eraseSubjectFromIdempotencyRedis(
  redis: Redis,
  subject: IdempotencySubject,
  prefix = IDEMPOTENCY_REDIS_PREFIX,
): Promise<IdempotencyRecordsErased> {
  const own = prefix + callerKeyPrefix(subject.tenantId, subject.userId);
  const pattern = `${globLiteral(prefix + tenantKeyPrefix(subject.tenantId))}*`;
  const erased = { deleted: 0, rewritten: 0 };
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
    cursor = next;
    if (keys.length === 0) continue;
    const [deleted, rewritten] = (await redis.eval(ERASE, keys.length, ...keys, own, subject.userId, ERASED_USER_ID)) as [
      number,
      number,
    ];
    erased.deleted += deleted;
    erased.rewritten += rewritten;
  } while (cursor !== '0');
  return erased;
}
