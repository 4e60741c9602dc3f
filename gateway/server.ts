import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApolloGateway, RemoteGraphQLDataSource, type GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import { ApolloServer, type GraphQLRequest } from '@apollo/server';
import { ApolloServerPluginLandingPageLocalDefault } from '@apollo/server/plugin/landingPage/default';
import { authenticateRequest, type Principal, type TokenVerifier } from '../platform/auth/verifier.js';
import { AppError, unauthenticated } from '../platform/errors.js';
import { captureGraphQL, executeGraphQL } from '../platform/graphql/apollo-http.js';
import { formatGraphQLError } from '../platform/graphql/format-error.js';
import { sendGraphQLHttpError, type RunningServer } from '../platform/graphql/subgraph-server.js';
import { header, readJson, sendJson, sendProblem } from '../platform/http/http.js';
import { isStorableGraphQLResponse, mutationRoute, unguardedMutationPlugin } from '../platform/idempotency/graphql-door.js';
import { runIdempotent, sendIdempotentResult } from '../platform/idempotency/guard.js';
import { parseIdempotencyKey, requestFingerprint } from '../platform/idempotency/idempotency.logic.js';
import type { IdempotencyStore } from '../platform/idempotency/store.js';
import { newId } from '../platform/ids.js';
import type { Logger } from '../platform/logger.js';
import { continueTrace } from '../platform/tracing.js';
import { SUPERGRAPH_PATH, type SubgraphName } from './compose.js';
import { FORWARDED_HEADERS } from './forwarded-headers.js';
import {
  attachGatewayOps,
  defaultGatewayOps,
  gatewayApolloOptions,
  subgraphDispatcher,
  subgraphFetcher,
  type GatewayOps,
} from './ops.js';

export interface GatewayContext {
  principal: Principal;
  requestId: string;
  /** Lower-case header name to value, sent to every subgraph fetch. */
  forward: Record<string, string>;
  /** Set by a door that applied the Idempotency-Key rules; mutations without it are refused. */
  idempotencyChecked?: boolean;
  /**
   * Set by REST-compat for its own fixed documents (bounded by each route's limits): the depth and
   * cost limits are for operations written by clients, not by this service.
   */
  trustedOperation?: boolean;
}

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, { status: 'up' | 'down' | 'degraded'; detail?: string; required: boolean }>;
}

export interface RestRouter {
  /** Returns true when it handled the request. */
  handle(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    gateway: GatewayHandle,
    info: { requestId: string; traceparent: string },
  ): Promise<boolean>;
}

export interface GatewayHandle {
  verifier: TokenVerifier;
  logger: Logger;
  maxBodyBytes: number;
  /** Runs one operation through the gateway's query planner, as an HTTP request would. */
  execute(
    request: GraphQLRequest,
    context: GatewayContext,
  ): Promise<{
    data?: Record<string, unknown> | null;
    errors?: ReadonlyArray<{ message: string; extensions?: Record<string, unknown> }>;
  }>;
}

export interface GatewayOptions {
  host: string;
  port: number;
  subgraphUrls: Record<SubgraphName, string>;
  verifier: TokenVerifier;
  logger: Logger;
  maxBodyBytes: number;
  readiness: () => Promise<ReadinessReport>;
  rest?: RestRouter;
  /** Enforces Idempotency-Key on GraphQL mutations over HTTP (same store as the REST door). */
  idempotency?: IdempotencyStore;
  supergraphSdl?: string;
  /** Metrics, query limits, persisted queries, GraphiQL, graceful drain (gateway/ops.ts). */
  ops?: GatewayOps;
}

class ForwardingDataSource extends RemoteGraphQLDataSource<GatewayContext> {
  override willSendRequest(options: GraphQLDataSourceProcessOptions<GatewayContext>) {
    // Health checks and schema loads carry no request context; only operations forward headers.
    const forward = (options.context as Partial<GatewayContext> | undefined)?.forward;
    if (!forward) return;
    for (const [name, value] of Object.entries(forward)) options.request.http?.headers.set(name, value);
  }
}

export function forwardedHeaders(req: http.IncomingMessage, requestId: string, traceparent: string): Record<string, string> {
  const forward: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS) {
    const value = header(req, name);
    if (value !== undefined) forward[name] = value;
  }
  forward['traceparent'] = traceparent;
  forward['x-request-id'] = requestId;
  return forward;
}

