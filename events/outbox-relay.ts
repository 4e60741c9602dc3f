import { deleteInBatches } from '../platform/db/batched-delete.js';
import { Prisma, type Db, type Tx } from '../platform/db/database.js';
import { AppError } from '../platform/errors.js';
import { newUlid } from '../platform/ids.js';
import type { Logger } from '../platform/logger.js';
import { extractContextFromHeaders, injectTraceHeaders, SpanKind, withSpan } from '../platform/telemetry.js';
import type { EventBus } from './bus/event-bus.js';
import { systemClock, type Clock } from '../platform/clock.js';
import { afterRelayRun, inPartitions, reportedFailure, type RelayFailure, type RelayTick } from './outbox-relay.logic.js';
import { retryDelayMs } from './retry.logic.js';

/** pg_try_advisory_xact_lock key of the relay: one publisher at a time across replicas. */
export const OUTBOX_RELAY_LOCK = 0x6f7574626f78n; // "outbox"

export interface OutboxRelayOptions {
  db: Db;
  bus: EventBus;
  logger: Logger;
  clock?: Clock;
  batchSize?: number;
  pollIntervalMs?: number;
  /** Backoff after a failed batch (broker down): base doubling up to max, with jitter. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** The relay's transaction spans the batch's publishes. */
  transactionTimeoutMs?: number;
  /** Prepended to each row's subject, matching `StreamOptions.subjectPrefix` (tests on a shared server). */
  subjectPrefix?: string;
}

export interface RelayRun {
  /** False when another relay replica holds the lock; nothing was read. */
  locked: boolean;
  published: number;
  failed?: { eventId: string; error: string };
}

export interface RelayStatus {
  running: boolean;
  lastRunAt?: string;
  lastError?: string;
  consecutiveFailures: number;
  publishedTotal: number;
}

export interface OutboxRelay {
  runOnce(): Promise<RelayRun>;
  start(): void;
  /** Stops polling after the batch in hand and flushes what is pending once more. */
  stop(): Promise<void>;
  /** Wakes the poll loop now, e.g. right after a transaction that wrote events committed. */
  notify(): void;
  status(): RelayStatus;
}

interface OutboxRow {
  id: bigint;
  eventId: string;
  subject: string;
  partitionKey: string;
  envelope: unknown;
  headers: Record<string, string> | null;
}

export function createOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  const loop = new RelayLoop(options);
  return {
    runOnce: () => loop.runOnce(),
    start: () => loop.start(),
    stop: () => loop.stop(),
    notify: () => loop.notify(),
    status: () => loop.status(),
  };
}

/** The relay's poll loop: a run, then the next one at once, after the poll interval, or after a backoff. */
class RelayLoop {
  private readonly clock: Clock;
  private readonly batchSize: number;
  private readonly state: RelayStatus = { running: false, consecutiveFailures: 0, publishedTotal: 0 };
  private loop: Promise<void> | undefined;
  private wakePoll: (() => void) | undefined;
  private wakeAny: (() => void) | undefined;
  private notified = false;

  constructor(private readonly options: OutboxRelayOptions) {
    this.clock = options.clock ?? systemClock;
    this.batchSize = options.batchSize ?? 100;
  }

  status(): RelayStatus {
    return { ...this.state };
  }

  async runOnce(): Promise<RelayRun> {
    const { db, logger } = this.options;
    const result = await db.$transaction((tx) => relayBatch(tx, this.options, this.clock, this.batchSize), {
      timeout: this.options.transactionTimeoutMs ?? 60_000,
      maxWait: 10_000,
    });
    this.state.lastRunAt = this.clock.now().toISOString();
    this.state.publishedTotal += result.published;
    if (result.failed)
      logger.warn({ eventId: result.failed.eventId, err: result.failed.error }, 'outbox publish failed; the batch waits');
    return result;
  }

  start(): void {
    if (this.state.running) return;
    this.state.running = true;
    this.loop = this.poll();
  }

  async stop(): Promise<void> {
    if (!this.state.running) return;
    this.state.running = false;
    this.wakeAny?.();
    await this.loop;
    // Events committed just before shutdown go out now rather than at the next start.
    for (let i = 0; i < 10; i++) {
      if ((await this.tick()) !== 'more') break;
    }
  }

  notify(): void {
    if (this.wakePoll) this.wakePoll();
    else this.notified = true;
  }

  private async poll(): Promise<void> {
    while (this.state.running) {
      const outcome = await this.tick();
      if (!this.state.running) break;
      if (outcome === 'more') continue;
      if (outcome === 'failed') await this.wait(this.backoffMs(), false);
      else await this.wait(this.options.pollIntervalMs ?? 1_000, true);
    }
  }

  private backoffMs(): number {
    return retryDelayMs(this.state.consecutiveFailures, {
      baseMs: this.options.retryBaseMs ?? 500,
      maxMs: this.options.retryMaxMs ?? 30_000,
    });
  }

  private async tick(): Promise<RelayTick> {
    try {
      const run = await this.runOnce();
      if (run.failed) throw new Error(run.failed.error);
      this.state.consecutiveFailures = 0;
      this.state.lastError = undefined;
      return afterRelayRun(run, this.batchSize);
    } catch (error) {
      this.state.consecutiveFailures += 1;
      this.state.lastError = oneLine(error);
      this.options.logger.warn(
        { err: this.state.lastError, failures: this.state.consecutiveFailures },
        'outbox relay run failed',
      );
      return 'failed';
    }
  }

