import type { AddressInfo } from 'node:net';
import { HeaderMap, type ApolloServer, type BaseContext } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import type { GraphQLSchema } from 'graphql';
import type { Principal, TokenVerifier } from '../auth/verifier.js';
import type { ConnectionLimits, PlatformConfig } from '../config/config.js';
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
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { TraceContext } from '../trace-context.js';
import { createDoorServer } from './apollo-server.js';
import { graphqlEndpoints } from './graphql-endpoint.js';
import type { QueryLimits } from './query-limits.js';

export interface RunningServer {
  url: string;
  port: number;
  /** Shutdown's first step: keep serving, end each connection after its reply (serve.ts). */
  closeConnectionsAfterReply(): void;
  /** Stops accepting, finishes the requests in flight, then stops. */
  close(): Promise<void>;
}

/**
 * Who an operation runs for, and the request headers a subgraph reads: the HTTP door builds it
 * from a verified exchange, an in-process gateway from the exchange it verified itself.
 */
export interface SubgraphCaller {
  principal: Principal;
  requestId: string;
  trace: TraceContext;
  header(name: string): string | undefined;
}

/** One operation as a gateway sends it to a subgraph, with the headers it forwards. */
export interface SubgraphRequest {
  query: string;
  variables?: Record<string, unknown>;
  operationName?: string;
  headers: Readonly<Record<string, string>>;
}

export interface SubgraphResult {
  data?: Record<string, unknown> | null;
  errors?: ReadonlyArray<{ message: string; extensions?: Record<string, unknown>; path?: ReadonlyArray<string | number> }>;
}

/**
 * A subgraph running in the caller's own process (one-process mode): the gateway runs its
 * fetches here instead of over loopback HTTP. The operation passes the same Apollo Server, with
 * the same limits, plugins and error formatting as at the subgraph's HTTP door; only the door's
 * own stages are skipped, because the gateway in this process already ran them.
 */
export interface LocalSubgraph {
  execute(request: SubgraphRequest, caller: Omit<SubgraphCaller, 'header'>): Promise<SubgraphResult>;
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
}

export function subgraphServerSettings(config: PlatformConfig): SubgraphServerSettings {
  return {
    maxBodyBytes: config.maxBodyBytes,
    limits: config.ops.limits,
    drainMs: drainBound(config),
    connections: config.ops.connections,
    metricsOnThisPort: config.ops.metricsPort === undefined,
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
  /** `/readyz`: what this subgraph needs to serve (its process builds it; platform/readiness.ts). */
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
): Promise<RunningServer & { local: LocalSubgraph }> {
  const { logger, settings, metrics } = options;
  const apollo = createDoorServer<TContext>({
    name: options.name,
    graph: { schema: options.schema },
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
    local: localSubgraph(apollo, options.context),
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

function localSubgraph<TContext extends BaseContext>(
  apollo: ApolloServer<TContext>,
  context: (caller: SubgraphCaller) => Promise<TContext>,
): LocalSubgraph {
  return {
    async execute(request, caller) {
      const headers = new HeaderMap();
      for (const [name, value] of Object.entries(request.headers)) headers.set(name, value);
      const contextValue = await context({ ...caller, header: (name) => headers.get(name.toLowerCase()) });
      const response = await apollo.executeOperation(
        {
          query: request.query,
          variables: request.variables,
          operationName: request.operationName,
          http: { method: 'POST', headers, search: '', body: undefined },
        },
        { contextValue },
      );
      if (response.body.kind !== 'single')
        throw new Error('Incremental delivery is not supported between the gateway and a subgraph');
      return response.body.singleResult as SubgraphResult;
    },
  };
}
