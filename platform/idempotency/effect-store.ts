import { systemClock, type Clock } from '../clock.js';
import { insertSql, type Column } from '../db/bulk-sql.js';
import { Prisma, type Db, type Tx } from '../db/database.js';
import { prepared } from '../db/prepared.js';
import { AppError } from '../errors/errors.js';
import type { Logger } from '../observability/logger.js';
import { decodeEffectValue, encodeEffectValue, type EffectClaim } from './effect.logic.js';

type Client = Db | Tx;

/** Expired effect rows are deleted at most this often, piggybacking on keyed mutations. */
const SWEEP_EVERY_MS = 60_000;
let lastSweep = 0;

/**
 * The recorded result of the claim's key, if a live one exists. A row under the key for another
 * request is the client's mistake: 422 `idempotency.key_reused`, as at the gateway.
 */
export async function findEffect<T>(client: Client, claim: EffectClaim, now: Date): Promise<{ value: T } | undefined> {
  const rows = await client.$queryRaw<Array<{ fingerprint: string; value: string; expiresAt: Date }>>(
    prepared(
      'effect_lookup',
      Prisma.sql`SELECT fingerprint, value::text AS value, "expiresAt" FROM "IdempotentEffect" WHERE key = ${claim.key}`,
    ),
  );
  const row = rows[0];
  if (!row || row.expiresAt.getTime() <= now.getTime()) return undefined;
  if (row.fingerprint !== claim.fingerprint) {
    throw new AppError('idempotency.key_reused', 'This Idempotency-Key was already used for a different request');
  }
  return { value: decodeEffectValue<T>(row.value) };
}

/**
 * The effect row's INSERT, `RETURNING 1` when it was written: nothing is returned when a live row
 * already holds the key (another execution of the same request committed first); an expired row
 * is replaced. ON CONFLICT waits for a concurrent holder's transaction to end, so the answer is
 * never a guess. Usable as a CTE that other writes of the same statement depend on.
 */
export function effectInsertSql(claim: EffectClaim, value: unknown, now: Date): Prisma.Sql {
  const expiresAt = new Date(now.getTime() + claim.ttlSeconds * 1000);
  return Prisma.sql`
    INSERT INTO "IdempotentEffect" (key, fingerprint, value, "createdAt", "expiresAt")
    VALUES (${claim.key}, ${claim.fingerprint}, ${encodeEffectValue(value)}::jsonb,
      (${now.toISOString()}::timestamptz AT TIME ZONE 'UTC'), (${expiresAt.toISOString()}::timestamptz AT TIME ZONE 'UTC'))
    ON CONFLICT (key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, value = EXCLUDED.value,
      "createdAt" = EXCLUDED."createdAt", "expiresAt" = EXCLUDED."expiresAt"
    WHERE "IdempotentEffect"."expiresAt" <= EXCLUDED."createdAt"
    RETURNING 1`;
}

/** One request's effect in a statement written for several (a group commit). */
export interface EffectEntry {
  claim: EffectClaim;
  value: unknown;
  now: Date;
}

const EFFECT_COLUMNS: readonly Column<EffectEntry>[] = [
  { name: 'key', type: 'text', value: (entry) => entry.claim.key },
  { name: 'fingerprint', type: 'text', value: (entry) => entry.claim.fingerprint },
  // The tagged JSON of encodeEffectValue, as the jsonb value the record set carries.
  { name: 'value', type: 'jsonb', value: (entry) => JSON.parse(encodeEffectValue(entry.value)) as unknown },
  { name: 'createdAt', type: 'timestamp', value: (entry) => entry.now },
  { name: 'expiresAt', type: 'timestamp', value: (entry) => new Date(entry.now.getTime() + entry.claim.ttlSeconds * 1000) },
];

/**
 * effectInsertSql for the effects of several requests in one statement, `RETURNING key` of each
 * row written (the same rule: a live row under a key keeps it, an expired one is replaced). Two
 * entries must not share a key: an upsert may not touch one row twice (the group commit keeps such
 * entries in separate batches). Without entries it writes nothing, as a CTE of such a statement.
 */
export function effectsInsertSql(entries: readonly EffectEntry[], onlyIf?: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`${insertSql('IdempotentEffect', EFFECT_COLUMNS, entries, { allowEmpty: true, onlyIf })}
    ON CONFLICT (key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, value = EXCLUDED.value,
      "createdAt" = EXCLUDED."createdAt", "expiresAt" = EXCLUDED."expiresAt"
    WHERE "IdempotentEffect"."expiresAt" <= EXCLUDED."createdAt"
    RETURNING key`;
}

