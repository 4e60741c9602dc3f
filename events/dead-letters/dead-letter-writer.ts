import { fileURLToPath } from 'node:url';
import type { Db } from '../../platform/db/database.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { MessageBus } from '../bus/event-bus.js';
import type { Clock } from '../../platform/clock.js';
import { deadLetterHeaders, deadLetterMsgId, deadLetterSubject } from './dead-letter.logic.js';
import type { EventEnvelope } from '../envelope.js';
import { recordDeadLetterMark } from '../ledger/inbox.js';
import { deadLetterMark } from '../ordering/order-hold.logic.js';
import { oneLine } from '../error-text.logic.js';

/** Where the code is installed: dead letters name stack frames relative to it. */
const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** What a dead letter is made of: the message as delivered (or as stored, for the safety net). */
export interface DeadLetterSource {
  subject: string;
  data: Uint8Array;
  seq: number;
  deliveryCount: number;
  headers: Record<string, string>;
}

export interface DeadLetterWriterOptions {
  bus: MessageBus;
  db: Db;
  durable: string;
  stream: string;
  /** The dead letters' subject prefix (a wire name: `CATALOG.dlq`, design §4). */
  subjectPrefix: string;
  clock: Clock;
  logger: Logger;
  /** The consumer keeps an order (orderKey): later messages of a key may wait for this one. */
  keepsOrder: boolean;
  /** Counts the letters written. */
  onWritten(): void;
}

export type DeadLetterWriter = (
  message: DeadLetterSource,
  error: unknown,
  envelope: Partial<EventEnvelope> | undefined,
  admitted: boolean,
) => Promise<void>;

/**
 * Publishes dead letters. For a message the consumer admitted (`admitted`), the order guard may
 * have later messages of its key waiting for it: first the mark that lets them go ahead (failing,
 * the message stays). A message rejected on sight never held anything up.
 */
export function createDeadLetterWriter(options: DeadLetterWriterOptions): DeadLetterWriter {
  const { bus, db, durable, stream, logger } = options;
  return async (message, error, envelope, admitted) => {
    const eventId = typeof envelope?.eventId === 'string' ? envelope.eventId : undefined;
    if (options.keepsOrder && admitted && eventId !== undefined)
      await recordDeadLetterMark(db, durable, deadLetterMark(message.seq, eventId), message.subject);
    await bus.publish(deadLetterSubject(options.subjectPrefix, message.subject), message.data, {
      msgId: deadLetterMsgId(durable, stream, message.seq),
      headers: deadLetterHeaders({
        originalSubject: message.subject,
        originalStream: stream,
        originalSeq: message.seq,
        consumer: durable,
        deliveryCount: message.deliveryCount,
        error,
        now: options.clock.now(),
        eventId,
        eventType: typeof envelope?.eventType === 'string' ? envelope.eventType : undefined,
        tenantId: typeof envelope?.tenantId === 'string' ? envelope.tenantId : undefined,
        traceparent: message.headers.traceparent,
        projectRoot: PROJECT_ROOT,
      }),
    });
    options.onWritten();
    logger.error(
      { subject: message.subject, seq: message.seq, eventId: envelope?.eventId, err: oneLine(error) },
      'event dead-lettered',
    );
  };
}
