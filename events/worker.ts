import type { Config } from '../platform/config/config.js';
import type { Db } from '../platform/db/database.js';
import type { Logger } from '../platform/logger.js';
import type { EventBus } from './bus/event-bus.js';
import { systemClock, type Clock } from './clock.js';
import { startConsumer, type ConsumerHandle, type ConsumerSpec, type ConsumerStats } from './consumer-runner.js';
import { createDlqMonitor, dlqDepth, type DlqMonitor } from './dlq.js';
import type { DlqAlertState } from './dlq-monitor.logic.js';
import { createEventProducer, type EventProducer } from './outbox.js';
import { createRetentionJob, type RetentionJob } from './retention.js';
import { createOutboxRelay, type OutboxRelay, type OutboxRelayOptions, type RelayStatus } from './outbox-relay.js';
import { loadSchemaRegistry, type SchemaRegistry } from './schemas/registry.js';
import { dlqSubjectPrefix, ensureStreams, type StreamOptions } from './streams.js';

export type { ConsumerSpec };

export interface EventWorkerOptions {
  bus: EventBus;
  db: Db;
  logger: Logger;
  config: Pick<Config, 'events' | 'service'>;
  consumers: ConsumerSpec[];
  registry?: SchemaRegistry;
  /** The producer handlers emit with; by default one for `serviceName` from the config. */
  producer?: EventProducer;
  serviceName?: string;
  clock?: Clock;
  streams?: StreamOptions;
  relay?: Pick<OutboxRelayOptions, 'batchSize' | 'pollIntervalMs' | 'retryBaseMs' | 'retryMaxMs'>;
  dlqCheckIntervalMs?: number;
  nakDelayMs?: (deliveryCount: number) => number;
}

export interface EventWorkerHealth {
  status: 'ok' | 'degraded';
  relay: RelayStatus;
  dlq: DlqAlertState;
  consumers: Array<{ durable: string } & ConsumerStats>;
}

export interface EventWorker {
  relay: OutboxRelay;
  dlqMonitor: DlqMonitor;
  retention: RetentionJob;
  producer: EventProducer;
  health(): EventWorkerHealth;
  /** Stops pulling, lets in-flight messages finish, then flushes the outbox relay. */
  stop(): Promise<void>;
}

export async function startEventWorker(options: EventWorkerOptions): Promise<EventWorker> {
  const { bus, db, config } = options;
  const logger = options.logger.child({ component: 'event-worker' });
  const clock = options.clock ?? systemClock;
  const registry = options.registry ?? loadSchemaRegistry();
  const producer =
    options.producer ??
    createEventProducer({
      registry,
      clock,
      source: { service: options.serviceName ?? 'catalog', instance: config.service.instance, commit: config.service.commit },
      dualPublishDays: config.events.dualPublishDays,
    });
  const dlq = { stream: config.events.dlqStream, subjectPrefix: dlqSubjectPrefix(config.events, options.streams) };

  await ensureStreams(bus, config, options.streams);
  const relay = createOutboxRelay({ db, bus, logger, clock, subjectPrefix: options.streams?.subjectPrefix, ...options.relay });
  relay.start();
  const dlqMonitor = createDlqMonitor({
    depth: () => dlqDepth(bus, dlq),
    alertAfterMs: config.events.dlqAlertMinutes * 60_000,
    logger,
    clock,
  });
  await dlqMonitor.check();
  dlqMonitor.start(options.dlqCheckIntervalMs);
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
          dlq,
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
    dlqMonitor.stop();
    await retention.stop();
    throw error;
  }
  logger.info({ consumers: consumers.map((c) => c.durable) }, 'event worker started');

  return {
    relay,
    dlqMonitor,
    retention,
    producer,
    health() {
      const relayStatus = relay.status();
      const dlqState = dlqMonitor.state();
      return {
        status: dlqState.alerting || relayStatus.consecutiveFailures > 0 ? 'degraded' : 'ok',
        relay: relayStatus,
        dlq: dlqState,
        consumers: consumers.map((c) => ({ durable: c.durable, ...c.stats() })),
      };
    },
    async stop() {
      await Promise.all(consumers.map((c) => c.stop()));
      // After the consumers: the events their last handlers wrote go out with this flush.
      await relay.stop();
      dlqMonitor.stop();
      await retention.stop();
      logger.info('event worker stopped');
    },
  };
}
