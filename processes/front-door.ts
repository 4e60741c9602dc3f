import type { Redis } from 'ioredis';
import { startGateway, gatewaySettings, type RunningGateway } from '../gateway/gateway.js';
import { replicaUrls, type SubgraphUrls } from '../gateway/subgraph-calls/replicas.js';
import type { SubgraphName } from '../gateway/supergraph.js';
import type { TokenVerifier } from '../platform/auth/verifier.js';
import type { GatewayProcessConfig } from './gateway.config.js';
import type { Db } from '../platform/db/database.js';
import type { ReadinessReport } from '../platform/http/probe-endpoints.js';
import { createIdempotencyStore } from '../platform/idempotency/create.js';
import type { Logger } from '../platform/observability/logger.js';
import type { Metrics } from '../platform/observability/metrics.js';
import { memoryLru, sizeLimited, slottedRedisCache, type StringKeyValueCache } from '../platform/graphql/persisted-queries.js';
import type { ApqSettings, ResponseCacheConfig } from '../gateway/config.js';
import {
  followCatalogEvents,
  type CatalogEventFeed,
  type CatalogEventFollower,
} from '../gateway/response-cache/catalog-events.js';
import type { FeedStatus } from '../gateway/response-cache/feed-watch.logic.js';
import { ResponseCache } from '../gateway/response-cache/response-cache.js';
import { restEndpoints } from '../rest-compat/rest-endpoints.js';
import { REST_OPERATION_NAMES } from '../rest-compat/documents.js';

/**
 * Where registered queries live: in Redis of REDIS_CACHE_URL, shared by the replicas, when there is
 * one, else in this process; bounded in bytes either way, and never in the Redis of REDIS_URL.
 */
function persistedQueryStore(settings: ApqSettings, cacheRedis: Redis | undefined): StringKeyValueCache {
  const store = cacheRedis
    ? slottedRedisCache(cacheRedis, { prefix: 'apq:', slots: settings.redisSlots, defaultTtlSeconds: settings.ttlSeconds })
    : memoryLru(settings.memoryBytes);
  return sizeLimited(store, settings.maxDocumentBytes);
}

/**
 * The gateway with REST-compat behind its front door, as both the one-process system and the
 * gateway process run it: Idempotency-Key records in Redis when there is one (shared by every
 * replica), else in the database table.
 */
export async function startFrontDoor(deps: {
  config: GatewayProcessConfig;
  subgraphUrls: Record<SubgraphName, SubgraphUrls>;
  verifier: TokenVerifier;
  logger: Logger;
  db: Db;
  /** The Redis of REDIS_URL: Idempotency-Key records (never evicted). */
  redis?: Redis;
  /** The Redis of REDIS_CACHE_URL: persisted queries, shared by every replica (evictable). */
  cacheRedis?: Redis;
  metrics: Metrics;
  readiness: () => Promise<ReadinessReport>;
  /** Where the response cache hears of the catalog's events: the bus of this process (processes/parts.ts). */
  catalogEvents?: CatalogEventFeed;
}): Promise<FrontDoor> {
  const { config, redis } = deps;
  const idempotency = createIdempotencyStore({
    redis,
    db: deps.db,
    logger: deps.logger,
    ttlSeconds: config.idempotencyTtlSeconds,
    leaseSeconds: config.idempotencyLeaseSeconds,
  });
  // The health relay's path goes to the AI subgraph's replicas in turn (gateway/subgraph-calls/replicas.ts).
  const aiBaseUrl = new URL('/', replicaUrls(deps.subgraphUrls.ai)[0]).toString();
  const cache = await responseCache(config.gateway.responseCache, deps);
  const gateway = await startGateway({
    host: config.host,
    port: config.port,
    subgraphUrls: deps.subgraphUrls,
    settings: gatewaySettings(config),
    verifier: deps.verifier,
    logger: deps.logger,
    metrics: deps.metrics,
    idempotency,
    readiness: deps.readiness,
    apqCache: persistedQueryStore(config.gateway.apq, deps.cacheRedis),
    knownOperations: REST_OPERATION_NAMES,
    endpoints: (execute, subgraphHttp) => restEndpoints({ execute, aiBaseUrl, fetch: subgraphHttp('ai') }),
    responseCache: cache?.cache,
  });
  return {
    ...gateway,
    // Only a cache that follows a feed can lose it.
    cacheFeed: cache?.follower ? () => cache.cache.feedStatus() : undefined,
    close: async () => {
      await gateway.close();
      await cache?.follower?.close();
    },
  };
}

export interface FrontDoor extends RunningGateway {
  /** The response cache's event feed, for /readyz; undefined when no cache follows one. */
  cacheFeed?: () => FeedStatus;
}

/**
 * The response cache when RESPONSE_CACHE_ENABLED: L2 in the cache Redis when there is one (never
 * the state Redis), invalidated by the catalog's events as the bus carries them. Without a feed (a
 * gateway process without NATS_URL), only this gateway's own mutations (and the TTL) invalidate it
 * (docs/operations.md, "Response cache").
 */
async function responseCache(
  settings: ResponseCacheConfig,
  deps: { cacheRedis?: Redis; metrics: Metrics; logger: Logger; catalogEvents?: CatalogEventFeed },
): Promise<{ cache: ResponseCache; follower?: CatalogEventFollower } | undefined> {
  if (!settings.enabled) return undefined;
  const cache = new ResponseCache(settings, { redis: deps.cacheRedis, metrics: deps.metrics, logger: deps.logger });
  if (!deps.catalogEvents) {
    deps.logger.warn(
      "RESPONSE_CACHE_ENABLED without NATS_URL: only this gateway's mutations and the TTL invalidate the response cache",
    );
    return { cache };
  }
  return { cache, follower: await followCatalogEvents(deps.catalogEvents, cache, deps.logger) };
}
