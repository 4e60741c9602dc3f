import type { PlatformConfig } from '../platform/config/config.js';
import type { EventsSlice } from './config.js';
import type { Db } from '../platform/db/database.js';
import type { Logger } from '../platform/observability/logger.js';
import type { EventBus } from './bus/event-bus.js';
import { systemClock, type Clock } from '../platform/clock.js';
import { buildParts, PartStack } from '../platform/lifecycle/parts.js';
import { startConsumer } from './consume/consumer-runner.js';
import type { ConsumerHandle, ConsumerSpec, ConsumerStats } from './consume/consumer-spec.js';
import { createDeadLetterMonitor, sampleDeadLetters, type DeadLetterMonitor } from './dead-letters/dead-letter-monitor.js';
import type { DeadLetterAlertState } from './dead-letters/dead-letter-monitor.logic.js';
import { createEventProducer, type EventProducer } from './publish/outbox.js';
import { createRetentionJob, type RetentionJob } from './archive/retention.js';
import { createOutboxRelay, type OutboxRelay, type OutboxRelayOptions, type RelayStatus } from './publish/outbox-relay.js';
import type { OutboxCommitFeed } from './publish/outbox-wakeup.js';
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
  /**
   * Commits of outbox rows by any process (LISTEN on Postgres): the relay leader wakes on each
   * instead of waiting for its poll. Without it, rows other processes commit wait for the poll.
   */
  outboxCommits?: OutboxCommitFeed;
  deadLetterCheckIntervalMs?: number;
  nakDelayMs?: (deliveryCount: number) => number;
}