/** Writes the effect row; false when a live row already holds the key. */
export async function insertEffect(tx: Client, claim: EffectClaim, value: unknown, now: Date): Promise<boolean> {
  return (await tx.$executeRaw(effectInsertSql(claim, value, now))) === 1;
}

/**
 * The answer for an execution that lost its key to another one (its own writes rolled back or
 * never made): the winner's recorded result, or `idempotency.in_flight` in the one case where
 * that is already gone (a TTL shorter than a request).
 */
export async function effectOfWinner<T>(db: Db, claim: EffectClaim, now: Date): Promise<T> {
  const recorded = await findEffect<T>(db, claim, now);
  if (recorded) return recorded.value;
  throw winnerGone();
}

const winnerGone = () =>
  new AppError('idempotency.in_flight', 'A request with this Idempotency-Key is still being processed', {
    headers: { 'retry-after': '1' },
  });

/**
 * The lookup alone, for a mutation with work to skip before its transaction (assist calls a
 * provider first): the recorded result under the claim's key, if any. Finding one settles the
 * claim (the answer is the recorded effect).
 */
export async function recordedEffect<T>(
  db: Db,
  claim: EffectClaim | undefined,
  now: Date = new Date(),
): Promise<{ value: T } | undefined> {
  if (!claim) return undefined;
  const recorded = await findEffect<T>(db, claim, now);
  if (recorded) claim.consumed = true;
  return recorded;
}

/** Thrown inside the transaction to roll back an execution that lost the key to another one. */
class EffectTaken extends Error {}

export interface KeyedTransactionOptions {
  clock?: Clock;
  /**
   * Skip the lookup inside the transaction: for a caller that looked the key up itself just
   * before (recordedEffect) and whose work cannot be refused because the effect exists.
   */
  skipLookup?: boolean;
  logger?: Logger;
  maxWait?: number;
  timeout?: number;
}

/**
 * `db.$transaction(work)` with the Idempotency-Key of the request, when it has one: a recorded
 * effect under the key is answered without running `work`; otherwise `work` runs and its result
 * is recorded in the same transaction, so effect and key commit together or not at all. Two
 * executions racing for one key (a retry after the gateway's lease ran out while the first still
 * ran) both run, but only the first to commit keeps its writes; the other answers its result.
 */
export async function keyedTransaction<T>(
  db: Db,
  claim: EffectClaim | undefined,
  work: (tx: Tx) => Promise<T>,
  options: KeyedTransactionOptions = {},
): Promise<T> {
  const now = () => (options.clock ?? systemClock).now();
  const txOptions = { maxWait: options.maxWait, timeout: options.timeout };
  if (!claim) return db.$transaction(work, txOptions);
  claim.consumed = true;
  sweepExpired(db, now(), options.logger);
  try {
    return await db.$transaction(async (tx) => {
      const at = now();
      const recorded = options.skipLookup ? undefined : await findEffect<T>(tx, claim, at);
      if (recorded) return recorded.value;
      const value = await work(tx);
      if (!(await insertEffect(tx, claim, value, at))) throw new EffectTaken();
      return value;
    }, txOptions);
  } catch (error) {
    // The racing execution may also surface as a domain refusal (its uncommitted rule made ours a
    // CONFLICT): whenever this one fails, an effect committed under the key meanwhile is the answer.
    let recorded: { value: T } | undefined;
    try {
      recorded = await findEffect<T>(db, claim, now());
    } catch (lookupError) {
      if (lookupError instanceof AppError) throw lookupError;
      throw error;
    }
    if (recorded) return recorded.value;
    // Lost the key, yet the winner's row is already gone: only with a TTL shorter than a request.
    throw error instanceof EffectTaken ? winnerGone() : error;
  }
}

function sweepExpired(db: Db, at: Date, logger: Logger | undefined): void {
  if (at.getTime() - lastSweep < SWEEP_EVERY_MS) return;
  lastSweep = at.getTime();
  db.idempotentEffect
    .deleteMany({ where: { expiresAt: { lt: at } } })
    .catch((error: unknown) => logger?.warn({ err: error }, 'idempotent effect sweep failed'));
}
