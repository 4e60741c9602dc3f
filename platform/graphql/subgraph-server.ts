import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApolloServer, type BaseContext } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import type { GraphQLSchema } from 'graphql';
import { authenticateRequest, type Principal, type TokenVerifier } from '../auth/verifier.js';
import { AppError } from '../errors.js';
import { header, readJson, sendJson, sendProblem } from '../http/http.js';
import { newId } from '../ids.js';
import type { Logger } from '../logger.js';
import { executeGraphQL } from './apollo-http.js';
import { formatGraphQLError } from './format-error.js';
import { observeServer, type ServerOps } from '../http/observed-server.js';
import { serveMetrics } from '../metrics.js';
import { operationObserver } from './operation-observer.js';

export interface RunningServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface SubgraphServerOptions<TContext extends BaseContext> {
  name: string;
  schema: GraphQLSchema;
  host: string;
  port: number;
  verifier: TokenVerifier;
  logger: Logger;
  maxBodyBytes: number;
  context(req: http.IncomingMessage, principal: Principal, requestId: string): Promise<TContext>;
  /** Extra plain HTTP routes (e.g. the AI health endpoint), tried before /graphql. */
  routes?: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<boolean>;
  /** Spans, access log, metrics (and GET /metrics), graceful drain. */
  ops?: ServerOps;
}

/**
 * A subgraph verifies the caller's token and tenant itself (the gateway forwards them), so calling
 * a subgraph directly, `_entities` included, is never a way around authentication or tenancy.
 */
export async function startSubgraphServer<TContext extends BaseContext>(
  options: SubgraphServerOptions<TContext>,
): Promise<RunningServer> {
  const { logger } = options;
  const apollo = new ApolloServer<TContext>({
    schema: options.schema,
    introspection: true,
    // The process's signal handler drains the HTTP server first, then stops Apollo.
    stopOnTerminationSignals: false,
    formatError: formatGraphQLError(logger),
    plugins: [
      ApolloServerPluginLandingPageDisabled(),
      // Apollo Server computes cache hints with a hook on every resolved field (2 % of the catalog's
      // CPU serving a REST page, bench/README.md); no response here is cached on them.
      ApolloServerPluginCacheControlDisabled(),
      operationObserver<TContext>(options.name, options.ops?.metrics),
    ],
    logger: { debug: () => {}, info: () => {}, warn: (m) => logger.warn(String(m)), error: (m) => logger.error(String(m)) },
  });
  await apollo.start();

  const server = http.createServer((req, res) => {
    const requestId = header(req, 'x-request-id') ?? newId('request');
    void (async () => {
      try {
        if (options.routes && (await options.routes(req, res))) return;
        const path = new URL(req.url ?? '/', 'http://localhost').pathname;
        if (path === '/healthz') return sendJson(res, 200, { status: 'ok', service: options.name });
        if (path === '/metrics') return await serveMetrics(req, res, options.ops?.metrics);
        if (path !== '/graphql') throw new AppError('NOT_FOUND', `No route ${path}`);
        if (req.method !== 'POST')
          throw new AppError('METHOD_NOT_ALLOWED', 'Use POST for GraphQL', { headers: { allow: 'POST' } });
        const principal = await authenticateRequest(options.verifier, {
          authorization: header(req, 'authorization'),
          tenantId: header(req, 'x-tenant-id'),
        });
        const body = await readJson(req, options.maxBodyBytes);
        await executeGraphQL(apollo, req, res, body, () => options.context(req, principal, requestId));
      } catch (error) {
        sendGraphQLHttpError(res, error, logger);
      }
    })();
  });
  const observed = observeServer(server, { service: options.name, logger, metrics: options.ops?.metrics });
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  const port = (server.address() as AddressInfo).port;
  logger.info({ port }, `${options.name} subgraph listening`);
  return {
    url: `http://${options.host === '0.0.0.0' ? '127.0.0.1' : options.host}:${port}/graphql`,
    port,
    close: async () => {
      await observed.drain(options.ops?.drainMs);
      await apollo.stop();
    },
  };
}

/** An error before GraphQL execution: GraphQL-shaped body, HTTP status from the error. */
export function sendGraphQLHttpError(res: http.ServerResponse, error: unknown, logger: Logger): void {
  if (error instanceof AppError) {
    sendJson(
      res,
      error.status,
      { errors: [{ message: error.message, extensions: { code: error.code, status: error.status } }] },
      error.headers,
    );
    return;
  }
  sendProblem(res, error, logger);
}
