import { Prisma, type Tx } from '../../platform/db/database.js';
import { prepared } from '../../platform/db/prepared.js';
import type { Clock } from '../../platform/clock.js';
import { extractContextFromHeaders, injectTraceHeaders, SpanKind, withSpan } from '../../platform/observability/telemetry.js';
import type { MessageBus } from '../bus/event-bus.js';
import { oneLine } from '../error-text.logic.js';
import { committedAtHeader } from './committed-at.logic.js';
import { inPartitions, reportedFailure, type RelayFailure } from './outbox-relay.logic.js';
import { leaseStillHeld } from './relay-lease.js';
import { OUTBOX_RELAY_LOCK, type OutboxRow } from './outbox.js';

/** An outbox row as the relay reads it back: what was written (OutboxRow), with its database id. */
export type StoredOutboxRow = Pick<OutboxRow, 'eventId' | 'subject' | 'partitionKey'> & {
  id: bigint;
  envelope: unknown;
  headers: Record<string, string> | null;
  /** When the row's transaction committed (epoch ms); null unless the database tracks commit times. */
  committedAtMs: number | null;
};

export interface BatchContext {
  bus: MessageBus;
  clock: Clock;
  batchSize: number;
  subjectPrefix?: string;
  /** The lease token this batch runs under; its marks count only while it is the lease's. */
  token: bigint;
  /** The lease's period: the batch's transaction dies after this long idle (a frozen holder's). */
  leaseMs: number;
  /** Checked right before each publish: false once this process may no longer count on the lease. */
  leaseValid(): boolean;
}

export interface BatchResult {
  /** False when a GDPR redaction holds the outbox: nothing was read. */
  locked: boolean;
  published: number;
  failed?: { eventId: string; error: string };
  /** The lease lapsed mid-batch: the rest of the batch waits for whoever holds it next. */
  leaseLost?: true;
}

/** Thrown before a publish once the lease has lapsed: not the row's fault, it only stops the batch. */
class LeaseLapsed extends Error {}

/** One relay batch, in its transaction: the shared lock, the rows that may go, their publishes, their fenced marks. */
export async function relayBatch(tx: Tx, ctx: BatchContext): Promise<BatchResult> {
  // A frozen holder's transaction must not hold the shared lock (and GDPR redaction) forever.
  await tx.$executeRawUnsafe(`SET LOCAL idle_in_transaction_session_timeout = ${Math.ceil(ctx.leaseMs)}`);
  const [{ locked }] = await tx.$queryRaw<Array<{ locked: boolean }>>(
    prepared('outbox_relay_lock', Prisma.sql`SELECT pg_try_advisory_xact_lock_shared(${OUTBOX_RELAY_LOCK}) AS locked`),
  );
  if (!locked) return { locked: false, published: 0 };
  const rows = await rowsReadyToPublish(tx, ctx.batchSize);
  const keepAlive = keepTransactionAlive(tx, ctx.leaseMs / 3);
  const outcome = await publishByPartition(rows, (row) => publishRow(ctx, row)).finally(() => keepAlive.stop());
  const marked = await markPublished(tx, ctx, outcome.published);
  const { failed } = outcome;
  if (failed) {
    await tx.$executeRaw`UPDATE "OutboxEvent" SET attempts = attempts + 1, "lastError" = ${failed.error}
      WHERE id = ${failed.row.id} AND ${leaseStillHeld(ctx.token)}`;
  }
  return {
    locked: true,
    published: marked,
    ...(failed ? { failed: { eventId: failed.row.eventId, error: failed.error } } : {}),
    ...(outcome.leaseLapsed || marked < outcome.published.length ? { leaseLost: true as const } : {}),
  };
}

/**
 * Marks the rows published, fenced by the lease token: a relay that lost the lease (paused past it)
 * marks nothing, and its rows go out again under the next holder, where the stream's duplicate
 * window drops what it had already published.
 */
async function markPublished(tx: Tx, ctx: BatchContext, published: readonly StoredOutboxRow[]): Promise<number> {
  if (!published.length) return 0;
  return tx.$executeRaw`UPDATE "OutboxEvent" SET "publishedAt" = ${ctx.clock.now()}
    WHERE id IN (${Prisma.join(published.map((row) => row.id))}) AND ${leaseStillHeld(ctx.token)}`;
}

/**
 * A statement on the batch's transaction every `everyMs` while it publishes: a live relay waiting
 * for a slow broker is not idle, a frozen one is (and the server ends its transaction).
 */
function keepTransactionAlive(tx: Tx, everyMs: number): { stop(): Promise<void> } {
  let ping: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    ping = ping.then(() => tx.$queryRaw`SELECT 1`).catch(() => undefined);
  }, everyMs);
  timer.unref?.();
  return {
    async stop() {
      clearInterval(timer);
      await ping;
    },
  };
}

