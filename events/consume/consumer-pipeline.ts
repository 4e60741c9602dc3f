import { AppError } from '../../platform/errors/errors.js';
import type { Logger } from '../../platform/observability/logger.js';
import { BatchQueue } from './batch-queue.js';
import type { BusMessage } from '../bus/event-bus.js';
import { systemClock, type Clock } from '../../platform/clock.js';
import { digestMismatchLog, readConsumed } from './consumed-reader.js';
import { handleBatchOnce, handleOnce, type AttemptDeps, type AttemptOutcome } from './consumer-attempts.js';
import type { PipelineStats, StartConsumerOptions } from './consumer-spec.js';
import { keepAliveIntervalMs, type PendingMessage } from '../ordering/pending.logic.js';
import { afterBatchFailure, inStreamOrder } from './consumer-stages.logic.js';
import { databaseReturned, StopSignal } from './database-wait.js';
import { createDeadLetterWriter, type DeadLetterWriter } from '../dead-letters/dead-letter-writer.js';
import type { ConsumedEnvelope, EventEnvelope } from '../envelope.js';
import { MessageOrder } from '../ordering/message-order.js';
import { MessagesInHand } from './messages-in-hand.js';
import { oneLine } from '../error-text.logic.js';
import { retryDelayMs } from '../retry.logic.js';
import type { SchemaRegistry } from '../schemas/registry.js';
import { verdictFor, type VerdictPolicy } from './verdict.logic.js';

/** The longest default delay before a failed message is redelivered. */
export const MAX_RETRY_DELAY_MS = 60_000;

/**
 * A consumer's way from a delivered message to its verdict, in named stages: admit (parse and
 * check, or dead-letter on sight), apply (keep the message alive while it is in hand; batch it
 * when batching), run (stream order; hold what must wait for an earlier message of its key),
 * settle / runBatch (attempt in a transaction, then the verdict of verdict.logic.ts: ack, retry,
 * dead letter, or wait for the database).
 */
export class ConsumerPipeline {
  readonly logger: Logger;
  readonly writeDeadLetter: DeadLetterWriter;
  private readonly registry: SchemaRegistry;
  private readonly clock: Clock;
  private readonly nakDelay: (deliveryCount: number) => number;
  private readonly policy: VerdictPolicy;
  private readonly counts: PipelineStats = {
    processed: 0,
    duplicates: 0,
    retried: 0,
    deadLettered: 0,
    schemaDigestMismatches: 0,
    held: 0,
    heldPastLimit: 0,
  };
  private readonly stopSignal = new StopSignal();
  private readonly digestMismatches: ReturnType<typeof digestMismatchLog>;
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  private readonly attempts: AttemptDeps;
  private readonly order: MessageOrder | undefined;
  private readonly batching: boolean;
  private readonly batches: BatchQueue<PendingMessage>;
  private readonly inHand = new MessagesInHand((seq) => this.order?.isHeld(seq) ?? false);

  constructor(private readonly options: StartConsumerOptions) {
    // Typed explicitly: TypeScript only narrows through an assertion method on a declared type.
    this.registry = options.registry;
    this.logger = options.logger.child({ consumer: options.durable });
    this.clock = options.clock ?? systemClock;
    this.nakDelay = options.nakDelayMs ?? ((n: number) => retryDelayMs(n, { baseMs: 1_000, maxMs: MAX_RETRY_DELAY_MS }));
    this.policy = { maxDeliver: options.maxDeliver, retryDelayMs: this.nakDelay };
    this.digestMismatches = digestMismatchLog(this.logger, this.registry);
    this.writeDeadLetter = createDeadLetterWriter({
      bus: options.bus,
      db: options.db,
      durable: options.durable,
      stream: options.stream,
      subjectPrefix: options.deadLetterStream.subjectPrefix,
      clock: this.clock,
      logger: this.logger,
      keepsOrder: Boolean(options.orderKey),
      onWritten: () => (this.counts.deadLettered += 1),
    });
    this.attempts = {
      db: options.db,
      durable: options.durable,
      logger: this.logger,
      handle: options.handle,
      handleBatch: options.handleBatch,
      producer: options.producer,
      transactionTimeoutMs: options.transactionTimeoutMs ?? 60_000,
    };
    this.batching = Boolean(options.handleBatch) && (options.batchSize ?? 1) > 1;
    this.batches = new BatchQueue<PendingMessage>(
      Math.max(1, options.batchSize ?? 1),
      Math.max(1, options.concurrency ?? 1),
      (batch) => this.runBatchToVerdicts(batch),
    );
    this.order = options.orderKey ? this.messageOrder() : undefined;
  }

