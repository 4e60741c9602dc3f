import type { AddressInfo } from 'node:net';
import { ApolloGateway } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginLandingPageLocalDefault } from '@apollo/server/plugin/landingPage/default';
import type { TokenVerifier } from '../platform/auth/verifier.js';
import type { ConnectionLimits, PlatformConfig, QueryLimits } from '../platform/config/config.js';
import { apolloLogger, createDoorServer } from '../platform/graphql/apollo-server.js';
import { graphqlEndpoints } from '../platform/graphql/graphql-endpoint.js';
import { outageStatus } from '../platform/graphql/outage-status.js';
import type { EndpointTable } from '../platform/http/pipeline.js';
import { probeEndpoints, type ReadinessReport } from '../platform/http/probe-endpoints.js';
import { createHttpServer, drainBound, serve } from '../platform/http/serve.js';
import type { CorsOrigins } from '../platform/http/stages/cors.js';
import { graphqlKeyedWrite, unguardedMutationPlugin } from '../platform/idempotency/graphql-mutations.js';
import type { IdempotencyStore } from '../platform/idempotency/store.js';
import type { Logger } from '../platform/observability/logger.js';
import type { Metrics } from '../platform/observability/metrics.js';
import type { StringKeyValueCache } from '../platform/graphql/persisted-queries.js';
import type { GatewaySlice } from './config.js';
import type { ExecuteOperation } from './execute-port.js';
import { gatewayContext, type GatewayContext } from './forwarding.js';
import { GRAPHIQL_PATH, graphiqlEndpoints } from './front-door/graphiql.js';
import { frontDoor } from './front-door/pipeline.js';
import { RemoteSubgraph } from './subgraph-calls/remote-subgraph.js';
import { nonCatalogFields } from './response-cache/document.js';
import { responseCachePlugin } from './response-cache/plugin.js';
import { resultWithParsedData, stringifyResult } from './response-cache/stored-answer.js';
import type { ResponseCache } from './response-cache/response-cache.js';
import type { ReplicaPool } from './subgraph-calls/replica-pool.js';
import { replicaFetch, replicaPools, type SubgraphUrls } from './subgraph-calls/replicas.js';
import { useResultShaping, type ResultShaping } from './result-shaping/result-shaping.js';
import { subgraphDispatcher } from './subgraph-calls/subgraph-fetch.js';
import { readSupergraph, type SubgraphName } from './supergraph.js';

/** The gateway's settings from the configuration (docs/configuration.md). */
export interface GatewaySettings {
  maxBodyBytes: number;
  limits: QueryLimits;
  corsOrigins: CorsOrigins;
  apqTtlSeconds: number;
  graphiql: boolean;
  /** APOLLO_TELEMETRY_DISABLED as Apollo Gateway reads it (gateway/config.ts). */
  apolloTelemetryDisabled: boolean;
  /** How long shutdown waits for in-flight requests before cutting connections. */
  drainMs: number;
  /** Connections kept to each subgraph replica at most; requests beyond wait in the gateway for a free one. */
  subgraphMaxConnections: number;
  /** What clients may hold of the gateway's server (timeouts, connection cap). */
  connections: ConnectionLimits;
  /** Serve GET /metrics on the public port; off when the process has an ops port for it (METRICS_PORT). */
  metricsOnThisPort: boolean;
  /** Per attempt of a subgraph fetch: queries (retried on another replica) and mutations. */
  subgraphTimeoutMs: number;
  subgraphMutationTimeoutMs: number;
  /** First back-off of a subgraph replica that failed a fetch (gateway/subgraph-calls/replica-health.logic.ts). */
  subgraphReplicaBackoffMs: number;
  /** How often each replica of a subgraph list is asked /readyz (0: only after a failure). */
  subgraphReadinessIntervalMs: number;
  /** Whose result shaping Apollo Gateway runs (gateway/result-shaping/result-shaping.ts); one choice per process. */
  resultShaping: ResultShaping;
}

