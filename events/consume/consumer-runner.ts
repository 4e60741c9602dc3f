import { withMessageSpan } from '../../platform/observability/telemetry.js';
import type { Subscription } from '../bus/event-bus.js';
import { ConsumerPipeline } from './consumer-pipeline.js';
import type { ConsumerHandle, StartConsumerOptions } from './consumer-spec.js';
import type { DeadLetterWriter } from '../dead-letters/dead-letter-writer.js';
import type { EventEnvelope } from '../envelope.js';
import { ANY_TENANT, inboxHas } from '../ledger/inbox.js';
import { oneLine } from '../error-text.logic.js';

/**
 * Runs one consumer: its messages go through the pipeline (consumer-pipeline.ts: admit, apply,
 * run, settle) to a verdict each, and the MAX_DELIVERIES safety net writes the dead letters a
 * dying process could not.
 */
export async function startConsumer(options: StartConsumerOptions): Promise<ConsumerHandle> {
  const pipeline = new ConsumerPipeline(options);
  const stopSafetyNet = deadLettersForMaxDeliveries(options, pipeline.writeDeadLetter, pipeline.logger);
  const subscription = await subscribe(options, pipeline);
  pipeline.logger.info({ stream: options.stream, subject: options.subject }, 'consumer started');
  return {
    durable: options.durable,
    async stop() {
      pipeline.stop();
      await subscription.stop();
      stopSafetyNet();
    },
    stats: () => pipeline.stats(),
  };
}

function subscribe(options: StartConsumerOptions, pipeline: ConsumerPipeline): Promise<Subscription> {
  const { durable } = options;
  return options.bus.consume(
    {
      stream: options.stream,
      durable,
      filterSubject: options.subject,
      ackWaitMs: options.ackWaitMs,
      maxDeliver: options.maxDeliver,
      maxAckPending: options.maxAckPending,
      concurrency: pipeline.busConcurrency,
    },
    // One span per delivery, under the producer's trace (its traceparent header).
    (m) =>
      withMessageSpan({ subject: m.subject, headers: m.headers, deliveryCount: m.deliveryCount, consumer: durable }, () =>
        pipeline.onMessage(m),
      ),
  );
}

/**
 * Safety net (design §4): a process that died on a message's last delivery never wrote its dead
 * letter; JetStream then only raises the MAX_DELIVERIES advisory, which carries no body. Returns
 * the function that stops listening.
 */
function deadLettersForMaxDeliveries(
  options: StartConsumerOptions,
  writeDeadLetter: DeadLetterWriter,
  logger: StartConsumerOptions['logger'],
): () => void {
  const { bus, db, durable } = options;
  return bus.onMaxDeliveries((advisory) => {
    if (advisory.stream !== options.stream || advisory.consumer !== durable) return;
    void (async () => {
      const stored = await bus.getMessage(options.stream, advisory.streamSeq);
      if (!stored) return;
      const envelope = parsedOrUndefined(stored.data);
      const tenantId = typeof envelope?.tenantId === 'string' ? envelope.tenantId : ANY_TENANT;
      if (typeof envelope?.eventId === 'string' && (await inboxHas(db, durable, { tenantId, eventId: envelope.eventId }))) return;
      await writeDeadLetter(
        { ...stored, deliveryCount: advisory.deliveries },
        new Error(`max deliveries (${advisory.deliveries}) reached without a handler verdict`),
        envelope,
        true,
      );
    })().catch((error: unknown) =>
      logger.error({ err: oneLine(error), seq: advisory.streamSeq }, 'dead-letter safety net failed'),
    );
  });
}

function parsedOrUndefined(data: Uint8Array): Partial<EventEnvelope> | undefined {
  try {
    return JSON.parse(Buffer.from(data).toString('utf8')) as Partial<EventEnvelope>;
  } catch {
    return undefined;
  }
}
