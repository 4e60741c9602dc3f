import type { Db } from '../../platform/db/database.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { EventBus, MaxDeliveriesAdvisory } from '../bus/event-bus.js';
import type { DeadLetterWriter } from '../dead-letters/dead-letter-writer.js';
import type { EventEnvelope } from '../envelope.js';
import { oneLine } from '../error-text.logic.js';
import { ANY_TENANT, inboxHas } from '../ledger/inbox.js';
import { retryDelayMs } from '../retry.logic.js';
import { databaseReturned, StopSignal } from './database-wait.js';
import { databaseUnreachable } from './verdict.logic.js';

export interface SafetyNetOptions {
  bus: EventBus;
  db: Db;
  stream: string;
  durable: string;
  writeDeadLetter: DeadLetterWriter;
  logger: Logger;
  /**
   * How long a message whose deliveries ran out may still be committed by a holder elsewhere
   * (another replica whose keep-alives a NATS restart lost) before its dead letter is written.
   */
  graceMs: number;
  /** Resolves when this process no longer holds the message (consumer-pipeline.ts). */
  whenOutOfHand(seq: number): Promise<void>;
}

export interface SafetyNetStats {
  /** MAX_DELIVERIES advisories of this consumer decided here, a letter written or not. */
  exhaustedDecided: number;
  /** Of those, events found handled after all (the last delivery committed late): no letter. */
  exhaustedHandledLate: number;
}

/**
 * Safety net (design §4): a process that died on a message's last delivery never wrote its dead
 * letter; JetStream then only raises the MAX_DELIVERIES advisory, which carries no body, to every
 * replica. The advisory alone does not mean the message was given up: it also comes when the last
 * delivery is still being handled but its ack wait ran out (keep-alives lost in a NATS restart, a
 * holder waiting for Postgres). So the decision waits for this process's own attempt, then a grace
 * for another replica's, and only then writes a letter for an event the inbox does not hold. It
 * waits out a database or bus outage instead of giving up: a letter not written is a lost message.
 */
export class MaxDeliveriesSafetyNet {
  private readonly stopSignal = new StopSignal();
  private readonly counts: SafetyNetStats = { exhaustedDecided: 0, exhaustedHandledLate: 0 };
  private readonly stopListening: () => void;
  private undecided = 0;

  constructor(private readonly options: SafetyNetOptions) {
    this.stopListening = options.bus.onMaxDeliveries((advisory) => {
      if (advisory.stream !== options.stream || advisory.consumer !== options.durable) return;
      void this.decide(advisory);
    });
  }

  stop(): void {
    this.stopListening();
    this.stopSignal.stop();
    // Every replica hears each advisory; a replica still running decides these.
    if (this.undecided > 0)
      this.options.logger.warn({ undecided: this.undecided }, 'stopping with max-deliveries advisories undecided here');
  }

  stats(): SafetyNetStats {
    return { ...this.counts };
  }

  private async decide(advisory: MaxDeliveriesAdvisory): Promise<void> {
    this.undecided += 1;
    try {
      await this.decideOnce(advisory);
    } finally {
      this.undecided -= 1;
    }
  }

  private async decideOnce(advisory: MaxDeliveriesAdvisory): Promise<void> {
    await this.options.whenOutOfHand(advisory.streamSeq);
    await this.stopSignal.pause(this.options.graceMs);
    for (let attempt = 1; !this.stopSignal.stopping; attempt++) {
      try {
        const handledLate = await this.writeUnlessHandled(advisory);
        this.counts.exhaustedDecided += 1;
        if (handledLate) this.counts.exhaustedHandledLate += 1;
        return;
      } catch (error) {
        if (!(await this.recovered(error, attempt, advisory))) return;
      }
    }
  }

  /** The letter, unless the inbox holds the event; true when it does (handled late, no letter). */
  private async writeUnlessHandled(advisory: MaxDeliveriesAdvisory): Promise<boolean> {
    const { bus, db, durable, stream } = this.options;
    const stored = await bus.getMessage(stream, advisory.streamSeq);
    // Gone from the stream (purged, or the stream's limits dropped it): nothing left to keep.
    if (!stored) return false;
    const envelope = parsedOrUndefined(stored.data);
    const tenantId = typeof envelope?.tenantId === 'string' ? envelope.tenantId : ANY_TENANT;
    if (typeof envelope?.eventId === 'string' && (await inboxHas(db, durable, { tenantId, eventId: envelope.eventId }))) {
      this.options.logger.info(
        { seq: advisory.streamSeq, eventId: envelope.eventId },
        'deliveries ran out but the event was handled: no dead letter',
      );
      return true;
    }
    await this.options.writeDeadLetter(
      { ...stored, deliveryCount: advisory.deliveries },
      new Error(`max deliveries (${advisory.deliveries}) reached without a handler verdict`),
      envelope,
      true,
    );
    return false;
  }

  /**
   * After a failed decision: wait for the database (then give a holder that waited for it too its
   * grace again) or back off for anything else. False when stopping.
   */
  private async recovered(error: unknown, attempt: number, advisory: MaxDeliveriesAdvisory): Promise<boolean> {
    const { logger, db } = this.options;
    if (databaseUnreachable(error)) {
      if (!(await databaseReturned(db, logger, oneLine(error), this.stopSignal))) return false;
      await this.stopSignal.pause(this.options.graceMs);
    } else {
      logger.warn({ err: oneLine(error), seq: advisory.streamSeq, attempt }, 'dead-letter safety net failed; trying again');
      await this.stopSignal.pause(retryDelayMs(attempt, { baseMs: 250, maxMs: 5_000 }));
    }
    return !this.stopSignal.stopping;
  }
}

function parsedOrUndefined(data: Uint8Array): Partial<EventEnvelope> | undefined {
  try {
    return JSON.parse(Buffer.from(data).toString('utf8')) as Partial<EventEnvelope>;
  } catch {
    return undefined;
  }
}