export function gatewaySettings(config: PlatformConfig & GatewaySlice): GatewaySettings {
  return {
    maxBodyBytes: config.maxBodyBytes,
    limits: config.ops.limits,
    corsOrigins: config.gateway.corsOrigins,
    apqTtlSeconds: config.gateway.apq.ttlSeconds,
    graphiql: config.gateway.graphiql,
    apolloTelemetryDisabled: config.gateway.apolloTelemetryDisabled,
    drainMs: drainBound(config),
    subgraphMaxConnections: config.gateway.subgraphMaxConnections,
    connections: config.ops.connections,
    metricsOnThisPort: config.ops.metricsPort === undefined,
    subgraphTimeoutMs: config.gateway.subgraphTimeoutMs,
    subgraphMutationTimeoutMs: config.gateway.subgraphMutationTimeoutMs,
    subgraphReplicaBackoffMs: config.gateway.subgraphReplicaBackoffMs,
    subgraphReadinessIntervalMs: config.gateway.subgraphReadinessIntervalMs,
    resultShaping: config.gateway.resultShaping,
  };
}

export interface GatewayOptions {
  host: string;
  port: number;
  /** Each subgraph's replicas (or the one URL of a balancer in front of them). */
  subgraphUrls: Record<SubgraphName, SubgraphUrls>;
  settings: GatewaySettings;
  verifier: TokenVerifier;
  logger: Logger;
  /** The Idempotency-Key store of GraphQL mutations and REST writes. */
  idempotency: IdempotencyStore;
  readiness: () => Promise<ReadinessReport>;
  metrics?: Metrics;
  /** Persisted queries shared by every replica (Redis); else Apollo's bounded in-memory LRU. */
  apqCache?: StringKeyValueCache;
  /** Operation names metrics label by name (REST-compat's documents); every other one is `other`. */
  knownOperations?: ReadonlySet<string>;
  /**
   * Endpoints served beside /graphql whose operations run through the gateway (REST-compat), with
   * a `fetch` for a subgraph's own HTTP endpoints over its replicas (the AI health relay).
   */
  endpoints?: (execute: ExecuteOperation, subgraphHttp: (name: SubgraphName) => typeof fetch) => EndpointTable;
  supergraphSdl?: string;
  /** The response cache of catalog reads (gateway/response-cache/), when RESPONSE_CACHE_ENABLED. */
  responseCache?: ResponseCache;
}

export interface RunningGateway {
  url: string;
  port: number;
  execute: ExecuteOperation;
  /** Shutdown's first step: keep serving, end each connection after its reply. */
  closeConnectionsAfterReply(): void;
  close(): Promise<void>;
}

/**
 * Apollo Gateway over the committed supergraph (its subgraphs: `federatedGateway`; its server:
 * `gatewayServer`) behind the front door (gateway/front-door/pipeline.ts), with the probes, GraphiQL and the
 * endpoints given (REST-compat), on one HTTP server.
 */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const { logger, settings, metrics } = options;
  if (!settings.apolloTelemetryDisabled) {
    // Apollo Gateway reads only the environment; the image and `npm start` set the variable.
    logger.warn(
      'Apollo Gateway reports usage to Apollo: set APOLLO_TELEMETRY_DISABLED=true (the image and npm start do) to keep this process from calling out',
    );
  }
  const subgraphs = await federatedGateway(options, apolloLogger(logger));
  const apollo = gatewayServer(options, subgraphs.gateway);
  if (options.responseCache) {
    // Last in the plugin order: it sees operations the limits and rules have already let through.
    const sdl = options.supergraphSdl ?? (await readSupergraph());
    apollo.addPlugin(responseCachePlugin(options.responseCache, nonCatalogFields(sdl)));
  }
  await apollo.start();

  const execute: ExecuteOperation = async (operation, exchange, executeOptions = {}) => {
    const response = await apollo.executeOperation(operation, {
      contextValue: gatewayContext(exchange, { trusted: executeOptions.trusted === true, ifMatch: executeOptions.ifMatch }),
    });
    if (response.body.kind !== 'single') throw new Error('Incremental delivery is not supported here');
    return resultWithParsedData(response.body.singleResult);
  };

  const graphql = graphqlEndpoints<GatewayContext>({
    apollo,
    methods: ['GET', 'POST'],
    landingPage: true,
    offlineExplorer: settings.graphiql ? { href: GRAPHIQL_PATH, label: 'GraphiQL, served by this gateway' } : undefined,
    context: async (exchange) => gatewayContext(exchange, { trusted: false }),
    keyedWrite: (exchange) => graphqlKeyedWrite(exchange.body, settings.limits.maxTokens),
  });
  const endpoints = [
    probeEndpoints({
      service: 'gateway',
      readiness: options.readiness,
      metrics: settings.metricsOnThisPort ? metrics : undefined,
    }),
    ...(settings.graphiql ? [graphiqlEndpoints()] : []),
    graphql,
    ...(options.endpoints ? [options.endpoints(execute, (name) => replicaFetch(subgraphs.pools[name]))] : []),
  ];
  const handler = frontDoor({
    logger,
    metrics,
    verifier: options.verifier,
    idempotency: options.idempotency,
    corsOrigins: settings.corsOrigins,
    maxBodyBytes: settings.maxBodyBytes,
    endpoints,
  });

  const server = createHttpServer(settings.connections);
  const served = serve(server, handler, { logger, limits: settings.connections });
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  const port = (server.address() as AddressInfo).port;
  logger.info({ port }, 'gateway listening');
  return {
    url: `http://${options.host === '0.0.0.0' ? '127.0.0.1' : options.host}:${port}`,
    port,
    execute,
    closeConnectionsAfterReply: () => served.closeConnectionsAfterReply(),
    close: async () => {
      await served.drain(settings.drainMs);
      await apollo.stop();
      await subgraphs.close();
    },
  };
}

