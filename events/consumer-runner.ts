import type { Db, Tx } from '../platform/db/database.js';
import { AppError, isAppError } from '../platform/errors.js';
import type { Logger } from '../platform/logger.js';
import { withMessageSpan } from '../platform/telemetry.js';
import type { BusMessage, EventBus } from './bus/event-bus.js';
import { systemClock, type Clock } from './clock.js';
import { deadLetterHeaders, deadLetterMsgId, deadLetterSubject } from './dead-letter.logic.js';
import type { EventEnvelope } from './envelope.js';
import { inboxHas, recordInbox, recordInboxBatch } from './inbox.js';
import { outboxInsertSql, type EmitInput, type EventProducer, type OutboxRow } from './outbox.js';
import { oneLine } from './outbox-relay.js';
import { BatchQueue } from './batch-queue.js';
import { retryDelayMs } from './retry.logic.js';
import type { SchemaRegistry } from './schemas/registry.js';
import { childTraceparent } from './trace.logic.js';

export interface EventHandlerContext {
  /** The consumed event's id: the causationId of whatever the handler emits. */
  eventId: string;
  correlationId: string;
  /** The consumed message's traceparent (empty when it had none). */
  traceparent: string;
  subject: string;
  deliveryCount: number;
  logger: Logger;
  /**
   * Writes events to the outbox in the handler's transaction, caused by and correlated with the
   * consumed event and in the same trace.
   */
  emit(input: Omit<EmitInput, 'correlationId' | 'causationId'>): Promise<EventEnvelope<object>[]>;
}

/** Runs inside the consumer's transaction: write state and outbox rows with `tx` only. */
export type EventHandler = (tx: Tx, envelope: EventEnvelope, ctx: EventHandlerContext) => Promise<void>;

/**
 * Handles several events, in their order, in one transaction: it must leave exactly what `handle`
 * would leave running them one after the other, with a few set-based statements instead of a
 * transaction each. Throwing fails the whole batch; the runner then handles its events one at a
 * time with `handle`, so every event still gets its own verdict (redelivery or dead letter).
 */
export type BatchEventHandler = (
  tx: Tx,
  batch: ReadonlyArray<{ envelope: EventEnvelope; ctx: EventHandlerContext }>,
  /** The consumer's logger (each ctx.logger names its event). */
  logger: Logger,
) => Promise<void>;

/** A consumer of one event type and version, as the catalog plugs it into the worker. */
export interface ConsumerSpec {
  /** Durable consumer name, e.g. `catalog-svc-play-package-built`; also the inbox's consumer key. */
  durable: string;
  stream: string;
  /** Filter subject, normally `subjectFor(eventType, version)`. */
  subject: string;
  eventType: string;
  version: number;
  handle: EventHandler;
  /** Optional set-based handler; with `batchSize` above 1 the runner hands it the events it has. */
  handleBatch?: BatchEventHandler;
  /**
   * Events taken into one batch transaction (default 1: no batching). Batches run one after the
   * other (`concurrency` of them at once), each in stream order, so a consumer with concurrency 1
   * still handles its events in stream order.
   */
  batchSize?: number;
  /** Default: config `events.maxDeliver` (6 = the spec's 5 redeliveries). */
  maxDeliver?: number;
  /** Default: config `events.ackWaitSeconds`. */
  ackWaitMs?: number;
  /** 1 processes strictly one at a time across replicas (design §4); default 1000. */
  maxAckPending?: number;
  /** Messages (batches, with `handleBatch`) handled at once in this replica (default 1, in stream order). */
  concurrency?: number;
}

export interface StartConsumerOptions extends ConsumerSpec {
  bus: EventBus;
  db: Db;
  logger: Logger;
  registry: SchemaRegistry;
  maxDeliver: number;
  ackWaitMs: number;
  dlq: { subjectPrefix: string };
  /** Needed for `ctx.emit`. */
  producer?: EventProducer;
  clock?: Clock;
  /** Delay before a failed message is redelivered; default 1 s doubling to 60 s, jittered. */
  nakDelayMs?: (deliveryCount: number) => number;
  /** Called after a transaction in which the handler emitted events commits (wake the relay). */
  afterCommit?: () => void;
  transactionTimeoutMs?: number;
}

export interface ConsumerStats {
  processed: number;
  duplicates: number;
  retried: number;
  deadLettered: number;
  lastError?: string;
}

export interface ConsumerHandle {
  durable: string;
  stop(): Promise<void>;
  stats(): ConsumerStats;
}

/** A failure no retry can fix: the runner dead-letters at once instead of redelivering. */
export function permanentFailure(message: string, details?: Record<string, unknown>): AppError {
  return new AppError('events.permanent_failure', message, { status: 422, details });
}