export async function startGateway(options: GatewayOptions): Promise<RunningServer & { handle: GatewayHandle }> {
  const { logger } = options;
  const supergraphSdl = options.supergraphSdl ?? (await fs.readFile(SUPERGRAPH_PATH, 'utf8'));
  // Apollo Gateway sends anonymous usage data to Apollo unless this Apollo variable says otherwise,
  // and it only reads the environment. A hospital network must not be called out of unasked, so it
  // is off unless an operator sets APOLLO_TELEMETRY_DISABLED=false explicitly.
  process.env.APOLLO_TELEMETRY_DISABLED ??= 'true';
  const dispatcher = subgraphDispatcher(options.ops?.subgraphMaxConnections ?? defaultGatewayOps().subgraphMaxConnections);
  const gateway = new ApolloGateway({
    supergraphSdl,
    buildService: ({ name }) => {
      const url = options.subgraphUrls[name as SubgraphName];
      if (!url) throw new Error(`No URL configured for subgraph ${name}`);
      return new ForwardingDataSource({ url, fetcher: subgraphFetcher(name, dispatcher, options.ops?.metrics) as never });
    },
    logger: { debug: () => {}, info: () => {}, warn: (m) => logger.warn(String(m)), error: (m) => logger.error(String(m)) },
  });
  const opsApollo = gatewayApolloOptions<GatewayContext>(options.ops);
  const apollo = new ApolloServer<GatewayContext>({
    gateway,
    ...opsApollo.config,
    introspection: true,
    formatError: formatGraphQLError(logger),
    plugins: [
      ApolloServerPluginLandingPageLocalDefault({ embed: true, includeCookies: false }),
      ...opsApollo.plugins,
      ...(options.idempotency ? [unguardedMutationPlugin<GatewayContext>()] : []),
    ],
    logger: { debug: () => {}, info: () => {}, warn: (m) => logger.warn(String(m)), error: (m) => logger.error(String(m)) },
  });
  await apollo.start();

  const handle: GatewayHandle = {
    verifier: options.verifier,
    logger,
    maxBodyBytes: options.maxBodyBytes,
    async execute(request, context) {
      const response = await apollo.executeOperation(request, { contextValue: context });
      if (response.body.kind !== 'single') throw new Error('Incremental delivery is not supported here');
      return response.body.singleResult as never;
    },
  };

  const server = http.createServer((req, res) => {
    const requestId = header(req, 'x-request-id') ?? newId('request');
    const trace = continueTrace(header(req, 'traceparent'));
    res.setHeader('x-request-id', requestId);
    res.setHeader('traceparent', trace.traceparent);
    void (async () => {
      try {
        const url = new URL(req.url ?? '/', 'http://localhost');
        if (url.pathname === '/healthz') return sendJson(res, 200, { status: 'ok' });
        if (url.pathname === '/readyz') {
          const report = await options.readiness();
          return sendJson(res, report.ready ? 200 : 503, report);
        }
        if (await ops.handle(req, res, url.pathname)) return;
        if (url.pathname === '/graphql') {
          const wantsPage = req.method === 'GET' && (header(req, 'accept') ?? '').includes('text/html');
          if (wantsPage) {
            // The Sandbox page itself is public; every operation it sends is authenticated.
            return await executeGraphQL(apollo, req, res, undefined, async () => {
              throw unauthenticated();
            });
          }
          if (req.method !== 'POST' && req.method !== 'GET') {
            throw new AppError('METHOD_NOT_ALLOWED', 'Use GET or POST for GraphQL', { headers: { allow: 'GET, POST' } });
          }
          const principal = await authenticateRequest(options.verifier, {
            authorization: header(req, 'authorization'),
            tenantId: header(req, 'x-tenant-id'),
          });
          const body = req.method === 'POST' ? await readJson(req, options.maxBodyBytes) : undefined;
          const context: GatewayContext = { principal, requestId, forward: forwardedHeaders(req, requestId, trace.traceparent) };
          const mutation = options.idempotency ? mutationRoute(body) : undefined;
          if (options.idempotency && mutation) {
            const request = {
              scope: { tenantId: principal.tenantId, subject: principal.subject, route: mutation },
              key: parseIdempotencyKey(header(req, 'idempotency-key'), 'mutations'),
              fingerprint: requestFingerprint('POST', '/graphql', body),
            };
            const run = () => captureGraphQL(apollo, req, body, async () => ({ ...context, idempotencyChecked: true }));
            return sendIdempotentResult(
              res,
              await runIdempotent(options.idempotency, request, run, logger, isStorableGraphQLResponse),
            );
          }
          return await executeGraphQL(apollo, req, res, body, async () => context);
        }
        if (options.rest && (await options.rest.handle(req, res, handle, { requestId, traceparent: trace.traceparent }))) return;
        throw new AppError('NOT_FOUND', `No route ${req.method} ${url.pathname}`);
      } catch (error) {
        // GraphQL clients get a GraphQL-shaped error; every other path speaks problem+json.
        if (new URL(req.url ?? '/', 'http://localhost').pathname === '/graphql') sendGraphQLHttpError(res, error, logger);
        else sendProblem(res, error, logger);
      }
    })();
  });
  const ops = attachGatewayOps(server, options.ops, logger);
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  const port = (server.address() as AddressInfo).port;
  logger.info({ port }, 'gateway listening');
  return {
    url: `http://${options.host === '0.0.0.0' ? '127.0.0.1' : options.host}:${port}`,
    port,
    handle,
    close: async () => {
      await ops.drain();
      await apollo.stop();
      await dispatcher.close();
    },
  };
}