type ApolloGatewayLogger = NonNullable<NonNullable<ConstructorParameters<typeof ApolloGateway>[0]>['logger']>;

interface FederatedGateway {
  gateway: ApolloGateway;
  /** The replicas of each subgraph reached over HTTP, and the gateway's view of them. */
  pools: Record<SubgraphName, ReplicaPool>;
  close(): Promise<void>;
}

/**
 * Apollo Gateway over the supergraph, each subgraph fetched over HTTP across its replicas, on
 * bounded keep-alive connections (gateway/subgraph-calls/remote-subgraph.ts): in one process (`npm start`) too,
 * over loopback, so every fetch passes the subgraph's door (authentication, access log, limits).
 */
async function federatedGateway(options: GatewayOptions, logger: ApolloGatewayLogger): Promise<FederatedGateway> {
  const { settings, metrics } = options;
  const dispatcher = subgraphDispatcher(settings.subgraphMaxConnections);
  const pools = replicaPools(options.subgraphUrls, {
    dispatcher,
    firstBackoffMs: settings.subgraphReplicaBackoffMs,
    watchIntervalMs: settings.subgraphReadinessIntervalMs,
    logger: options.logger,
    metrics,
  });
  const timeouts = { queryMs: settings.subgraphTimeoutMs, mutationMs: settings.subgraphMutationTimeoutMs };
  useResultShaping(settings.resultShaping);
  const gateway = new ApolloGateway({
    supergraphSdl: options.supergraphSdl ?? (await readSupergraph()),
    buildService: ({ name }) => {
      const pool = pools[name as SubgraphName];
      if (!pool) throw new Error(`No URL configured for subgraph ${name}`);
      return new RemoteSubgraph(name, { pool, dispatcher, timeouts, metrics });
    },
    logger,
    // Each fetch's parsed operation reaches its data source (kept with the cached plan, not parsed
    // per request): a fetch that fails answers an error on the path of each field it was for, and
    // only a query is sent again to another replica.
    queryPlannerConfig: { exposeDocumentNodeInFetchNode: true },
  });
  return {
    gateway,
    pools,
    close: async () => {
      for (const pool of Object.values<ReplicaPool>(pools)) pool.close();
      await dispatcher.close();
    },
  };
}

/**
 * The gateway's Apollo Server: limits, operation rules and error formatting of every GraphQL door,
 * plus the landing page, persisted queries, the Idempotency-Key rule on mutations and 503 on outages.
 */
function gatewayServer(options: GatewayOptions, gateway: ApolloGateway): ApolloServer<GatewayContext> {
  const { settings } = options;
  return createDoorServer<GatewayContext>({
    name: 'gateway',
    graph: { gateway },
    logger: options.logger,
    metrics: options.metrics,
    limits: settings.limits,
    knownOperations: options.knownOperations,
    persistedQueries: { ttl: settings.apqTtlSeconds, ...(options.apqCache ? { cache: options.apqCache } : {}) },
    // A response cache hit is sent as stored, not parsed and serialised again.
    stringifyResult,
    plugins: {
      first: [ApolloServerPluginLandingPageLocalDefault({ embed: true, includeCookies: false })],
      last: [unguardedMutationPlugin<GatewayContext>(), outageStatus<GatewayContext>()],
    },
  });
}
