import type { PlatformConfig } from '../platform/config/config.js';
import type { EventsSlice } from './config.js';
import type { Db } from '../platform/db/database.js';
import type { Logger } from '../platform/logger.js';
import type { EventBus } from './bus/event-bus.js';
import { systemClock, type Clock } from '../platform/clock.js';
import { startConsumer } from './consume/consumer-runner.js';
import type { ConsumerHandle, ConsumerSpec, ConsumerStats } from './consume/consumer-spec.js';
import { createDeadLetterMonitor, sampleDeadLetters, type DeadLetterMonitor } from './dead-letters/dead-letter-monitor.js';
import type { DeadLetterAlertState } from './dead-letters/dead-letter-monitor.logic.js';
import { createEventProducer, type EventProducer } from './publish/outbox.js';
import { createRetentionJob, type RetentionJob } from './archive/retention.js';
import { createOutboxRelay, type OutboxRelay, type OutboxRelayOptions, type RelayStatus } from './publish/outbox-relay.js';
import { loadSchemaRegistry, type SchemaRegistry } from './schemas/registry.js';
import { deadLetterSubjectPrefix, ensureStreams, type StreamOptions } from './streams.js';

export type { ConsumerSpec };

export interface EventWorkerOptions {
  bus: EventBus;
  db: Db;
  logger: Logger;
  config: EventsSlice & Pick<PlatformConfig, 'service'>;
  consumers: ConsumerSpec[];
  registry?: SchemaRegistry;
  /** The producer handlers emit with; by default one for `serviceName` from the config. */
  producer?: EventProducer;
  serviceName?: string;
  clock?: Clock;
  streams?: StreamOptions;
  relay?: Pick<OutboxRelayOptions, 'batchSize' | 'pollIntervalMs' | 'retryBaseMs' | 'retryMaxMs'>;
  deadLetterCheckIntervalMs?: number;
  nakDelayMs?: (deliveryCount: number) => number;
}

export interface EventWorkerHealth {
  status: 'ok' | 'degraded';
  relay: RelayStatus;
  deadLetters: DeadLetterAlertState;
  consumers: Array<{ durable: string } & ConsumerStats>;
}

export interface EventWorker {
  relay: OutboxRelay;
  deadLetterMonitor: DeadLetterMonitor;
  retention: RetentionJob;
  producer: EventProducer;
  health(): EventWorkerHealth;
  /** Stops pulling, lets in-flight messages finish, then flushes the outbox relay. */
  stop(): Promise<void>;
}

/** The producer the worker's handlers emit with: the catalog's, from the configuration. */
export function workerEventProducer(
  config: EventWorkerOptions['config'],
  options: { registry?: SchemaRegistry; clock?: Clock; serviceName?: string } = {},
): EventProducer {
  return createEventProducer({
    registry: options.registry ?? loadSchemaRegistry(),
    clock: options.clock ?? systemClock,
    source: { service: options.serviceName ?? 'catalog', instance: config.service.instance, commit: config.service.commit },
    dualPublishDays: config.events.dualPublishDays,
  });
}

export async function startEventWorker(options: EventWorkerOptions): Promise<EventWorker> {
  const { bus, db, config } = options;
  const logger = options.logger.child({ component: 'event-worker' });
  const clock = options.clock ?? systemClock;
  const registry = options.registry ?? loadSchemaRegistry();
  const producer = options.producer ?? workerEventProducer(config, { registry, clock, serviceName: options.serviceName });
  const deadLetterStream = {
    stream: config.events.dlqStream,
    subjectPrefix: deadLetterSubjectPrefix(config.events, options.streams),
  };

  await ensureStreams(bus, config, options.streams);
  const relay = createOutboxRelay({
    db,
    bus,
    logger,
    clock,
    subjectPrefix: options.streams?.subjectPrefix,
    leaseMs: config.events.relayLeaseSeconds * 1000,
    instance: config.service.instance,
    ...options.relay,
  });
  relay.start();
  const deadLetterMonitor = createDeadLetterMonitor({
    sample: () => sampleDeadLetters(bus, deadLetterStream),
    alertAfterMs: config.events.dlqAlertMinutes * 60_000,
    logger,
    clock,
    // One replica announces the alert in its log: the one leading the relay.
    announces: () => relay.status().leader,
  });
  await deadLetterMonitor.check();
  deadLetterMonitor.start(options.deadLetterCheckIntervalMs);
  const retention = createRetentionJob({
    db,
    clock,
    logger,
    archiveMonths: config.events.archiveMonths,
    intervalMs: config.events.retentionIntervalMinutes * 60_000,
  });
  retention.start();

  const consumers: ConsumerHandle[] = [];
  try {
    for (const spec of options.consumers) {
      consumers.push(
        await startConsumer({
          ...spec,
          bus,
          db,
          logger,
          registry,
          producer,
          clock,
          deadLetterStream,
          maxDeliver: spec.maxDeliver ?? config.events.maxDeliver,
          ackWaitMs: spec.ackWaitMs ?? config.events.ackWaitSeconds * 1000,
          nakDelayMs: options.nakDelayMs,
          afterCommit: () => relay.notify(),
        }),
      );
    }
  } catch (error) {
    await Promise.all(consumers.map((c) => c.stop()));
    await relay.stop();
    deadLetterMonitor.stop();
    await retention.stop();
    throw error;
  }
  logger.info({ consumers: consumers.map((c) => c.durable) }, 'event worker started');

  return {
    relay,
    deadLetterMonitor,
    retention,
    producer,
    health() {
      const relayStatus = relay.status();
      const deadLetterState = deadLetterMonitor.state();
      return {
        status: deadLetterState.alerting || relayStatus.consecutiveFailures > 0 ? 'degraded' : 'ok',
        relay: relayStatus,
        deadLetters: deadLetterState,
        consumers: consumers.map((c) => ({ durable: c.durable, ...c.stats() })),
      };
    },
    async stop() {
      await Promise.all(consumers.map((c) => c.stop()));
      // After the consumers: the events their last handlers wrote go out with this flush.
      await relay.stop();
      deadLetterMonitor.stop();
      await retention.stop();
      logger.info('event worker stopped');
    },
  };
}
