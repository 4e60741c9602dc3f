import type http from 'node:http';
import type { Redis } from 'ioredis';
import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { GraphQLError } from 'graphql';
import { Agent, fetch as undiciFetch, type Dispatcher, type RequestInit, type Response } from 'undici';
import { operationObserver } from '../platform/graphql/operation-observer.js';
import type { Config } from '../platform/config/config.js';
import { drainBound, observeServer, serverOpsFromConfig, type ObservedServer } from '../platform/http/observed-server.js';
import type { Logger } from '../platform/logger.js';
import { serveMetrics, type Metrics } from '../platform/metrics.js';
import { redisKeyValueCache, type StringKeyValueCache } from '../platform/redis-kv-cache.js';
import { injectTraceHeaders, SpanKind, withSpan } from '../platform/telemetry.js';
import { graphiqlRoute } from './graphiql.js';

export { serverOpsFromConfig };
import { queryLimitsPlugin, type QueryLimits } from './limits.js';
import type { ReadinessReport } from './server.js';

/**
 * Everything operational the gateway adds around Apollo: metrics, limits, persisted queries, the
 * offline GraphiQL page, subgraph fetch spans. One optional bundle, so server.ts stays about
 * routing and auth; without it the gateway still runs (tests that do not care about operations).
 */
export interface GatewayOps {
  metrics?: Metrics;
  limits: QueryLimits;
  /** Automatic persisted queries; the shared cache when set (Redis), else Apollo's bounded in-memory LRU. */
  apq: { cache?: StringKeyValueCache; ttlSeconds: number };
  graphiql: boolean;
  /** How long shutdown waits for in-flight requests before cutting connections. */
  drainMs: number;
  /** Connections kept to each subgraph at most; requests beyond wait in the gateway for a free one. */
  subgraphMaxConnections: number;
}

export function defaultGatewayOps(): GatewayOps {
  return {
    limits: { maxDepth: 12, maxCost: 5_000, defaultListSize: 10 },
    apq: { ttlSeconds: 24 * 3600 },
    graphiql: true,
    drainMs: 20_000,
    subgraphMaxConnections: 64,
  };
}

/** The Apollo Server options the operations bundle contributes. */
export function gatewayApolloOptions<TContext extends BaseContext>(ops: GatewayOps | undefined) {
  const effective = ops ?? defaultGatewayOps();
  const plugins: ApolloServerPlugin<TContext>[] = [
    operationObserver<TContext>('gateway', effective.metrics),
    queryLimitsPlugin<TContext>(effective.limits, effective.metrics),
  ];
  return {
    plugins,
    config: {
      persistedQueries: { ttl: effective.apq.ttlSeconds, ...(effective.apq.cache ? { cache: effective.apq.cache } : {}) },
      // Apollo would stop itself on SIGTERM, racing our drain (in-flight requests would see a
      // stopped server); exitOnSignals owns the shutdown order instead.
      stopOnTerminationSignals: false,
    },
  };
}

/**
 * The connections to the subgraphs: kept alive between requests, and at most `maxPerSubgraph` to
 * each subgraph. A burst of client requests then waits in the gateway for a free connection instead
 * of opening a socket (and a request the subgraph must accept at once) per request in flight.
 */
export function subgraphDispatcher(maxPerSubgraph: number): Agent {
  return new Agent({ connections: maxPerSubgraph, keepAliveTimeout: 30_000, pipelining: 1 });
}

/**
 * The fetch the gateway uses per subgraph: a client span (its `traceparent` replaces the one the
 * request forwarded, so the subgraph's spans hang under this fetch), the fetch latency metric, and
 * a network failure turned into a clear SUBGRAPH_UNAVAILABLE error for that subgraph's fields only.
 */
