import type { Redis } from 'ioredis';
import { createEventBus } from '../events/bus/create-bus.js';
import type { EventBus } from '../events/bus/event-bus.js';
import { startEventWorker, workerEventProducer, type EventWorker } from '../events/worker.js';
import type { EventProducer } from '../events/outbox.js';
import { startWorkerWhenStreamsExist, type PendingWorker } from '../events/worker-when-streams.js';
import { feedWorkerMetrics } from '../events/worker-metrics.js';
import { subgraphChecks } from '../gateway/readiness.js';
import type { SubgraphName } from '../gateway/supergraph.js';
import type { SubgraphUrls } from '../gateway/replicas.js';
import { openPlatform, type Platform } from '../platform/bootstrap.js';
import type { PlatformConfig } from '../platform/config/config.js';
import type { LocalSubgraph } from '../platform/graphql/subgraph-server.js';
import { startOpsServer } from '../platform/http/ops-server.js';
import { idempotencyCheck } from '../platform/idempotency/readiness.js';
import type { Logger } from '../platform/logger.js';
import type { Metrics } from '../platform/metrics.js';
import type { PartStack } from '../platform/parts.js';
import { databaseCheck, redisCheck } from '../platform/readiness.js';
import { connectRedis, connectStateRedis } from '../platform/redis.js';
import { flushTelemetry, startTelemetry, telemetryOptions } from '../platform/telemetry.js';
import { databaseSchema } from '../prisma/migrate.js';
import { REST_OPERATION_NAMES } from '../rest-compat/route-table.js';
import { feedAiMetrics } from '../subgraphs/ai/metrics.js';
import { QUOTA_DEGRADED_DETAIL } from '../subgraphs/ai/quota/quota.service.js';
import { seedBaseline } from '../subgraphs/ai/seed.js';
import { startAiSubgraph } from '../subgraphs/ai/server.js';
import { catalogConsumers } from '../subgraphs/catalog/consumers.js';
import { startCatalogSubgraph } from '../subgraphs/catalog/server.js';
import type { AiProcessConfig, CatalogProcessConfig, GatewayProcessConfig, WorkerProcessConfig } from './config.js';
import { startFrontDoor } from './front-door.js';
import { busCheck, eventWorkerCheck } from './readiness-checks.js';

/*
 * The parts every process is made of, each started on a PartStack (platform/parts.ts) with its
 * stop and its readiness checks next to it. A process entry lists the parts it runs; `npm start`
 * (processes/system.ts) lists them all.
 */

/** Traces first, so the first request has trace context; flushed last, bounded (never a failed shutdown). */
export function telemetryPart(stack: PartStack, config: PlatformConfig, name: string) {
  return stack.start(
    'telemetry',
    async () => startTelemetry(telemetryOptions(config, name)),
    (telemetry) => flushTelemetry(telemetry, stack.logger),
  );
}

/** The database (migrated at start, or checked), and the token verifier. */
export function platformPart(stack: PartStack, config: PlatformConfig, name: string): Promise<Platform> {
  return stack.start(
    'database',
    () => openPlatform(config, name, { schema: databaseSchema, logger: stack.logger }),
    (opened) => opened.database.close(),
  );
}

/** The Redis of REDIS_URL (state: quotas, Idempotency-Key records) and of REDIS_CACHE_URL (caches). */
export async function redisPart(
  stack: PartStack,
  config: PlatformConfig,
  logger: Logger,
): Promise<{ redis?: Redis; cacheRedis?: Redis }> {
  const { redisUrl, redisCacheUrl } = config;
  const redis = redisUrl
    ? await stack.start(
        'redis',
        () => connectStateRedis(redisUrl, { allowEviction: config.redisAllowEviction, logger }),
        (r) => r.disconnect(),
      )
    : undefined;
  const cacheRedis = redisCacheUrl
    ? await stack.start(
        'cache redis',
        () => connectRedis(redisCacheUrl, logger, 'REDIS_CACHE_URL'),
        (r) => r.disconnect(),
      )
    : undefined;
  return { redis, cacheRedis };
}

/** JetStream at NATS_URL, or the in-process bus (embedded mode). */
export function busPart(stack: PartStack, config: PlatformConfig, logger: Logger): Promise<EventBus> {
  return stack.start(
    'bus',
    () => createEventBus(config, logger),
    (bus) => bus.close(),
  );
}

