import { systemClock } from '../clock.js';
import { randomUUID } from 'node:crypto';
import type { Db } from '../db/database.js';
import type { Logger } from '../observability/logger.js';
import { classifyExisting, type StoredResponse } from './idempotency.logic.js';
import type { BeginOutcome, IdempotencyStore, Lease, StoreTiming } from './store.js';

const IN_FLIGHT = 'in_flight';
const COMPLETED = 'completed';
/** Expired rows are deleted at most this often, piggybacking on requests (no timer to stop). */
const SWEEP_EVERY_MS = 60_000;

/**
 * The embedded store: the IdempotencyRecord table, so keys survive a restart without Redis. The
 * table has no lease column; while a request runs, `headers` holds `{ lease: token }` and is
 * replaced by the response headers on completion.
 *
 * `begin` is a sequence of single-row atomic statements, each safe under concurrency: insert (ON
 * CONFLICT DO NOTHING), else take over an expired row (conditional UPDATE: Postgres re-checks the
 * condition after the row lock), else read what holds the key.
 */
export function createDatabaseIdempotencyStore(db: Db, timing: StoreTiming, logger?: Logger): IdempotencyStore {
  const clock = timing.clock ?? systemClock;
  const now = () => clock.now().getTime();
  let lastSweep = 0;

  const sweep = () => {
    const at = now();
    if (at - lastSweep < SWEEP_EVERY_MS) return;
    lastSweep = at;
    db.idempotencyRecord
      .deleteMany({ where: { expiresAt: { lt: new Date(at) } } })
      .catch((error: unknown) => logger?.warn({ err: error }, 'idempotency sweep failed'));
  };

  const settle = async (
    lease: Lease,
    data: { state: string; status: number; headers: Record<string, string>; body: string; expiresAt: Date } | undefined,
  ) => {
    const where = { key: lease.key, state: IN_FLIGHT, headers: { path: ['lease'], equals: lease.token } };
    const result = data
      ? await db.idempotencyRecord.updateMany({ where, data })
      : await db.idempotencyRecord.deleteMany({ where });
    return result.count === 1;
  };

  return {
    kind: 'database',
    leaseMs: timing.leaseSeconds * 1000,
    async begin(key: string, fingerprint: string): Promise<BeginOutcome> {
      sweep();
      // A row can expire or vanish between the steps; a few rounds always settle it.
      for (let round = 0; round < 5; round++) {
        const outcome = await beginRound(db, { key, fingerprint, at: new Date(now()), leaseMs: timing.leaseSeconds * 1000 });
        if (outcome) return outcome;
      }
      throw new Error(`idempotency key ${key} kept changing under begin`);
    },
    complete(lease: Lease, response: StoredResponse) {
      const expiresAt = new Date(now() + timing.ttlSeconds * 1000);
      return settle(lease, {
        state: COMPLETED,
        status: response.status,
        headers: response.headers,
        body: response.body,
        expiresAt,
      });
    },
    release(lease: Lease) {
      return settle(lease, undefined);
    },
    async renew(lease: Lease) {
      const at = now();
      const renewed = await db.idempotencyRecord.updateMany({
        where: {
          key: lease.key,
          state: IN_FLIGHT,
          headers: { path: ['lease'], equals: lease.token },
          expiresAt: { gt: new Date(at) },
        },
        data: { expiresAt: new Date(at + timing.leaseSeconds * 1000) },
      });
      return renewed.count === 1;
    },
  };
}

/**
 * One round of `begin`: insert a leased row, else take over an expired one, else classify the row
 * that holds the key. Undefined when the row expired or vanished meanwhile (try again).
 */
async function beginRound(
  db: Db,
  round: { key: string; fingerprint: string; at: Date; leaseMs: number },
): Promise<BeginOutcome | undefined> {
  const { key, fingerprint, at } = round;
  const token = randomUUID();
  const leased = {
    fingerprint,
    state: IN_FLIGHT,
    status: null,
    headers: { lease: token },
    body: null,
    createdAt: at,
    expiresAt: new Date(at.getTime() + round.leaseMs),
  };
  const lease = { key, token, fingerprint };
  const inserted = await db.idempotencyRecord.createMany({ data: [{ key, ...leased }], skipDuplicates: true });
  if (inserted.count === 1) return { kind: 'started', lease };
  const takenOver = await db.idempotencyRecord.updateMany({ where: { key, expiresAt: { lte: at } }, data: leased });
  if (takenOver.count === 1) return { kind: 'started', lease };
  const row = await db.idempotencyRecord.findUnique({ where: { key } });
  if (!row || row.expiresAt.getTime() <= at.getTime()) return undefined;
  const response: StoredResponse | undefined =
    row.state === COMPLETED && row.status !== null && row.body !== null
      ? { status: row.status, headers: (row.headers ?? {}) as Record<string, string>, body: row.body }
      : undefined;
  return classifyExisting(
    { fingerprint: row.fingerprint, state: response ? COMPLETED : IN_FLIGHT, response, expiresAt: row.expiresAt.getTime() },
    fingerprint,
    at.getTime(),
  );
}
