import { deleteInBatches } from '../../platform/db/batched-delete.js';
import { Prisma, type Db } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors/errors.js';
import type { EventBus } from '../bus/event-bus.js';
import { oneLine } from '../error-text.logic.js';

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

export interface ArchiveReplayFilter {
  /** On `createdAt` (when the event was written to the outbox): at or after `since`, before `until`. */
  since: Date;
  until: Date;
  tenantId?: string;
  eventType?: string;
}

export interface ArchiveReplayOptions {
  /** Count what would be replayed; publish nothing. */
  dryRun?: boolean;
  /** Prepended to each row's subject, as the relay's `subjectPrefix`. */
  subjectPrefix?: string;
  /** Rows read per statement: what the replay holds at once. */
  pageSize?: number;
}

export interface ArchiveReplayOutcome {
  matched: number;
  /** Stored on their streams by this run. */
  published: number;
  /** Already on their streams within the duplicate window (the original, or an earlier run's copy). */
  duplicates: number;
  firstEventId?: string;
  lastEventId?: string;
}

interface ArchivedRow {
  id: bigint;
  eventId: string;
  subject: string;
  envelope: unknown;
  headers: Record<string, string> | null;
}

/** One page of the archive after `afterId`, in id (commit-safe publish) order. */
function archivePage(db: Db, filter: ArchiveReplayFilter, afterId: bigint, pageSize: number): Promise<ArchivedRow[]> {
  return db.$queryRaw<ArchivedRow[]>`
    SELECT id, "eventId", subject, envelope, headers FROM "OutboxEvent"
    WHERE "publishedAt" IS NOT NULL AND "createdAt" >= ${filter.since} AND "createdAt" < ${filter.until}
      AND id > ${afterId}
      ${filter.tenantId ? Prisma.sql`AND "tenantId" = ${filter.tenantId}` : Prisma.empty}
      ${filter.eventType ? Prisma.sql`AND "eventType" = ${filter.eventType}` : Prisma.empty}
    ORDER BY id LIMIT ${pageSize}`;
}

/**
 * Operator command (`npm run events:replay-archive`, events/archive/replay-archive.cli.ts): re-publishes
 * archived (already published) events to their subjects, in their original order, reading the
 * archive a page at a time, so memory does not grow with the range. Message ids follow the
 * relay's rule, Nats-Msg-Id = eventId: an event still on its stream within the duplicate window
 * (or sent by an earlier run of the same command) is dropped there and counted as a duplicate, so
 * a run that stopped half-way can simply be run again. The envelope and its eventId are unchanged,
 * so consumers that already processed an event skip it through their inbox and only new or rebuilt
 * projections act on it. Stops at the first event that cannot be published (503, with how far it got).
 */
export async function replayFromArchive(
  db: Db,
  bus: EventBus,
  filter: ArchiveReplayFilter,
  options: ArchiveReplayOptions = {},
): Promise<ArchiveReplayOutcome> {
  const outcome: ArchiveReplayOutcome = { matched: 0, published: 0, duplicates: 0 };
  const pageSize = options.pageSize ?? 500;
  let afterId = 0n;
  for (;;) {
    const page = await archivePage(db, filter, afterId, pageSize);
    for (const row of page) {
      outcome.matched += 1;
      outcome.firstEventId ??= row.eventId;
      outcome.lastEventId = row.eventId;
      if (!options.dryRun) await republish(bus, row, outcome, options.subjectPrefix);
    }
    if (page.length < pageSize) return outcome;
    afterId = page[page.length - 1].id;
  }
}

async function republish(bus: EventBus, row: ArchivedRow, outcome: ArchiveReplayOutcome, subjectPrefix = ''): Promise<void> {
  try {
    const ack = await bus.publish(`${subjectPrefix}${row.subject}`, Buffer.from(JSON.stringify(row.envelope)), {
      msgId: row.eventId,
      headers: { ...(row.headers ?? {}), 'x-replayed-from': 'archive' },
    });
    if (ack.duplicate) outcome.duplicates += 1;
    else outcome.published += 1;
  } catch (error) {
    throw new AppError('events.replay_failed', `Archive replay stopped at ${row.eventId}: ${oneLine(error)}`, {
      status: 503,
      details: { matched: outcome.matched, published: outcome.published, duplicates: outcome.duplicates, stoppedAt: row.eventId },
      cause: error,
    });
  }
}
