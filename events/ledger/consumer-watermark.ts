import type { Db } from '../../platform/db/database.js';

/**
 * The producer-order guard's floor, per durable consumer: every message of the consumer's subject
 * at or below `settledThrough` is settled by the consumer's own records (events/ordering/order-guard.ts).
 * Shared by every replica through the database, so a restarted worker starts where the others are.
 */

/** The stored floor, or undefined before the consumer's first. */
export async function readSettledThrough(db: Db, durable: string): Promise<number | undefined> {
  const rows = await db.$queryRaw<Array<{ settledThrough: bigint }>>`
    SELECT "settledThrough" FROM "ConsumerWatermark" WHERE consumer = ${durable}`;
  return rows.length ? Number(rows[0].settledThrough) : undefined;
}

/** Raises the stored floor to `seq` (never lowers it: another replica may have gone further). */
export async function raiseSettledThrough(db: Db, durable: string, seq: number, at: Date): Promise<void> {
  await db.$executeRaw`
    INSERT INTO "ConsumerWatermark" (consumer, "settledThrough", "updatedAt") VALUES (${durable}, ${BigInt(seq)}, ${at})
    ON CONFLICT (consumer) DO UPDATE
      SET "settledThrough" = GREATEST("ConsumerWatermark"."settledThrough", EXCLUDED."settledThrough"),
          "updatedAt" = EXCLUDED."updatedAt"`;
}

/** Sets the stored floor to `seq` even when lower: only for a stream that was recreated (its sequences start again). */
export async function resetSettledThrough(db: Db, durable: string, seq: number, at: Date): Promise<void> {
  await db.$executeRaw`
    INSERT INTO "ConsumerWatermark" (consumer, "settledThrough", "updatedAt") VALUES (${durable}, ${BigInt(seq)}, ${at})
    ON CONFLICT (consumer) DO UPDATE SET "settledThrough" = EXCLUDED."settledThrough", "updatedAt" = EXCLUDED."updatedAt"`;
}