export interface EventWorkerHealth {
  status: 'ok' | 'degraded';
  relay: RelayStatus;
  /**
   * The LISTEN for outbox commits: `off` without one (OUTBOX_LISTEN=false, the embedded database),
   * `reconnecting` while its connection is re-established (the relay polls meanwhile).
   */
  outboxListen: 'listening' | 'reconnecting' | 'off';
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

/** What every part of the worker is built with, resolved once from the options. */
interface WorkerContext {
  logger: Logger;
  clock: Clock;
  registry: SchemaRegistry;
  producer: EventProducer;
  deadLetterStream: { stream: string; subjectPrefix: string };
}

interface WorkerParts {
  relay: OutboxRelay;
  commits?: OutboxCommitFeed;
  deadLetterMonitor: DeadLetterMonitor;
  retention: RetentionJob;
  consumers: ConsumerHandle[];
}

/**
 * The event worker: the streams checked (or created), then the outbox relay, the DLQ monitor,
 * retention and the consumers, started on a stack that stops them in reverse — the consumers
 * first, so the events their last handlers wrote go out with the relay's final flush. A part that
 * fails to start stops those before it.
 */
export async function startEventWorker(options: EventWorkerOptions): Promise<EventWorker> {
  const ctx = workerContext(options);
  await ensureStreams(options.bus, options.config, options.streams);
  const stack = new PartStack();
  stack.useLogger(ctx.logger);
  const parts = await buildParts(stack, async (): Promise<WorkerParts> => {
    const relay = await stack.start(
      'outbox relay',
      async () => startRelay(options, ctx),
      (r) => r.stop(),
    );
    const commits = options.outboxCommits;
    if (commits)
      await stack.start(
        'outbox commit listener',
        async () => commits.start(() => wakeIfLeader(relay)),
        () => commits.stop(),
      );
    const deadLetterMonitor = await stack.start(
      'DLQ monitor',
      () => startDeadLetterMonitor(options, ctx, relay),
      (m) => m.stop(),
    );
    const retention = await stack.start(
      'event retention',
      async () => startRetention(options, ctx),
      (r) => r.stop(),
    );
    const consumers = await stack.start(
      'consumers',
      () => startConsumers(options, ctx, relay),
      (started) => Promise.all(started.map((c) => c.stop())).then(() => undefined),
    );
    return { relay, commits, deadLetterMonitor, retention, consumers };
  });
  ctx.logger.info({ consumers: parts.consumers.map((c) => c.durable) }, 'event worker started');
  return {
    relay: parts.relay,
    deadLetterMonitor: parts.deadLetterMonitor,
    retention: parts.retention,
    producer: ctx.producer,
    health: () => workerHealth(parts),
    async stop() {
      await stack.stop();
      ctx.logger.info('event worker stopped');
    },
  };
}

function workerContext(options: EventWorkerOptions): WorkerContext {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const registry = options.registry ?? loadSchemaRegistry();
  return {
    logger: options.logger.child({ component: 'event-worker' }),
    clock,
    registry,
    producer: options.producer ?? workerEventProducer(config, { registry, clock, serviceName: options.serviceName }),
    deadLetterStream: {
      stream: config.events.dlqStream,
      subjectPrefix: deadLetterSubjectPrefix(config.events, options.streams),
    },
  };
}

function startRelay(options: EventWorkerOptions, ctx: WorkerContext): OutboxRelay {
  const relay = createOutboxRelay({
    db: options.db,
    bus: options.bus,
    logger: ctx.logger,
    clock: ctx.clock,
    subjectPrefix: options.streams?.subjectPrefix,
    leaseMs: options.config.events.relayLeaseSeconds * 1000,
    pollIntervalMs: options.config.events.relayPollIntervalMs,
    instance: options.config.service.instance,
    ...options.relay,
  });
  relay.start();
  return relay;
}

/**
 * Only the lease holder publishes; a follower woken by every commit would only ask the database
 * for the lease each time. It takes the lease over on its own heartbeat and polls from then on.
 */
function wakeIfLeader(relay: OutboxRelay): void {
  if (relay.status().leader) relay.notify();
}

async function startDeadLetterMonitor(
  options: EventWorkerOptions,
  ctx: WorkerContext,
  relay: OutboxRelay,
): Promise<DeadLetterMonitor> {
  const monitor = createDeadLetterMonitor({
    sample: () => sampleDeadLetters(options.bus, ctx.deadLetterStream),
    alertAfterMs: options.config.events.dlqAlertMinutes * 60_000,
    logger: ctx.logger,
    clock: ctx.clock,
    // One replica announces the alert in its log: the one leading the relay.
    announces: () => relay.status().leader,
  });
  await monitor.check();
  monitor.start(options.deadLetterCheckIntervalMs);
  return monitor;
}

function startRetention(options: EventWorkerOptions, ctx: WorkerContext): RetentionJob {
  const retention = createRetentionJob({
    db: options.db,
    clock: ctx.clock,
    logger: ctx.logger,
    archiveMonths: options.config.events.archiveMonths,
    intervalMs: options.config.events.retentionIntervalMinutes * 60_000,
  });
  retention.start();
  return retention;
}

/** Every consumer of the options, in order; if one cannot start, those started are stopped. */
async function startConsumers(options: EventWorkerOptions, ctx: WorkerContext, relay: OutboxRelay): Promise<ConsumerHandle[]> {
  const { config } = options;
  const consumers: ConsumerHandle[] = [];
  try {
    for (const spec of options.consumers) {
      consumers.push(
        await startConsumer({
          ...spec,
          bus: options.bus,
          db: options.db,
          logger: ctx.logger,
          registry: ctx.registry,
          producer: ctx.producer,
          clock: ctx.clock,
          deadLetterStream: ctx.deadLetterStream,
          maxDeliver: spec.maxDeliver ?? config.events.maxDeliver,
          ackWaitMs: spec.ackWaitMs ?? config.events.ackWaitSeconds * 1000,
          nakDelayMs: options.nakDelayMs,
          afterCommit: () => relay.notify(),
        }),
      );
    }
    return consumers;
  } catch (error) {
    await Promise.all(consumers.map((c) => c.stop()));
    throw error;
  }
}

function workerHealth(parts: WorkerParts): EventWorkerHealth {
  const relay = parts.relay.status();
  const deadLetters = parts.deadLetterMonitor.state();
  return {
    status: deadLetters.alerting || relay.consecutiveFailures > 0 ? 'degraded' : 'ok',
    relay,
    outboxListen: !parts.commits ? 'off' : parts.commits.listening() ? 'listening' : 'reconnecting',
    deadLetters,
    consumers: parts.consumers.map((c) => ({ durable: c.durable, ...c.stats() })),
  };
}