export function subgraphFetcher(subgraph: string, dispatcher: Dispatcher, metrics?: Metrics) {
  return async (url: string, init: RequestInit = {}): Promise<Response> =>
    withSpan(
      `subgraph ${subgraph}`,
      { 'graphql.subgraph.name': subgraph, 'url.full': url },
      async (span) => {
        const startedAt = process.hrtime.bigint();
        const seconds = () => Number(process.hrtime.bigint() - startedAt) / 1e9;
        const headers = injectTraceHeaders({ ...((init.headers as Record<string, string> | undefined) ?? {}) });
        try {
          const response = await undiciFetch(url, { ...init, headers, dispatcher });
          span.setAttribute('http.response.status_code', response.status);
          metrics?.subgraphFetch.observe({ subgraph, outcome: response.ok ? 'ok' : 'error' }, seconds());
          return response;
        } catch (error) {
          metrics?.subgraphFetch.observe({ subgraph, outcome: 'unavailable' }, seconds());
          // status and retryAfterSeconds let the REST door answer 503 + Retry-After (a retryable
          // outage), not the 500 an error without a declared status maps to.
          throw new GraphQLError(`The ${subgraph} service is unavailable; fields it serves are null`, {
            originalError: error as Error,
            extensions: { code: 'SUBGRAPH_UNAVAILABLE', serviceName: subgraph, status: 503, retryAfterSeconds: 1 },
          });
        }
      },
      { kind: SpanKind.CLIENT },
    );
}

export interface GatewayOpsRuntime {
  /** Serves /metrics and /graphiql; false for any other path. */
  handle(req: http.IncomingMessage, res: http.ServerResponse, pathname: string): Promise<boolean>;
  /** Stops taking requests and waits for those in flight (graceful shutdown). */
  drain(): Promise<void>;
  readonly observed: ObservedServer;
}

/** Wraps the gateway's HTTP server (spans, access log, HTTP metrics, drain) and serves the ops routes. */
export function attachGatewayOps(server: http.Server, ops: GatewayOps | undefined, logger: Logger): GatewayOpsRuntime {
  const effective = ops ?? defaultGatewayOps();
  const observed = observeServer(server, { service: 'gateway', logger, metrics: effective.metrics });
  const graphiql = effective.graphiql ? graphiqlRoute() : undefined;
  return {
    observed,
    drain: () => observed.drain(effective.drainMs),
    async handle(req, res, pathname) {
      if (pathname === '/metrics') {
        await serveMetrics(req, res, effective.metrics);
        return true;
      }
      return graphiql ? graphiql.handle(req, res, pathname) : false;
    },
  };
}

/** The gateway's operations bundle from the configuration; persisted queries go to Redis when there is one. */
export function gatewayOpsFromConfig(config: Config, deps: { metrics: Metrics; redis?: Redis }): GatewayOps {
  return {
    metrics: deps.metrics,
    limits: config.ops.limits,
    apq: {
      ttlSeconds: config.ops.apqTtlSeconds,
      cache: deps.redis
        ? redisKeyValueCache(deps.redis, { prefix: 'apq:', defaultTtlSeconds: config.ops.apqTtlSeconds })
        : undefined,
    },
    graphiql: config.ops.graphiql,
    drainMs: drainBound(config),
    subgraphMaxConnections: config.ops.subgraphMaxConnections,
  };
}

/**
 * Readiness checks of the subgraphs behind the gateway. Not required: with one subgraph down the
 * gateway still answers what the other serves (SUBGRAPH_UNAVAILABLE for the rest).
 */
export async function subgraphChecks(urls: Record<string, string>): Promise<ReadinessReport['checks']> {
  const checks: ReadinessReport['checks'] = {};
  await Promise.all(
    Object.entries(urls).map(async ([name, url]) => {
      const started = Date.now();
      try {
        const response = await fetch(new URL('/healthz', url), { signal: AbortSignal.timeout(2_000) });
        checks[`subgraph:${name}`] = response.ok
          ? { status: 'up', required: false }
          : { status: 'down', required: false, detail: `health check answered ${response.status}` };
      } catch (error) {
        const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${Date.now() - started} ms` : 'unreachable';
        checks[`subgraph:${name}`] = {
          status: 'down',
          required: false,
          detail: `${reason}; its fields answer SUBGRAPH_UNAVAILABLE`,
        };
      }
    }),
  );
  return checks;
}