  /** Waits `ms`; cut short by stop(), and by notify() when `wakeOnNotify`. */
  private wait(ms: number, wakeOnNotify: boolean): Promise<void> {
    if (wakeOnNotify && this.notified) {
      this.notified = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakePoll = undefined;
        this.wakeAny = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref?.();
      this.wakeAny = done;
      if (wakeOnNotify) this.wakePoll = done;
    });
  }
}

/** One relay run, in its transaction: the lock, the rows that may go, their publishes, their marks. */
async function relayBatch(tx: Tx, options: OutboxRelayOptions, clock: Clock, batchSize: number): Promise<RelayRun> {
  const [{ locked }] = await tx.$queryRaw<
    Array<{ locked: boolean }>
  >`SELECT pg_try_advisory_xact_lock(${OUTBOX_RELAY_LOCK}) AS locked`;
  if (!locked) return { locked: false, published: 0 };
  const rows = await rowsReadyToPublish(tx, batchSize);
  const { published, failed } = await publishByPartition(rows, (row) => publishRow(options, row));
  if (published.length) {
    await tx.$executeRaw`UPDATE "OutboxEvent" SET "publishedAt" = ${clock.now()} WHERE id IN (${Prisma.join(published.map((row) => row.id))})`;
  }
  if (failed) {
    await tx.$executeRaw`UPDATE "OutboxEvent" SET attempts = attempts + 1, "lastError" = ${failed.error} WHERE id = ${failed.row.id}`;
  }
  return {
    locked: true,
    published: published.length,
    ...(failed ? { failed: { eventId: failed.row.eventId, error: failed.error } } : {}),
  };
}

function rowsReadyToPublish(tx: Tx, batchSize: number): Promise<OutboxRow[]> {
  // Ids come from a sequence, so a transaction can take a lower id and commit after a
  // higher one. Rows are only taken below the oldest transaction still running (the
  // snapshot's xmin): an uncommitted lower row can never be overtaken, and a row is taken
  // in id order once everything before it has settled.
  //
  // Transaction ids are cluster-wide, so a long transaction in ANOTHER database of the same
  // server would hold that horizon back too. Those are left out when pg_stat_activity
  // proves them foreign; an id it cannot place (already ended, or hidden from this role)
  // still counts, so the refinement can only make the relay wait, never skip.
  //
  // One replica publishes at a time (the advisory lock) rather than replicas sharing rows
  // with FOR UPDATE SKIP LOCKED: with skipping, replica B would publish row 2 of a course
  // while replica A still holds row 1, and the stream would carry them out of order.
  return tx.$queryRaw<OutboxRow[]>`
    SELECT id, "eventId", subject, "partitionKey", envelope, headers FROM "OutboxEvent"
    WHERE "publishedAt" IS NULL AND txid < (
      SELECT COALESCE(min(xip::text::bigint), min(pg_snapshot_xmax(snap.s)::text::bigint))
      FROM (SELECT pg_current_snapshot() AS s) snap
      LEFT JOIN LATERAL pg_snapshot_xip(snap.s) AS xip ON xip::text::bigint % 4294967296 NOT IN (
        SELECT backend_xid::text::bigint FROM pg_stat_activity
        WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database()
      )
    )
    ORDER BY id LIMIT ${batchSize}`;
}

/**
 * Rows of different partitions go out together (one ack round trip for many rows, not one each);
 * rows of one partition one after the other, in id order, so the stream holds every partition in
 * commit order. A failed row stops only its own partition: its later rows wait, since publishing
 * past it would reorder that partition.
 */
async function publishByPartition(
  rows: readonly OutboxRow[],
  publish: (row: OutboxRow) => Promise<unknown>,
): Promise<{ published: OutboxRow[]; failed?: RelayFailure<OutboxRow> }> {
  const published: OutboxRow[] = [];
  const failures: RelayFailure<OutboxRow>[] = [];
  await Promise.all(
    inPartitions(rows).map(async (partition) => {
      for (const row of partition) {
        try {
          await publish(row);
          published.push(row);
        } catch (error) {
          failures.push({ row, error: oneLine(error) });
          return;
        }
      }
    }),
  );
  return { published, failed: reportedFailure(failures) };
}

/**
 * Nats-Msg-Id = eventId: a row re-sent after a crash between publish and commit is dropped by the
 * stream's duplicate window and reported as a duplicate, i.e. done. A producer span in the trace
 * of the request that wrote the row; consumers continue from it.
 */
function publishRow(options: OutboxRelayOptions, row: OutboxRow): Promise<unknown> {
  const attributes = {
    'messaging.system': 'nats',
    'messaging.destination.name': row.subject,
    'messaging.message.id': row.eventId,
  };
  return withSpan(
    `publish ${row.subject}`,
    attributes,
    () =>
      options.bus.publish(`${options.subjectPrefix ?? ''}${row.subject}`, Buffer.from(JSON.stringify(row.envelope)), {
        msgId: row.eventId,
        headers: injectTraceHeaders({ ...(row.headers ?? {}) }),
      }),
    { kind: SpanKind.PRODUCER, parent: extractContextFromHeaders(row.headers ?? {}) },
  );
}

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

export function oneLine(error: unknown, max = 500): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s+/g, ' ').trim().slice(0, max);
}
