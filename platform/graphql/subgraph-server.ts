import type { AddressInfo } from 'node:net';
import type { BaseContext } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import type { GraphQLSchema } from 'graphql';
import type { Principal, TokenVerifier } from '../auth/verifier.js';
import type { ConnectionLimits, PlatformConfig, QueryLimits, SubgraphExecution } from '../config/config.js';
import { header } from '../http/http.js';
import { pipeline, type EndpointTable, type Exchange } from '../http/pipeline.js';
import { probeEndpoints, type ReadinessReport } from '../http/probe-endpoints.js';
import { answerWithEndpoint, createHttpServer, drainBound, serve } from '../http/serve.js';
import { accessLog } from '../http/stages/access-log.js';
import { authenticate, tenantGuard } from '../http/stages/authenticate.js';
import { readBody } from '../http/stages/body.js';
import { errorReplies } from '../http/stages/error-replies.js';
import { requestId } from '../http/stages/request-id.js';
import { route } from '../http/stages/route.js';
import { traceContext } from '../http/stages/trace-context.js';
import { idempotencyKeyRequiredPlugin } from '../idempotency/graphql-mutations.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { TraceContext } from '../observability/trace-context.js';
import { createDoorServer } from './apollo-server.js';
import { compiledQueryExecution } from './compiled-execution.js';
import { graphqlEndpoints } from './graphql-endpoint.js';

export interface RunningServer {
  url: string;
  port: number;
  /** Shutdown's first step: keep serving, end each connection after its reply (serve.ts). */
  closeConnectionsAfterReply(): void;
  /** Stops accepting, finishes the requests in flight, then stops. */
  close(): Promise<void>;
}

/** Who an operation runs for, and the request headers a subgraph reads: the HTTP door builds it from a verified exchange. */
export interface SubgraphCaller {
  principal: Principal;
  requestId: string;
  trace: TraceContext;
  header(name: string): string | undefined;
}

/** What every subgraph server takes from the configuration. */
export interface SubgraphServerSettings {
  maxBodyBytes: number;
  /** The gateway's limits again: a fetch the gateway plans for an operation it admitted fits them. */
  limits: QueryLimits;
  /** How long shutdown waits for in-flight requests before cutting connections. */
  drainMs: number;
  connections: ConnectionLimits;
  /** Serve GET /metrics here; off when the process has an ops port for it (METRICS_PORT). */
  metricsOnThisPort: boolean;
  /** Queries compiled once per document, or interpreted by graphql-js (SUBGRAPH_EXECUTION). */
  execution: SubgraphExecution;
}

export function subgraphServerSettings(config: PlatformConfig): SubgraphServerSettings {
  return {
    maxBodyBytes: config.maxBodyBytes,
    limits: config.ops.limits,
    drainMs: drainBound(config),
    connections: config.ops.connections,
    metricsOnThisPort: config.ops.metricsPort === undefined,
    execution: config.ops.subgraphExecution,
  };
}

export interface SubgraphServerOptions<TContext extends BaseContext> {
  name: string;
  schema: GraphQLSchema;
  host: string;
  port: number;
  settings: SubgraphServerSettings;
  verifier: TokenVerifier;
  logger: Logger;
  metrics?: Metrics;
  /** Operation names metrics label by name; every other one is `other`. */
  knownOperations?: ReadonlySet<string>;
  context(caller: SubgraphCaller): Promise<TContext>;
  /** Extra endpoints (e.g. the AI health endpoint), asked before /graphql. */
  endpoints?: readonly EndpointTable[];
  /** `/readyz`: what this subgraph needs to serve (its process builds it; platform/lifecycle/readiness.ts). */
  readiness?: () => Promise<ReadinessReport>;
}

/**
 * A subgraph behind the same stages as the gateway, minus what only a public door needs (CORS,
 * the Idempotency-Key records): it verifies the caller's token and tenant itself (the gateway
 * forwards them), applies the same query limits, and refuses a mutation without an
 * Idempotency-Key, so calling a subgraph directly, `_entities` included, is never a way around any
 * rule of the gateway. Its port still belongs on a private network.
 */
export async function startSubgraphServer<TContext extends BaseContext>(
  options: SubgraphServerOptions<TContext>,
): Promise<RunningServer> {
  const { logger, settings, metrics } = options;
  const apollo = createDoorServer<TContext>({
    name: options.name,
    graph: settings.execution === 'compiled' ? { gateway: compiledQueryExecution(options.schema) } : { schema: options.schema },
    logger,
    metrics,
    limits: settings.limits,
    knownOperations: options.knownOperations,
    plugins: {
      first: [
        ApolloServerPluginLandingPageDisabled(),
        // Apollo Server computes cache hints with a hook on every resolved field (2 % of the catalog's
        // CPU serving a REST page, bench/README.md); no response here is cached on them.
        ApolloServerPluginCacheControlDisabled(),
      ],
      last: [idempotencyKeyRequiredPlugin<TContext>()],
    },
  });
  await apollo.start();

  const handler = pipeline(
    [
      requestId(),
      traceContext(options.name),
      accessLog({ service: options.name, logger, metrics }),
      errorReplies(logger),
      route([
        probeEndpoints({
          service: options.name,
          metrics: settings.metricsOnThisPort ? metrics : undefined,
          readiness: options.readiness,
        }),
        ...(options.endpoints ?? []),
        graphqlEndpoints<TContext>({
          apollo,
          methods: ['POST'],
          context: (exchange) => options.context(exchangeCaller(exchange)),
        }),
      ]),
      // The caller is known from its headers before a byte of its body is read.
      authenticate(options.verifier),
      tenantGuard(),
      readBody(settings.maxBodyBytes),
    ],
    answerWithEndpoint,
  );
  const server = createHttpServer(settings.connections);
  const served = serve(server, handler, { logger, limits: settings.connections });
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  const port = (server.address() as AddressInfo).port;
  logger.info({ port }, `${options.name} subgraph listening`);
  return {
    url: `http://${options.host === '0.0.0.0' ? '127.0.0.1' : options.host}:${port}/graphql`,
    port,
    closeConnectionsAfterReply: () => served.closeConnectionsAfterReply(),
    close: async () => {
      await served.drain(settings.drainMs);
      await apollo.stop();
    },
  };
}

function exchangeCaller(exchange: Exchange): SubgraphCaller {
  const { principal, trace } = exchange;
  if (!principal || !trace) throw new Error('A subgraph context needs an authenticated, traced exchange');
  return { principal, requestId: exchange.requestId, trace, header: (name) => header(exchange.req, name) };
}
