import type { Db } from '../../platform/db/database.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { BusMessage } from '../bus/event-bus.js';
import type { BatchEventHandler, EventHandler, EventHandlerContext } from './consumer-spec.js';
import type { PendingMessage } from '../ordering/pending.logic.js';
import { eventKey } from '../ledger/event-key.logic.js';
import { onePerEvent } from './consumer-stages.logic.js';
import type { ConsumedEnvelope } from '../envelope.js';
import type { EventProducer } from '../publish/outbox.js';
import { HandlerOutbox } from './handler-outbox.js';
import { recordInbox, recordInboxBatch } from '../ledger/inbox.js';

/** What one attempt needs: the handlers and where they write. */
export interface AttemptDeps {
  db: Db;
  durable: string;
  logger: Logger;
  handle: EventHandler;
  handleBatch?: BatchEventHandler;
  producer?: EventProducer;
  transactionTimeoutMs: number;
}

/** What a committed attempt did; the caller acks. */
export interface AttemptOutcome {
  processed: number;
  duplicates: number;
  /** The handlers emitted events: the relay is worth waking. */
  emitted: boolean;
}

/** One attempt at one message: inbox row, handler and the rows it emitted, in one transaction. */
export async function handleOnce(deps: AttemptDeps, m: BusMessage, envelope: ConsumedEnvelope): Promise<AttemptOutcome> {
  const outbox = new HandlerOutbox(deps.producer, deps.durable);
  const fresh = await deps.db.$transaction(
    async (tx) => {
      const entry = { consumer: deps.durable, tenantId: envelope.tenantId, eventId: envelope.eventId, subject: m.subject };
      if (!(await recordInbox(tx, entry))) return false;
      await deps.handle(tx, envelope, handlerContext(deps.logger, m, envelope, outbox));
      await outbox.write(tx);
      return true;
    },
    { timeout: deps.transactionTimeoutMs, maxWait: 10_000 },
  );
  return { processed: fresh ? 1 : 0, duplicates: fresh ? 0 : 1, emitted: outbox.emitted };
}

/**
 * One attempt at a batch: the inbox rows of all its events in one statement, `handleBatch` for
 * those not handled before, the outbox rows of everything they emitted in one statement, one
 * commit.
 */
export async function handleBatchOnce(deps: AttemptDeps, batch: readonly PendingMessage[]): Promise<AttemptOutcome> {
  const outbox = new HandlerOutbox(deps.producer, deps.durable);
  const fresh = await deps.db.$transaction(
    async (tx) => {
      const events = onePerEvent(batch);
      const fresh = await recordInboxBatch(
        tx,
        deps.durable,
        events.map(({ m, envelope }) => ({ tenantId: envelope.tenantId, eventId: envelope.eventId, subject: m.subject })),
      );
      const handled = events
        .filter(({ envelope }) => fresh.has(eventKey(envelope)))
        .map(({ m, envelope }) => ({ envelope, ctx: handlerContext(deps.logger, m, envelope, outbox) }));
      if (handled.length) await deps.handleBatch!(tx, handled, deps.logger);
      await outbox.write(tx);
      return fresh;
    },
    { timeout: deps.transactionTimeoutMs, maxWait: 10_000 },
  );
  return { processed: fresh.size, duplicates: batch.length - fresh.size, emitted: outbox.emitted };
}

function handlerContext(logger: Logger, m: BusMessage, envelope: ConsumedEnvelope, outbox: HandlerOutbox): EventHandlerContext {
  let eventLogger: Logger | undefined;
  return {
    eventId: envelope.eventId,
    correlationId: envelope.correlationId ?? envelope.eventId,
    traceparent: m.headers.traceparent ?? '',
    subject: m.subject,
    deliveryCount: m.deliveryCount,
    // Made on first use: a child logger per event costs more than most handlers' logic.
    get logger() {
      return (eventLogger ??= logger.child({ eventId: envelope.eventId }));
    },
    emit: outbox.emitterFor(m, envelope),
  };
}
