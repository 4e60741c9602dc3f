import type { Redis } from 'ioredis';
import { createEventBus } from '../events/bus/create-bus.js';
import type { EventBus, MessageBus } from '../events/bus/event-bus.js';
import type { CatalogEventFeed } from '../gateway/response-cache/catalog-events.js';
import { committedAtOf } from '../events/publish/committed-at.logic.js';
import { catalogSubjects } from '../events/streams.js';
import { subgraphChecks } from '../gateway/subgraph-calls/readiness.js';
import { feedReadiness } from '../gateway/response-cache/feed-watch.logic.js';
import type { SubgraphName } from '../gateway/supergraph.js';
import type { SubgraphUrls } from '../gateway/subgraph-calls/replicas.js';
import { openPlatform, type Platform } from '../platform/lifecycle/bootstrap.js';
import type { PlatformConfig } from '../platform/config/config.js';
import { startOpsServer } from '../platform/http/ops-server.js';
import { idempotencyCheck } from '../platform/idempotency/readiness.js';
import { stateCheck } from '../platform/lifecycle/readiness.js';
import type { Logger } from '../platform/observability/logger.js';
import type { Metrics } from '../platform/observability/metrics.js';
import type { PartStack } from '../platform/lifecycle/parts.js';
import { connectRedis, connectStateRedis } from '../platform/redis.js';
import { flushTelemetry, startTelemetry, telemetryOptions } from '../platform/observability/telemetry.js';
import { databaseSchema } from '../prisma/migrate.js';
import type { GatewayProcessConfig } from './config.js';
import { startFrontDoor } from './front-door.js';

/*
 * The parts every process is made of, each started on a PartStack (platform/lifecycle/parts.ts) with its
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
  const { redisCacheUrl } = config;
  const redis = await stateRedisPart(stack, config, logger);
  const cacheRedis = redisCacheUrl
    ? await stack.start(
        'cache redis',
        () => connectRedis(redisCacheUrl, logger, 'REDIS_CACHE_URL'),
        (r) => r.disconnect(),
      )
    : undefined;
  return { redis, cacheRedis };
}

/** The Redis of REDIS_URL alone (the event worker's: it erases Idempotency-Key records there). */
export async function stateRedisPart(stack: PartStack, config: PlatformConfig, logger: Logger): Promise<Redis | undefined> {
  const { redisUrl } = config;
  if (!redisUrl) return undefined;
  return stack.start(
    'redis',
    () => connectStateRedis(redisUrl, { allowEviction: config.redisAllowEviction, logger }),
    (r) => r.disconnect(),
  );
}

/** JetStream at NATS_URL, or the in-process bus (embedded mode). */
export function busPart(stack: PartStack, config: PlatformConfig, logger: Logger): Promise<EventBus> {
  return stack.start(
    'bus',
    () => createEventBus(config, logger),
    (bus) => bus.close(),
  );
}

/**
 * The catalog's events as the bus carries them, for the response cache: one road in every mode,
 * only the bus differs (JetStream at NATS_URL in a gateway process or `npm start` on NATS, the
 * in-process bus of `npm start` without it). A follower, not a durable consumer: every gateway
 * replica hears every event and leaves no state on the server; a reconnect is a gap, which clears
 * the replica's L1 (gateway/response-cache/catalog-events.ts).
 */
export function catalogEventFeed(bus: MessageBus): CatalogEventFeed {
  return {
    follow: (onEvent, onGap, onLost) =>
      bus.follow(catalogSubjects(), {
        onMessage: (_subject, data, headers) => onEvent(data, { committedAtMs: committedAtOf(headers) }),
        onGap,
        onLost,
      }),
  };
}

/**
 * The bus the response cache follows in a process that has no worker (the gateway process): only
 * when the cache is on and there is a NATS_URL, since nothing is published on an in-process bus here.
 */
export async function cacheFeedPart(stack: PartStack, config: GatewayProcessConfig, logger: Logger) {
  if (!config.gateway.responseCache.enabled || !config.natsUrl) return undefined;
  return catalogEventFeed(await busPart(stack, config, logger));
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
    catalogEvents?: CatalogEventFeed;
  },
) {
  const { platform } = deps;
  const db = platform.database.prisma;
  stack.check('idempotency', idempotencyCheck(db, deps.redis));
  // Reported, not required: with one subgraph down the gateway still answers what the other serves.
  stack.checkGroup(() => subgraphChecks(deps.subgraphUrls));
  const frontDoor = await stack.start(
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
        catalogEvents: deps.catalogEvents,
      }),
    (running) => running.close(),
    (running) => running.closeConnectionsAfterReply(),
  );
  const { cacheFeed } = frontDoor;
  // Reported, not required: without its feed the gateway still answers, from the subgraphs.
  if (cacheFeed)
    stack.check(
      'responseCacheFeed',
      stateCheck(false, () => feedReadiness(cacheFeed())),
    );
  return frontDoor;
}
