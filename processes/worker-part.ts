import type { Redis } from 'ioredis';
import type { EventBus } from '../events/bus/event-bus.js';
import { startEventWorker, workerEventProducer, type EventWorker } from '../events/worker.js';
import type { EventProducer } from '../events/publish/outbox.js';
import { listenForOutboxCommits, type OutboxCommitFeed } from '../events/publish/outbox-wakeup.js';
import { startWorkerWhenStreamsExist, type PendingWorker } from '../events/worker-when-streams.js';
import { feedWorkerMetrics } from '../events/worker-metrics.js';
import type { Platform } from '../platform/lifecycle/bootstrap.js';
import type { Metrics } from '../platform/observability/metrics.js';
import type { PartStack } from '../platform/lifecycle/parts.js';
import { databaseCheck } from '../platform/lifecycle/readiness.js';
import { aiConsumers } from '../subgraphs/ai/consumers.js';
import { catalogConsumers } from '../subgraphs/catalog/consumers.js';
import type { WorkerProcessConfig } from './config.js';
import { busCheck, eventWorkerCheck } from './readiness-checks.js';

/*
 * The event worker part (processes/parts.ts has the parts every process shares): its own file so
 * the gateway process loads no subgraph or consumer code.
 */

/** The process's event worker, which may still be waiting for the producers' streams. */
export interface WorkerPart {
  /** What the worker's handlers emit with; usable before the worker runs (rows wait in the outbox). */
  producer: EventProducer;
  /** Wakes the outbox relay after a commit (nothing to wake while the worker waits). */
  notifyRelay(): void;
  current(): EventWorker | undefined;
}

/** LISTEN for other processes' outbox commits, on Postgres when OUTBOX_LISTEN allows. */
function outboxCommitFeed(config: WorkerProcessConfig, platform: Platform): OutboxCommitFeed | undefined {
  if (!config.events.relayListen || platform.database.kind !== 'postgres') return undefined;
  return listenForOutboxCommits({
    databaseUrl: platform.database.url,
    logger: platform.logger.child({ component: 'outbox-listen' }),
    applicationName: 'catalog-ai-outbox-listen',
  });
}

/**
 * The event worker: outbox relay, consumers, DLQ monitor. A producer's stream that does not exist
 * yet is waited for (not ready, one log line naming it; events/worker-when-streams.ts), so
 * deploying the worker before its producers is not a crash loop. Stopping lets in-flight messages
 * finish, then flushes the outbox.
 */
export async function workerPart(
  stack: PartStack,
  deps: {
    config: WorkerProcessConfig;
    platform: Platform;
    bus: EventBus;
    metrics: Metrics;
    /** The state Redis (REDIS_URL), for what the consumers erase there (Idempotency-Key records). */
    redis?: Redis;
    /**
     * Whether a broker outage makes the process unready: yes for the worker process, which can do
     * nothing without it; no for `npm start`, whose doors keep serving while events wait in the
     * outbox (the `events` check then says degraded).
     */
    busRequired?: boolean;
  },
): Promise<WorkerPart> {
  const { config, platform, bus } = deps;
  const db = platform.database.prisma;
  const producer = workerEventProducer(config);
  const consumerOptions = { events: config.events, gdprZeroingRetentionClasses: config.gdprZeroingRetentionClasses };
  const aiOptions = { ...consumerOptions, stateRedis: deps.redis };
  const start = async () => {
    const worker = await startEventWorker({
      bus,
      db,
      logger: platform.logger,
      config,
      producer,
      outboxCommits: outboxCommitFeed(config, platform),
      // Each subgraph's consumers on durables of their own: a GDPR request reaches both.
      consumers: [...catalogConsumers(consumerOptions), ...aiConsumers(aiOptions)],
    });
    feedWorkerMetrics(deps.metrics, worker, { db, deadLetterStream: config.events.dlqStream });
    return worker;
  };
  // The checks come first: the ops server may answer /readyz while the first attempt runs.
  const started: { worker?: PendingWorker } = {};
  stack.check('database', databaseCheck(db));
  stack.check('bus', busCheck(bus, config.events.dlqStream, deps.busRequired ?? true));
  stack.check(
    'events',
    eventWorkerCheck({ current: () => started.worker?.current(), waitingFor: () => started.worker?.waitingFor() }),
  );
  const pending = await stack.start(
    'event worker',
    () => startWorkerWhenStreamsExist(start, { logger: platform.logger }),
    (running) => running.stop(),
  );
  started.worker = pending;
  return { producer, notifyRelay: () => pending.current()?.relay.notify(), current: () => pending.current() };
}
