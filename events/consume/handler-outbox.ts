import type { Tx } from '../../platform/db/database.js';
import { childTraceparent } from '../../platform/observability/trace-context.js';
import type { BusMessage } from '../bus/event-bus.js';
import type { EventHandlerContext } from './consumer-spec.js';
import type { ConsumedEnvelope } from '../envelope.js';
import { outboxInsertSql, type EmitInput, type EventProducer, type OutboxRow } from '../publish/outbox.js';

/**
 * The one write path of the events that consumed-event handlers emit, for one message or a batch
 * alike. `ctx.emit` builds and validates the events at once (an invalid event fails the handler
 * where it emits it) and keeps their rows; `write` inserts every row of the transaction in one
 * statement, in emit order, before the commit.
 */
export class HandlerOutbox {
  private readonly rows: OutboxRow[] = [];

  constructor(
    private readonly producer: EventProducer | undefined,
    private readonly durable: string,
  ) {}

  /** `ctx.emit` for the handler of `envelope`. */
  emitterFor(m: BusMessage, envelope: ConsumedEnvelope): EventHandlerContext['emit'] {
    return async (input) => {
      const prepared = this.requireProducer().prepare(causedBy(m, envelope, input));
      this.rows.push(...prepared.rows);
      return prepared.envelopes;
    };
  }

  /** True once a handler emitted something: the relay is worth waking after the commit. */
  get emitted(): boolean {
    return this.rows.length > 0;
  }

  async write(tx: Tx): Promise<void> {
    if (this.rows.length) await tx.$executeRaw(outboxInsertSql(this.rows));
  }

  private requireProducer(): EventProducer {
    if (!this.producer) throw new Error(`consumer ${this.durable} was started without a producer; ctx.emit is unavailable`);
    return this.producer;
  }
}

/** The EmitInput of an event caused by the consumed one: same correlation, same trace. */
function causedBy(m: BusMessage, envelope: ConsumedEnvelope, input: Parameters<EventHandlerContext['emit']>[0]): EmitInput {
  return {
    ...input,
    correlationId: envelope.correlationId ?? envelope.eventId,
    causationId: envelope.eventId,
    traceparent: input.traceparent ?? childTraceparent(m.headers.traceparent),
  };
}