/** The process's event worker, which may still be waiting for the producers' streams. */
export interface WorkerPart {
  /** What the worker's handlers emit with; usable before the worker runs (rows wait in the outbox). */
  producer: EventProducer;
  /** Wakes the outbox relay after a commit (nothing to wake while the worker waits). */
  notifyRelay(): void;
  current(): EventWorker | undefined;
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
  const start = async () => {
    const worker = await startEventWorker({
      bus,
      db,
      logger: platform.logger,
      config,
      producer,
      consumers: catalogConsumers({ events: config.events, gdprZeroingRetentionClasses: config.gdprZeroingRetentionClasses }),
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

/** The event worker has no HTTP door of its own: its ops port is always open, 9464 unless METRICS_PORT says. */
export const WORKER_OPS_PORT = 9464;

/**
 * Probes and /metrics on the ops port (METRICS_PORT; the worker's default otherwise), which no
 * ingress routes to. Undefined when the process has no ops port: its door serves them.
 */
export async function opsServerPart(
  stack: PartStack,
  deps: { config: PlatformConfig; logger: Logger; metrics: Metrics; service: string; defaultPort?: number },
) {
  const port = deps.config.ops.metricsPort ?? deps.defaultPort;
  if (port === undefined) return undefined;
  return stack.start(
    'ops server',
    () =>
      startOpsServer({
        service: deps.service,
        host: deps.config.host,
        port,
        logger: deps.logger,
        metrics: deps.metrics,
        readiness: stack.readiness,
      }),
    (server) => server.close(),
  );
}

/** The catalog subgraph on CATALOG_PORT; the bus is needed only to replay dead letters. */
export async function catalogPart(
  stack: PartStack,
  deps: { config: CatalogProcessConfig; platform: Platform; metrics: Metrics; bus?: EventBus; afterEventsCommitted?: () => void },
) {
  const { config, platform, bus } = deps;
  const db = platform.database.prisma;
  const server = await stack.start(
    'catalog subgraph',
    () =>
      startCatalogSubgraph({
        config,
        db,
        verifier: platform.verifier,
        logger: platform.logger,
        metrics: deps.metrics,
        knownOperations: REST_OPERATION_NAMES,
        bus,
        afterEventsCommitted: deps.afterEventsCommitted,
        readiness: stack.readiness,
      }),
    (running) => running.close(),
    (running) => running.closeConnectionsAfterReply(),
  );
  stack.check('database', databaseCheck(db));
  // Alone, the catalog needs the broker only to replay dead letters; beside the worker, the worker's check says more.
  if (bus?.kind === 'jetstream' && !stack.hasCheck('bus')) stack.check('bus', busCheck(bus, config.events.dlqStream, false));
  return server;
}

/** The AI subgraph on AI_PORT, its baseline seeded; Redis holds quotas (a local cap without it). */
export async function aiPart(
  stack: PartStack,
  deps: { config: AiProcessConfig; platform: Platform; metrics: Metrics; redis?: Redis },
) {
  const { config, platform, redis } = deps;
  const db = platform.database.prisma;
  await seedBaseline(db, { hostedModel: config.providers.openaiModel, logger: platform.logger });
  const server = await stack.start(
    'ai subgraph',
    () =>
      startAiSubgraph({
        config,
        db,
        verifier: platform.verifier,
        logger: platform.logger,
        redis,
        metrics: deps.metrics,
        knownOperations: REST_OPERATION_NAMES,
        readiness: stack.readiness,
      }),
    (running) => running.close(),
    (running) => running.closeConnectionsAfterReply(),
  );
  feedAiMetrics(deps.metrics, server.services, db, { clock: server.services.clock });
  stack.check('database', databaseCheck(db));
  if (redis) stack.check('quota', redisCheck(redis, { status: 'degraded', detail: QUOTA_DEGRADED_DETAIL }));
  return server;
}

/** The gateway with REST-compat on PORT; keyed writes need a store for their records. */
export async function gatewayPart(
  stack: PartStack,
  deps: {
    config: GatewayProcessConfig;
    platform: Platform;
    metrics: Metrics;
    redis?: Redis;
    cacheRedis?: Redis;
    subgraphUrls: Record<SubgraphName, SubgraphUrls>;
    localSubgraphs?: Partial<Record<SubgraphName, LocalSubgraph>>;
  },
) {
  const { platform } = deps;
  const db = platform.database.prisma;
  stack.check('idempotency', idempotencyCheck(db, deps.redis));
  // Reported, not required: with one subgraph down the gateway still answers what the other serves.
  stack.checkGroup(() => subgraphChecks(deps.subgraphUrls));
  return stack.start(
    'gateway',
    () =>
      startFrontDoor({
        config: deps.config,
        subgraphUrls: deps.subgraphUrls,
        verifier: platform.verifier,
        logger: platform.logger,
        db,
        redis: deps.redis,
        cacheRedis: deps.cacheRedis,
        metrics: deps.metrics,
        readiness: stack.readiness,
        localSubgraphs: deps.localSubgraphs,
      }),
    (running) => running.close(),
    (running) => running.closeConnectionsAfterReply(),
  );
}