  /** Messages the bus may hand over at once: batching needs the next batches' messages while one runs. */
  get busConcurrency(): number | undefined {
    return this.batching ? this.batches.capacity : this.options.concurrency;
  }

  async onMessage(m: BusMessage): Promise<void> {
    const envelope = await this.admit(m);
    if (!envelope) return;
    const pending: PendingMessage = { m, envelope, key: this.options.orderKey?.(envelope) };
    this.order?.seen(pending);
    await this.apply(pending);
  }

  stop(): void {
    this.stopSignal.stop();
    this.order?.stop();
    this.inHand.releaseAll();
  }

  /**
   * Resolves when the message at `seq` is out of this process's hands: at once when it is not
   * being applied or held here, else once the attempt under way has its verdict.
   */
  whenOutOfHand(seq: number): Promise<void> {
    return this.inHand.left(seq);
  }

  stats(): PipelineStats {
    return { ...this.counts, held: this.order?.held ?? 0, heldPastLimit: this.order?.heldPastLimit ?? 0 };
  }

  /** Parses and checks a message; undefined when it was dead-lettered. */
  private async admit(m: BusMessage): Promise<ConsumedEnvelope | undefined> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(this.decoder.decode(m.data));
    } catch (error) {
      const unparseable = new AppError('events.unparseable', `Message body is not JSON: ${oneLine(error)}`);
      await this.deadLetterAndTerm(m, unparseable, undefined, false);
      return undefined;
    }
    try {
      const { envelope, schemaUri } = readConsumed(this.registry, this.options, parsed);
      if (schemaUri.kind === 'digest_differs') {
        this.counts.schemaDigestMismatches += 1;
        this.digestMismatches.note(envelope, schemaUri.digest);
      }
      return envelope;
    } catch (error) {
      // No redelivery can make an invalid event valid.
      await this.deadLetterAndTerm(m, error, parsed as Partial<EventEnvelope>, false);
      return undefined;
    }
  }

  /** Applies one message (in a batch when batching), keeping it in hand until it has a verdict or is held. */
  private async apply(pending: PendingMessage): Promise<void> {
    // Long handlers keep their message: without it the ack wait would hand it to a second replica.
    const { seq } = pending.m;
    const keepAlive = setInterval(() => pending.m.working(), keepAliveIntervalMs(this.options.ackWaitMs));
    keepAlive.unref?.();
    this.inHand.take(seq);
    try {
      if (this.batching) await this.batches.add(pending);
      else await this.run([pending]);
    } finally {
      clearInterval(keepAlive);
      this.inHand.release(seq);
    }
  }

  /**
   * The messages of one serial run (a batch, or one message), in stream order, minus those that
   * must wait for an earlier message of their key: those are held, and come back through `apply`.
   */
  private async run(batch: readonly PendingMessage[]): Promise<void> {
    const sorted = inStreamOrder(batch);
    const ready = this.order ? await this.order.withoutHeld(sorted) : sorted;
    if (!ready.length) return;
    if (this.batching) await this.runBatch(ready);
    else for (const { m, envelope } of ready) await this.settle(m, envelope);
  }

  private runBatchToVerdicts(batch: PendingMessage[]): Promise<void> {
    return this.run(batch).catch((error: unknown) => {
      this.logger.error({ err: oneLine(error), size: batch.length }, 'batch ended without verdicts; the ack wait will redeliver');
    });
  }

  /** Handles one message alone until it has a verdict: acked, redelivered, dead-lettered or held. */
  private async settle(m: BusMessage, envelope: ConsumedEnvelope): Promise<void> {
    for (;;) {
      let failure: unknown;
      try {
        this.acked([{ m }], await handleOnce(this.attempts, m, envelope));
      } catch (error) {
        failure = error;
        this.counts.lastError = oneLine(error);
      }
      const verdict = verdictFor(failure, m.deliveryCount, this.policy);
      switch (verdict.kind) {
        case 'ack':
          return;
        case 'hold':
          if (await this.databaseReturned()) continue;
          // Stopping: leave the message to the next consumer without spending it on a verdict.
          m.nak();
          return;
        case 'deadLetter':
          await this.deadLetterAndTerm(m, failure, envelope, true);
          return;
        case 'retry':
          this.counts.retried += 1;
          this.logger.warn(
            { eventId: envelope.eventId, deliveryCount: m.deliveryCount, err: this.counts.lastError },
            'event handler failed; will redeliver',
          );
          m.nak(verdict.afterMs);
          return;
      }
    }
  }

  /**
   * A batch until every message has a verdict. A database outage holds it (as settle does for
   * one); any other failure hands each message to `settle`, which finds the one that failed.
   */
  private async runBatch(batch: readonly PendingMessage[]): Promise<void> {
    for (;;) {
      try {
        this.acked(batch, await handleBatchOnce(this.attempts, batch));
        return;
      } catch (error) {
        this.counts.lastError = oneLine(error);
        if (afterBatchFailure(error) === 'waitForDatabase') {
          if (await this.databaseReturned()) continue;
          for (const { m } of batch) m.nak();
          return;
        }
        this.logger.warn({ size: batch.length, err: this.counts.lastError }, 'batch failed; handling its events one at a time');
        for (const { m, envelope } of batch) await this.settle(m, envelope);
        return;
      }
    }
  }

  /** After the commit: the acks, the counts, and the relay woken when events were emitted. */
  private acked(messages: ReadonlyArray<{ m: BusMessage }>, outcome: AttemptOutcome): void {
    for (const { m } of messages) {
      m.ack();
      this.settledHere(m);
    }
    this.counts.processed += outcome.processed;
    this.counts.duplicates += outcome.duplicates;
    if (outcome.emitted) this.options.afterCommit?.();
  }

  private async deadLetterAndTerm(
    m: BusMessage,
    error: unknown,
    envelope: Partial<EventEnvelope> | undefined,
    admitted: boolean,
  ): Promise<void> {
    try {
      await this.writeDeadLetter(m, error, envelope, admitted);
      m.term(oneLine(error, 100));
      this.settledHere(m);
    } catch (publishError) {
      // Without its dead letter the message must stay: redeliver it (or, after its last
      // delivery, leave it to the MAX_DELIVERIES safety net).
      this.logger.error({ err: oneLine(publishError) }, 'dead-letter publish failed; message kept');
      m.nak(this.nakDelay(m.deliveryCount));
    }
  }

  /** This process applied or dead-lettered `m`: later messages of its key may be free now. */
  private settledHere(m: BusMessage): void {
    this.order?.settled(m);
  }

  private databaseReturned(): Promise<boolean> {
    return databaseReturned(this.options.db, this.logger, this.counts.lastError, this.stopSignal);
  }

  private messageOrder(): MessageOrder {
    const { options } = this;
    return new MessageOrder({
      bus: options.bus,
      db: options.db,
      stream: options.stream,
      durable: options.durable,
      filterSubject: options.subject,
      maxDeliver: options.maxDeliver,
      ackWaitMs: options.ackWaitMs,
      maxRetryDelayMs: MAX_RETRY_DELAY_MS,
      holdLimitMs: options.holdLimitMs,
      clock: this.clock,
      logger: this.logger,
      keyOf: (data) => this.keyOf(data),
      release: (items) => this.releaseHeld(items),
    });
  }

  /** The key, event id and tenant of a stored message, as `admit` would read it; undefined when it would reject it. */
  private keyOf(data: Uint8Array): { key: string; eventId: string; tenantId: string } | undefined {
    try {
      const { envelope } = readConsumed(this.registry, this.options, JSON.parse(this.decoder.decode(data)));
      const key = this.options.orderKey!(envelope);
      return key === undefined ? undefined : { key, eventId: envelope.eventId, tenantId: envelope.tenantId };
    } catch {
      return undefined;
    }
  }

  /** Held messages that may go now, in sequence order: batches take them in it, a single consumer one after the other. */
  private releaseHeld(items: PendingMessage[]): void {
    if (this.batching) for (const item of items) void this.apply(item);
    else
      void (async () => {
        for (const item of items) await this.apply(item);
      })();
  }
}