const PERMANENT_CODES = new Set(['events.permanent_failure', 'schema.invalid_event', 'schema.unknown_event']);

/** Prisma's codes for a database it cannot reach (P1xxx) or no connection to be had (P2024). */
const UNREACHABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
/** SQLSTATEs of a server that is down, restarting or refusing connections: 08xxx, 57P01-03, 53300. */
const UNREACHABLE_SQLSTATE = /^(08|57P0[123]$|53300$)/;

/**
 * Whether a handler failed because the database cannot be reached (down, restarting, failing
 * over, out of connections), which says nothing about the message: every message would fail
 * alike until it is back.
 */
export function databaseUnreachable(error: unknown): boolean {
  const e = error as {
    code?: unknown;
    message?: unknown;
    meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } };
  } | null;
  if (typeof e?.code === 'string' && UNREACHABLE_PRISMA_CODES.has(e.code)) return true;
  const sqlState = e?.meta?.driverAdapterError?.cause?.originalCode;
  if (typeof sqlState === 'string' && UNREACHABLE_SQLSTATE.test(sqlState)) return true;
  return (
    typeof e?.message === 'string' && /ECONNREFUSED|ECONNRESET|Connection terminated|Can't reach database server/.test(e.message)
  );
}

export async function startConsumer(options: StartConsumerOptions): Promise<ConsumerHandle> {
  const { bus, db, durable } = options;
  // Typed explicitly: TypeScript only narrows through an assertion method on a declared type.
  const registry: SchemaRegistry = options.registry;
  const logger = options.logger.child({ consumer: durable });
  const clock = options.clock ?? systemClock;
  const nakDelay = options.nakDelayMs ?? ((n: number) => retryDelayMs(n, { baseMs: 1_000, maxMs: 60_000 }));
  const stats: ConsumerStats = { processed: 0, duplicates: 0, retried: 0, deadLettered: 0 };
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let stopping = false;
  let wakeOnStop: (() => void) | undefined;

  /**
   * Holds the message (its keep-alive keeps running) until the database answers again. A
   * redelivery could not succeed meanwhile, and each would spend one of the message's deliveries:
   * a restart or failover of a few seconds would dead-letter every message taken during it.
   * False when the consumer is stopping first.
   */
  async function databaseReturned(): Promise<boolean> {
    logger.warn({ err: stats.lastError }, 'database unreachable; holding the message until it answers');
    for (let attempt = 1; !stopping; attempt++) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, retryDelayMs(attempt, { baseMs: 250, maxMs: 5_000 }));
        timer.unref?.();
        wakeOnStop = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (stopping) break;
      if (
        await db.$queryRawUnsafe('SELECT 1').then(
          () => true,
          () => false,
        )
      )
        return true;
    }
    return false;
  }

  async function deadLetter(
    message: { subject: string; data: Uint8Array; seq: number; deliveryCount: number; headers: Record<string, string> },
    error: unknown,
    envelope?: Partial<EventEnvelope>,
  ): Promise<void> {
    await bus.publish(deadLetterSubject(options.dlq.subjectPrefix, message.subject), message.data, {
      msgId: deadLetterMsgId(durable, options.stream, message.seq),
      headers: deadLetterHeaders({
        originalSubject: message.subject,
        originalStream: options.stream,
        originalSeq: message.seq,
        consumer: durable,
        deliveryCount: message.deliveryCount,
        error,
        now: clock.now(),
        eventId: typeof envelope?.eventId === 'string' ? envelope.eventId : undefined,
        eventType: typeof envelope?.eventType === 'string' ? envelope.eventType : undefined,
        traceparent: message.headers.traceparent,
      }),
    });
    stats.deadLettered += 1;
    logger.error(
      { subject: message.subject, seq: message.seq, eventId: envelope?.eventId, err: oneLine(error) },
      'event dead-lettered',
    );
  }

  async function deadLetterAndTerm(m: BusMessage, error: unknown, envelope?: Partial<EventEnvelope>): Promise<void> {
    try {
      await deadLetter(m, error, envelope);
      m.term(oneLine(error, 100));
    } catch (publishError) {
      // Without its dead letter the message must stay: redeliver it (or, after its last
      // delivery, leave it to the MAX_DELIVERIES safety net).
      logger.error({ err: oneLine(publishError) }, 'dead-letter publish failed; message kept');
      m.nak(nakDelay(m.deliveryCount));
    }
  }

  /** Parses and checks a message; undefined when it was dead-lettered. */
  async function admit(m: BusMessage): Promise<EventEnvelope | undefined> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(decoder.decode(m.data));
    } catch (error) {
      await deadLetterAndTerm(m, new AppError('events.unparseable', `Message body is not JSON: ${oneLine(error)}`));
      return undefined;
    }
    try {
      registry.validateEnvelope(parsed);
      if (parsed.eventType !== options.eventType || parsed.eventVersion !== options.version) {
        throw new AppError(
          'schema.invalid_event',
          `Expected ${options.eventType} v${options.version}, got ${parsed.eventType} v${parsed.eventVersion}`,
          {
            details: { path: '/eventType', message: 'does not match the consumer' },
          },
        );
      }
      registry.validate(parsed.eventType, parsed.eventVersion, parsed.payload, 'consume');
      return parsed;
    } catch (error) {
      // No redelivery can make an invalid event valid.
      await deadLetterAndTerm(m, error, parsed as Partial<EventEnvelope>);
      return undefined;
    }
  }

  async function onMessage(m: BusMessage): Promise<void> {
    const envelope = await admit(m);
    if (!envelope) return;
    // Long handlers keep their message: without it the ack wait would hand it to a second replica.
    const keepAlive = setInterval(() => m.working(), Math.max(100, Math.floor(options.ackWaitMs / 2)));
    keepAlive.unref?.();
    try {
      if (batching) await batches.add({ m, envelope });
      else await settle(m, envelope);
    } finally {
      clearInterval(keepAlive);
    }
  }

  /** Handles one message alone until it has a verdict: acked, redelivered, dead-lettered or held. */
  async function settle(m: BusMessage, envelope: EventEnvelope): Promise<void> {
    for (;;) {
      try {
        await handleOnce(m, envelope);
        return;
      } catch (error) {
        stats.lastError = oneLine(error);
        if (databaseUnreachable(error)) {
          if (await databaseReturned()) continue;
          // Stopping: leave the message to the next consumer without spending it on a verdict.
          m.nak();
          return;
        }
        const permanent = isAppError(error) && PERMANENT_CODES.has(error.code);
        if (permanent || m.deliveryCount >= options.maxDeliver) {
          await deadLetterAndTerm(m, error, envelope);
        } else {
          stats.retried += 1;
          logger.warn(
            { eventId: envelope.eventId, deliveryCount: m.deliveryCount, err: stats.lastError },
            'event handler failed; will redeliver',
          );
          m.nak(nakDelay(m.deliveryCount));
        }
        return;
      }
    }
  }

  function handlerContext(m: BusMessage, envelope: EventEnvelope, emit: EventHandlerContext['emit']): EventHandlerContext {
    let eventLogger: Logger | undefined;
    return {
      eventId: envelope.eventId,
      correlationId: envelope.correlationId,
      traceparent: m.headers.traceparent ?? '',
      subject: m.subject,
      deliveryCount: m.deliveryCount,
      // Made on first use: a child logger per event costs more than most handlers' logic.
      get logger() {
        return (eventLogger ??= logger.child({ eventId: envelope.eventId }));
      },
      emit,
    };
  }

  /** The EmitInput of an event caused by the consumed one: same correlation, same trace. */
  function causedBy(m: BusMessage, envelope: EventEnvelope, input: Parameters<EventHandlerContext['emit']>[0]): EmitInput {
    if (!options.producer) throw new Error(`consumer ${durable} was started without a producer; ctx.emit is unavailable`);
    return {
      ...input,
      correlationId: envelope.correlationId,
      causationId: envelope.eventId,
      traceparent: input.traceparent ?? childTraceparent(m.headers.traceparent),
    };
  }

  /** One attempt: inbox row and handler in one transaction, then the ack. */
  async function handleOnce(m: BusMessage, envelope: EventEnvelope): Promise<void> {
    let emitted = false;
    const outcome = await db.$transaction(
      async (tx) => {
        if (!(await recordInbox(tx, { consumer: durable, eventId: envelope.eventId, subject: m.subject })))
          return 'duplicate' as const;
        const ctx = handlerContext(m, envelope, async (input) => {
          const caused = causedBy(m, envelope, input);
          emitted = true;
          return options.producer!.emit(tx, caused);
        });
        await options.handle(tx, envelope, ctx);
        return 'processed' as const;
      },
      { timeout: options.transactionTimeoutMs ?? 60_000, maxWait: 10_000 },
    );
    m.ack();
    if (outcome === 'duplicate') stats.duplicates += 1;
    else stats.processed += 1;
    if (emitted) options.afterCommit?.();
  }

  /**
   * One attempt at a batch: the inbox rows of all its events in one statement, `handleBatch` for
   * those not handled before, the outbox rows of everything they emitted in one statement, one
   * commit, then the acks.
   */
  async function handleBatchOnce(batch: readonly Pending[]): Promise<void> {
    const rows: OutboxRow[] = [];
    const fresh = await db.$transaction(
      async (tx) => {
        const firsts = [...new Map(batch.map((p) => [p.envelope.eventId, p])).values()];
        const fresh = await recordInboxBatch(
          tx,
          durable,
          firsts.map(({ m, envelope }) => ({ eventId: envelope.eventId, subject: m.subject })),
        );
        const handled = firsts
          .filter(({ envelope }) => fresh.has(envelope.eventId))
          .map(({ m, envelope }) => ({
            envelope,
            ctx: handlerContext(m, envelope, async (input) => {
              const prepared = options.producer!.prepare(causedBy(m, envelope, input));
              rows.push(...prepared.rows);
              return prepared.envelopes;
            }),
          }));
        if (handled.length) await options.handleBatch!(tx, handled, logger);
        if (rows.length) await tx.$executeRaw(outboxInsertSql(rows));
        return fresh;
      },
      { timeout: options.transactionTimeoutMs ?? 60_000, maxWait: 10_000 },
    );
    for (const { m } of batch) m.ack();
    stats.processed += fresh.size;
    stats.duplicates += batch.length - fresh.size;
    if (rows.length) options.afterCommit?.();
  }

  /**
   * A batch until every message has a verdict. A database outage holds it (as settle does for
   * one); any other failure hands each message to `settle`, which finds the one that failed.
   */
  async function runBatch(batch: readonly Pending[]): Promise<void> {
    for (;;) {
      try {
        await handleBatchOnce(batch);
        return;
      } catch (error) {
        stats.lastError = oneLine(error);
        if (databaseUnreachable(error)) {
          if (await databaseReturned()) continue;
          for (const { m } of batch) m.nak();
          return;
        }
        logger.warn({ size: batch.length, err: stats.lastError }, 'batch failed; handling its events one at a time');
        for (const { m, envelope } of batch) await settle(m, envelope);
        return;
      }
    }
  }

  const batching = Boolean(options.handleBatch) && (options.batchSize ?? 1) > 1;
  const batches = new BatchQueue<Pending>(Math.max(1, options.batchSize ?? 1), Math.max(1, options.concurrency ?? 1), (batch) =>
    runBatch(batch).catch((error: unknown) => {
      logger.error({ err: oneLine(error), size: batch.length }, 'batch ended without verdicts; the ack wait will redeliver');
    }),
  );

  // Safety net (design §4): a process that died on a message's last delivery never wrote its
  // dead letter; JetStream then only raises the MAX_DELIVERIES advisory, which carries no body.
  const offAdvisory = bus.onMaxDeliveries((advisory) => {
    if (advisory.stream !== options.stream || advisory.consumer !== durable) return;
    void (async () => {
      const stored = await bus.getMessage(options.stream, advisory.streamSeq);
      if (!stored) return;
      let envelope: Partial<EventEnvelope> | undefined;
      try {
        envelope = JSON.parse(Buffer.from(stored.data).toString('utf8')) as Partial<EventEnvelope>;
      } catch {
        envelope = undefined;
      }
      if (typeof envelope?.eventId === 'string' && (await inboxHas(db, durable, envelope.eventId))) return;
      await deadLetter(
        { ...stored, deliveryCount: advisory.deliveries },
        new Error(`max deliveries (${advisory.deliveries}) reached without a handler verdict`),
        envelope,
      );
    })().catch((error: unknown) =>
      logger.error({ err: oneLine(error), seq: advisory.streamSeq }, 'dead-letter safety net failed'),
    );
  });

  const subscription = await bus.consume(
    {
      stream: options.stream,
      durable,
      filterSubject: options.subject,
      ackWaitMs: options.ackWaitMs,
      maxDeliver: options.maxDeliver,
      maxAckPending: options.maxAckPending,
      // Batching needs the bus to hand over the next batches' messages while one runs.
      concurrency: batching ? batches.capacity : options.concurrency,
    },
    // One span per delivery, under the producer's trace (its traceparent header).
    (m) =>
      withMessageSpan({ subject: m.subject, headers: m.headers, deliveryCount: m.deliveryCount, consumer: durable }, () =>
        onMessage(m),
      ),
  );
  logger.info({ stream: options.stream, subject: options.subject }, 'consumer started');

  return {
    durable,
    async stop() {
      stopping = true;
      wakeOnStop?.();
      await subscription.stop();
      offAdvisory();
    },
    stats: () => ({ ...stats }),
  };
}

interface Pending {
  m: BusMessage;
  envelope: EventEnvelope;
}
