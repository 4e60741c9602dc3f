import { deleteInBatches } from '../platform/db/batched-delete.js';
import { Prisma, type Db, type Tx } from '../platform/db/database.js';

/**
 * Records that `consumer` handled `eventId`, in the handler's transaction. False means the event
 * was handled before (a redelivery, a duplicate publish, a replay): the caller skips the handler.
 * A concurrent delivery of the same event waits on the primary key until the first transaction
 * ends, then sees the row, so two replicas never both apply one event.
 */
export async function recordInbox(tx: Tx, entry: { consumer: string; eventId: string; subject: string }): Promise<boolean> {
  return (await recordInboxBatch(tx, entry.consumer, [entry])).has(entry.eventId);
}

/**
 * recordInbox for several events in one statement: the ids of those handled for the first time.
 * Rows go in id order, so two batches sharing events wait for each other in one order, never in a
 * cycle.
 */
export async function recordInboxBatch(
  tx: Tx,
  consumer: string,
  entries: ReadonlyArray<{ eventId: string; subject: string }>,
): Promise<Set<string>> {
  if (!entries.length) return new Set();
  const sorted = [...entries].sort((a, b) => (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0));
  const inserted = await tx.$queryRaw<Array<{ eventId: string }>>`
    INSERT INTO "InboxEvent" (consumer, "eventId", subject)
    VALUES ${Prisma.join(sorted.map((e) => Prisma.sql`(${consumer}, ${e.eventId}, ${e.subject})`))}
    ON CONFLICT (consumer, "eventId") DO NOTHING RETURNING "eventId"`;
  return new Set(inserted.map((row) => row.eventId));
}

/** The inbox consumer key under which `durable`'s dead letters are marked (see order-hold.logic.ts). */
export function deadLetterConsumer(durable: string): string {
  return `dead-letter:${durable}`;
}

/**
 * Records that `durable` dead-lettered a message (`mark` = its stream sequence and event id), so
 * later messages of its key waiting for it go ahead. A separate consumer key: the event itself
 * stays unhandled, and a replay of it is handled as usual.
 */
export async function recordDeadLetterMark(db: Db | Tx, durable: string, mark: string, subject: string): Promise<void> {
  await db.$executeRaw`
    INSERT INTO "InboxEvent" (consumer, "eventId", subject) VALUES (${deadLetterConsumer(durable)}, ${mark}, ${subject})
    ON CONFLICT (consumer, "eventId") DO NOTHING`;
}

/** Which of `eventIds` `durable` handled, and which of `marks` it dead-lettered, in one statement. */
export async function settledAmong(
  db: Db | Tx,
  durable: string,
  eventIds: readonly string[],
  marks: readonly string[],
): Promise<{ handled: Set<string>; deadLettered: Set<string> }> {
  const handled = new Set<string>();
  const deadLettered = new Set<string>();
  if (!eventIds.length && !marks.length) return { handled, deadLettered };
  const none = Prisma.sql`NULL`;
  const rows = await db.$queryRaw<Array<{ consumer: string; eventId: string }>>`
    SELECT consumer, "eventId" FROM "InboxEvent"
     WHERE (consumer = ${durable} AND "eventId" IN (${eventIds.length ? Prisma.join(eventIds) : none}))
        OR (consumer = ${deadLetterConsumer(durable)} AND "eventId" IN (${marks.length ? Prisma.join(marks) : none}))`;
  for (const row of rows) (row.consumer === durable ? handled : deadLettered).add(row.eventId);
  return { handled, deadLettered };
}

export async function inboxHas(db: Db | Tx, consumer: string, eventId: string): Promise<boolean> {
  return (await db.inboxEvent.count({ where: { consumer, eventId } })) > 0;
}

/**
 * Inbox rows only need to outlive every way an event can come back: the stream's hot retention
 * and the archive replay. Callers pick `before` accordingly.
 */
export async function purgeInbox(db: Db, before: Date, batchSize = 5_000): Promise<number> {
  // In batches, as purgeArchive: a year of rows in one DELETE would hold its locks for minutes.
  return deleteInBatches(
    batchSize,
    (limit) => db.$executeRaw`
      DELETE FROM "InboxEvent" WHERE (consumer, "eventId") IN (
        SELECT consumer, "eventId" FROM "InboxEvent" WHERE "processedAt" < ${before} ORDER BY "processedAt" LIMIT ${limit})`,
  );
}
