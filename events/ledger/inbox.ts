import { deleteInBatches } from '../../platform/db/batched-delete.js';
import { keyTuplesSql } from '../../platform/db/bulk-sql.js';
import { Prisma, type Db, type Tx } from '../../platform/db/database.js';
import { eventKey } from './event-key.logic.js';

/** One consumed event as the inbox knows it: producers choose event ids, so an id names an event only within its tenant. */
export interface InboxEntry {
  tenantId: string;
  eventId: string;
  subject: string;
}

/**
 * The tenant of inbox rows written before the tenant was recorded (migration
 * 20261126100000_inbox_tenant): nothing in them names it, so such a row matches its event id in
 * every tenant, as it did when it was written. Dead-letter marks use it too (their key is a
 * stream sequence, which no tenant shares).
 */
export const ANY_TENANT = '';

/**
 * Records that `consumer` handled the event, in the handler's transaction. False means the event
 * was handled before (a redelivery, a duplicate publish, a replay): the caller skips the handler.
 * A concurrent delivery of the same event waits on the primary key until the first transaction
 * ends, then sees the row, so two replicas never both apply one event.
 */
export async function recordInbox(tx: Tx, entry: InboxEntry & { consumer: string }): Promise<boolean> {
  return (await recordInboxBatch(tx, entry.consumer, [entry])).has(eventKey(entry));
}

/**
 * recordInbox for several events in one statement: the eventKeys (event-key.logic.ts) of
 * those handled for the first time. Rows go in key order, so two batches sharing events wait for
 * each other in one order, never in a cycle. A row from before the tenant was recorded (ANY_TENANT) with the same event id
 * counts as handled; no such row is written any more, so reading it outside the key lock is safe.
 */
export async function recordInboxBatch(tx: Tx, consumer: string, entries: readonly InboxEntry[]): Promise<Set<string>> {
  if (!entries.length) return new Set();
  const sorted = [...entries].sort((a, b) => compareKeys(eventKey(a), eventKey(b)));
  const rows = Prisma.join(
    sorted.map((e, i) => Prisma.sql`(${e.tenantId}::text, ${e.eventId}::text, ${e.subject}::text, ${i}::int)`),
  );
  const inserted = await tx.$queryRaw<Array<{ tenantId: string; eventId: string }>>`
    INSERT INTO "InboxEvent" (consumer, "tenantId", "eventId", subject)
    SELECT ${consumer}::text, v.tenant, v.event, v.subject FROM (VALUES ${rows}) AS v(tenant, event, subject, ordinal)
     WHERE NOT EXISTS (
       SELECT 1 FROM "InboxEvent" legacy
        WHERE legacy.consumer = ${consumer} AND legacy."tenantId" = ${ANY_TENANT} AND legacy."eventId" = v.event)
     ORDER BY v.ordinal
    ON CONFLICT (consumer, "tenantId", "eventId") DO NOTHING RETURNING "tenantId", "eventId"`;
  return new Set(inserted.map(eventKey));
}

const compareKeys = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

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
    INSERT INTO "InboxEvent" (consumer, "tenantId", "eventId", subject)
    VALUES (${deadLetterConsumer(durable)}, ${ANY_TENANT}, ${mark}, ${subject})
    ON CONFLICT (consumer, "tenantId", "eventId") DO NOTHING`;
}

/**
 * Which of `events` `durable` handled (as eventKeys), and which of `marks` it dead-lettered, in
 * one statement. A row from before the tenant was recorded settles its event id in every tenant.
 */
export async function settledAmong(
  db: Db | Tx,
  durable: string,
  events: ReadonlyArray<{ tenantId: string; eventId: string }>,
  marks: readonly string[],
): Promise<{ handled: Set<string>; deadLettered: Set<string> }> {
  const handled = new Set<string>();
  const deadLettered = new Set<string>();
  if (!events.length && !marks.length) return { handled, deadLettered };
  const none = Prisma.sql`NULL`;
  // Each event's own key and its key from before tenants were recorded: whole primary-key probes.
  const keys = events.flatMap((e) => [e, { tenantId: ANY_TENANT, eventId: e.eventId }]);
  const rows = await db.$queryRaw<Array<{ consumer: string; tenantId: string; eventId: string }>>`
    SELECT consumer, "tenantId", "eventId" FROM "InboxEvent"
     WHERE (consumer = ${durable} AND ("tenantId", "eventId") IN (${
       keys.length
         ? keyTuplesSql(
             keys,
             (k) => k.tenantId,
             (k) => k.eventId,
           )
         : Prisma.sql`(NULL, NULL)`
     }))
        OR (consumer = ${deadLetterConsumer(durable)} AND "tenantId" = ${ANY_TENANT}
            AND "eventId" IN (${marks.length ? Prisma.join(marks) : none}))`;
  const found = new Set(rows.filter((row) => row.consumer === durable).map(eventKey));
  for (const event of events) {
    if (found.has(eventKey(event)) || found.has(eventKey({ tenantId: ANY_TENANT, eventId: event.eventId })))
      handled.add(eventKey(event));
  }
  for (const row of rows) if (row.consumer !== durable) deadLettered.add(row.eventId);
  return { handled, deadLettered };
}

export async function inboxHas(db: Db | Tx, consumer: string, event: { tenantId: string; eventId: string }): Promise<boolean> {
  const tenantId = { in: [event.tenantId, ANY_TENANT] };
  return (await db.inboxEvent.count({ where: { consumer, tenantId, eventId: event.eventId } })) > 0;
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
      DELETE FROM "InboxEvent" WHERE (consumer, "tenantId", "eventId") IN (
        SELECT consumer, "tenantId", "eventId" FROM "InboxEvent" WHERE "processedAt" < ${before} ORDER BY "processedAt" LIMIT ${limit})`,
  );
}