function rowsReadyToPublish(tx: Tx, batchSize: number): Promise<StoredOutboxRow[]> {
  return tx.$queryRaw<StoredOutboxRow[]>(readyRowsSql(batchSize));
}

/**
 * The relay's read of the rows that may go, as a named prepared statement with no parameter (the
 * batch size, fixed per process, is part of its text): Postgres parses it once per connection and
 * reuses one plan. Unnamed, every round (each commit's wake-up and every poll, idle or not) cost
 * the server 0.9-1.2 ms of parsing and planning (bench/results/2026-11-28T2310-relay-prepared.md).
 */
export function readyRowsSql(batchSize: number): Prisma.Sql {
  if (!Number.isSafeInteger(batchSize) || batchSize < 1)
    throw new Error(`the relay's batch size is a positive integer: ${batchSize}`);
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
  // One replica publishes at a time (the lease) rather than replicas sharing rows with FOR
  // UPDATE SKIP LOCKED: with skipping, replica B would publish row 2 of a course while
  // replica A still holds row 1, and the stream would carry them out of order.
  //
  // With track_commit_timestamp on, each row's commit time goes with it (committed-at.logic.ts);
  // the CASE keeps pg_xact_commit_timestamp, which fails when the setting is off, from being called.
  return prepared(
    'outbox_ready',
    Prisma.sql`
    SELECT id, "eventId", subject, "partitionKey", envelope, headers,
      CASE WHEN current_setting('track_commit_timestamp') = 'on'
        THEN (EXTRACT(EPOCH FROM pg_xact_commit_timestamp(((txid % 4294967296)::text)::xid)) * 1000)::float8
      END AS "committedAtMs"
    FROM "OutboxEvent"
    WHERE "publishedAt" IS NULL AND txid < (
      SELECT COALESCE(min(xip::text::bigint), min(pg_snapshot_xmax(snap.s)::text::bigint))
      FROM (SELECT pg_current_snapshot() AS s) snap
      LEFT JOIN LATERAL pg_snapshot_xip(snap.s) AS xip ON xip::text::bigint % 4294967296 NOT IN (
        SELECT backend_xid::text::bigint FROM pg_stat_activity
        WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database()
      )
    )
    ORDER BY id LIMIT ${Prisma.raw(String(batchSize))}`,
  );
}

/**
 * Rows of different partitions go out together (one ack round trip for many rows, not one each);
 * rows of one partition one after the other, in id order, so the stream holds every partition in
 * commit order. A failed row stops only its own partition: its later rows wait, since publishing
 * past it would reorder that partition. A lapsed lease stops every partition.
 */
async function publishByPartition(
  rows: readonly StoredOutboxRow[],
  publish: (row: StoredOutboxRow) => Promise<unknown>,
): Promise<{ published: StoredOutboxRow[]; failed?: RelayFailure<StoredOutboxRow>; leaseLapsed: boolean }> {
  const published: StoredOutboxRow[] = [];
  const failures: RelayFailure<StoredOutboxRow>[] = [];
  let leaseLapsed = false;
  await Promise.all(
    inPartitions(rows).map(async (partition) => {
      for (const row of partition) {
        try {
          await publish(row);
          published.push(row);
        } catch (error) {
          if (error instanceof LeaseLapsed) leaseLapsed = true;
          else failures.push({ row, error: oneLine(error) });
          return;
        }
      }
    }),
  );
  return { published, failed: reportedFailure(failures), leaseLapsed };
}

/**
 * Nats-Msg-Id = eventId: a row re-sent after a crash between publish and commit (or by the next
 * lease holder after a pause) is dropped by the stream's duplicate window and reported as a
 * duplicate, i.e. done. The row's commit time goes along when known (committed-at.logic.ts). A
 * producer span in the trace of the request that wrote the row; consumers continue from it.
 */
function publishRow(ctx: BatchContext, row: StoredOutboxRow): Promise<unknown> {
  const attributes = {
    'messaging.system': 'nats',
    'messaging.destination.name': row.subject,
    'messaging.message.id': row.eventId,
  };
  return withSpan(
    `publish ${row.subject}`,
    attributes,
    () => {
      // In the same turn as the publish itself: a pause after this check delays only a message
      // this process had already decided to send while it held the lease.
      if (!ctx.leaseValid()) throw new LeaseLapsed('the relay lease lapsed');
      return ctx.bus.publish(`${ctx.subjectPrefix ?? ''}${row.subject}`, Buffer.from(JSON.stringify(row.envelope)), {
        msgId: row.eventId,
        headers: injectTraceHeaders({ ...(row.headers ?? {}), ...committedAtHeader(row.committedAtMs) }),
      });
    },
    { kind: SpanKind.PRODUCER, parent: extractContextFromHeaders(row.headers ?? {}) },
  );
}
