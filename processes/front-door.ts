import type { Redis } from 'ioredis';
import { startGateway, gatewaySettings, type RunningGateway } from '../gateway/gateway.js';
import { replicaUrls, type SubgraphUrls } from '../gateway/replicas.js';
import type { SubgraphName } from '../gateway/supergraph.js';
import type { TokenVerifier } from '../platform/auth/verifier.js';
import type { GatewayProcessConfig } from './gateway.config.js';
import type { Db } from '../platform/db/database.js';
import type { LocalSubgraph } from '../platform/graphql/subgraph-server.js';
import type { ReadinessReport } from '../platform/http/probe-endpoints.js';
import { createIdempotencyStore } from '../platform/idempotency/create.js';
import type { Logger } from '../platform/logger.js';
import type { Metrics } from '../platform/metrics.js';
import { redisKeyValueCache } from '../platform/redis-kv-cache.js';
import { restEndpoints } from '../rest-compat/rest-endpoints.js';
import { REST_OPERATION_NAMES } from '../rest-compat/route-table.js';

/**
 * The gateway with REST-compat behind its front door, as both the one-process system and the
 * gateway process run it: Idempotency-Key records and persisted queries in Redis when there is
 * one (shared by every replica), else the records in the database and queries in memory.
 */
export async function startFrontDoor(deps: {
  config: GatewayProcessConfig;
  subgraphUrls: Record<SubgraphName, SubgraphUrls>;
  verifier: TokenVerifier;
  logger: Logger;
  db: Db;
  redis?: Redis;
  metrics: Metrics;
  readiness: () => Promise<ReadinessReport>;
  /** The subgraphs of this process, when they run here (`npm start`). */
  localSubgraphs?: Partial<Record<SubgraphName, LocalSubgraph>>;
}): Promise<RunningGateway> {
  const { config, redis } = deps;
  const idempotency = createIdempotencyStore({
    redis,
    db: deps.db,
    logger: deps.logger,
    ttlSeconds: config.idempotencyTtlSeconds,
    leaseSeconds: config.idempotencyLeaseSeconds,
  });
  // The health relay's path goes to the AI subgraph's replicas in turn (gateway/replicas.ts).
  const aiBaseUrl = new URL('/', replicaUrls(deps.subgraphUrls.ai)[0]).toString();
  return startGateway({
    host: config.host,
    port: config.port,
    subgraphUrls: deps.subgraphUrls,
    settings: gatewaySettings(config),
    verifier: deps.verifier,
    logger: deps.logger,
    metrics: deps.metrics,
    idempotency,
    readiness: deps.readiness,
    apqCache: redis ? redisKeyValueCache(redis, { prefix: 'apq:', defaultTtlSeconds: config.gateway.apqTtlSeconds }) : undefined,
    knownOperations: REST_OPERATION_NAMES,
    endpoints: (execute, subgraphHttp) => restEndpoints({ execute, aiBaseUrl, fetch: subgraphHttp('ai') }),
    localSubgraphs: deps.localSubgraphs,
  });
}
