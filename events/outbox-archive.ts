import { deleteInBatches } from '../platform/db/batched-delete.js';
import type { Db } from '../platform/db/database.js';
import { AppError } from '../platform/errors.js';
import { newUlid } from '../platform/ids.js';
import type { EventBus } from './bus/event-bus.js';
import { oneLine } from './error-text.logic.js';

// The outbox's cold archive: published rows kept for OUTBOX_ARCHIVE_MONTHS (spec: 13 months).

/** `months` calendar months before `now` (UTC). */
export function monthsBefore(now: Date, months: number): Date {
  const cutoff = new Date(now);
  cutoff.setUTCMonth(cutoff.getUTCMonth() - months);
  return cutoff;
}

/**
 * Deletes published events older than the cold-archive retention (spec: 13 months), `batchSize`
 * rows per statement so no delete holds locks or bloats WAL for long. Unpublished rows are never
 * purged, whatever their age.
 */
export async function purgeArchive(db: Db, now: Date, months: number, batchSize = 5_000): Promise<number> {
  const cutoff = monthsBefore(now, months);
  return deleteInBatches(
    batchSize,
    (limit) => db.$executeRaw`
      DELETE FROM "OutboxEvent" WHERE id IN (
        SELECT id FROM "OutboxEvent" WHERE "publishedAt" < ${cutoff} ORDER BY "publishedAt" LIMIT ${limit})`,
  );
}

export interface ArchiveFilter {
  eventType?: string;
  tenantId?: string;
  partitionKey?: string;
  eventIds?: string[];
  /** On `createdAt`: when the event was written to the outbox. */
  from?: Date;
  to?: Date;
  maxCount?: number;
}

/**
 * Admin operation: re-publishes archived (already published) events to their subjects, in
 * original order. Each gets a NEW Nats-Msg-Id, or the stream would drop it as a duplicate while
 * the window lasts; the envelope and its eventId are unchanged, so consumers that already
 * processed an event skip it through their inbox and only new or rebuilt projections act on it.
 */
export async function replayFromArchive(
  db: Db,
  bus: EventBus,
  filter: ArchiveFilter,
  options: { subjectPrefix?: string } = {},
): Promise<{ matched: number; replayed: number; eventIds: string[] }> {
  const rows = await db.outboxEvent.findMany({
    where: {
      publishedAt: { not: null },
      ...(filter.eventType ? { eventType: filter.eventType } : {}),
      ...(filter.tenantId ? { tenantId: filter.tenantId } : {}),
      ...(filter.partitionKey ? { partitionKey: filter.partitionKey } : {}),
      ...(filter.eventIds ? { eventId: { in: filter.eventIds } } : {}),
      ...(filter.from || filter.to
        ? { createdAt: { ...(filter.from ? { gte: filter.from } : {}), ...(filter.to ? { lt: filter.to } : {}) } }
        : {}),
    },
    orderBy: { id: 'asc' },
    take: filter.maxCount ?? 1_000,
  });
  const eventIds: string[] = [];
  for (const row of rows) {
    try {
      await bus.publish(`${options.subjectPrefix ?? ''}${row.subject}`, Buffer.from(JSON.stringify(row.envelope)), {
        msgId: `${row.eventId}.replay.${newUlid()}`,
        headers: { ...((row.headers as Record<string, string> | null) ?? {}), 'x-replayed-from': 'archive' },
      });
    } catch (error) {
      throw new AppError('events.replay_failed', `Replay stopped at ${row.eventId}: ${oneLine(error)}`, {
        status: 503,
        details: { replayed: eventIds.length, stoppedAt: row.eventId },
        cause: error,
      });
    }
    eventIds.push(row.eventId);
  }
  return { matched: rows.length, replayed: eventIds.length, eventIds };
}
