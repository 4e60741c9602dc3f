import { withMessageSpan } from '../../platform/observability/telemetry.js';
import type { Subscription } from '../bus/event-bus.js';
import { ConsumerPipeline } from './consumer-pipeline.js';
import type { ConsumerHandle, StartConsumerOptions } from './consumer-spec.js';
import { MaxDeliveriesSafetyNet } from './max-deliveries-safety-net.js';

/**
 * Runs one consumer: its messages go through the pipeline (consumer-pipeline.ts: admit, apply,
 * run, settle) to a verdict each, and the MAX_DELIVERIES safety net (max-deliveries-safety-net.ts)
 * writes the dead letters a dying process could not.
 */
export async function startConsumer(options: StartConsumerOptions): Promise<ConsumerHandle> {
  const pipeline = new ConsumerPipeline(options);
  const safetyNet = new MaxDeliveriesSafetyNet({
    bus: options.bus,
    db: options.db,
    stream: options.stream,
    durable: options.durable,
    writeDeadLetter: pipeline.writeDeadLetter,
    logger: pipeline.logger,
    graceMs: options.safetyNetGraceMs ?? options.ackWaitMs,
    whenOutOfHand: (seq) => pipeline.whenOutOfHand(seq),
  });
  const subscription = await subscribe(options, pipeline).catch((error: unknown) => {
    safetyNet.stop();
    throw error;
  });
  pipeline.logger.info({ stream: options.stream, subject: options.subject }, 'consumer started');
  return {
    durable: options.durable,
    async stop() {
      pipeline.stop();
      await subscription.stop();
      safetyNet.stop();
    },
    stats: () => ({ ...pipeline.stats(), ...safetyNet.stats() }),
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
