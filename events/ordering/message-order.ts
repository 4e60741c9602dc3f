import type { Db } from '../../platform/db/database.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { BusMessage, StreamStore } from '../bus/event-bus.js';
import type { Clock } from '../../platform/clock.js';
import { keepAliveIntervalMs, orderCandidates, type PendingMessage } from './pending.logic.js';
import { HeldMessages } from './held-messages.js';
import { createOrderGuard, type OrderGuard } from './order-guard.js';
import { holdLimitMs } from './order-hold.logic.js';
import { oneLine } from '../error-text.logic.js';

export interface MessageOrderOptions {
  /** Read for the order floor and what lies between it and a message (order-guard.ts). */
  bus: StreamStore;
  db: Db;
  stream: string;
  durable: string;
  filterSubject: string;
  maxDeliver: number;
  ackWaitMs: number;
  maxRetryDelayMs: number;
  /** How long a message waits for an earlier one of its key at most; default holdLimitMs of the delivery policy. */
  holdLimitMs?: number;
  clock: Clock;
  logger: Logger;
  /** The key, event id and tenant of a stored message, as the consumer reads it; undefined when it rejects it. */
  keyOf(data: Uint8Array): { key: string; eventId: string; tenantId: string } | undefined;
  /** Hands messages that waited long enough back to be applied, in sequence order. */
  release(items: PendingMessage[]): void;
}

/**
 * The consumer's side of the producer-order rule (orderKey): the order guard says which messages
 * must wait for an earlier message of their key, and those are held (held-messages.ts) until it
 * settles, here or anywhere.
 */
export class MessageOrder {
  private readonly guard: OrderGuard;
  private readonly holds: HeldMessages<PendingMessage>;

  constructor(private readonly options: MessageOrderOptions) {
    const { bus, db, stream, durable, filterSubject, keyOf, clock, logger } = options;
    const holdLimit =
      options.holdLimitMs ??
      holdLimitMs({ maxDeliver: options.maxDeliver, ackWaitMs: options.ackWaitMs, maxRetryDelayMs: options.maxRetryDelayMs });
    this.guard = createOrderGuard({ bus, db, stream, durable, filterSubject, keyOf, clock, logger, holdLimitMs: holdLimit });
    this.holds = new HeldMessages<PendingMessage>({
      keepAliveMs: keepAliveIntervalMs(options.ackWaitMs),
      holdLimitMs: holdLimit,
      clock: options.clock,
      logger: options.logger,
      recheck: (items) => this.guard.check(orderCandidates(items)),
      release: options.release,
    });
  }

  /** An admitted message: the guard remembers it was here before anything later of its key. */
  seen(pending: PendingMessage): void {
    if (pending.key !== undefined)
      this.guard.seen(pending.m.seq, pending.key, pending.envelope.eventId, pending.envelope.tenantId);
  }

  /** The messages (in stream order) that may be applied now; the others are held. */
  async withoutHeld(sorted: readonly PendingMessage[]): Promise<PendingMessage[]> {
    let waiting: Map<number, number>;
    try {
      waiting = await this.guard.check(orderCandidates(sorted));
    } catch (error) {
      // Neither the broker nor the database can say what came before: wait with all of them.
      this.options.logger.warn({ err: oneLine(error) }, 'order check failed; holding the messages');
      waiting = new Map(sorted.map((p) => [p.m.seq, -1]));
    }
    for (const pending of sorted) {
      const blocker = waiting.get(pending.m.seq);
      if (blocker !== undefined) this.holds.hold(pending, blocker);
    }
    return sorted.filter((pending) => !waiting.has(pending.m.seq));
  }

  /** This process applied or dead-lettered `m`: later messages of its key may be free now. */
  settled(m: BusMessage): void {
    this.guard.settled(m.seq);
    this.holds.poke();
  }

  stop(): void {
    this.holds.stop();
  }

  /** Whether the message at `seq` is held here now, waiting for an earlier one of its key. */
  isHeld(seq: number): boolean {
    return this.holds.has(seq);
  }

  get held(): number {
    return this.holds.size;
  }

  get heldPastLimit(): number {
    return this.holds.expired;
  }
}
