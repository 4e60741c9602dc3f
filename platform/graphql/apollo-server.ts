import { ApolloServer, type ApolloServerOptions, type ApolloServerPlugin, type BaseContext } from '@apollo/server';
import type { GatewayInterface } from '@apollo/server-gateway-interface';
import type { GraphQLSchema } from 'graphql';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { formatGraphQLError } from './format-error.js';
import { operationObserver } from './operation-observer.js';
import { operationRules } from './operation-rules.js';
import type { QueryLimits } from '../config/config.js';
import { queryLimitOptions } from './query-limits.js';

/** What differs between the GraphQL doors; the rest is the same at every one. */
export interface DoorServerOptions<TContext extends BaseContext> {
  /** `gateway`, `catalog`, `ai`: the `service` label of the operation metrics. */
  name: string;
  /** A subgraph's schema, or the gateway's federated one. */
  graph: { schema: GraphQLSchema } | { gateway: GatewayInterface };
  logger: Logger;
  metrics: Metrics | undefined;
  limits: QueryLimits;
  knownOperations?: ReadonlySet<string>;
  /** The door's own plugins: `first` before the shared ones (the landing page), `last` after them. */
  plugins: { first: Array<ApolloServerPlugin<TContext>>; last: Array<ApolloServerPlugin<TContext>> };
  /** Apollo's persisted queries (APQ): only the gateway takes them. */
  persistedQueries?: ApolloServerOptions<TContext>['persistedQueries'];
  /** How a single result becomes the response body (default: Apollo's, JSON.stringify + newline). */
  stringifyResult?: ApolloServerOptions<TContext>['stringifyResult'];
}

/**
 * The Apollo Server of every GraphQL door (gateway and subgraphs), built in one place: the same
 * limits, operation observer and rules, error formatting and logging everywhere, and the choices
 * every door shares, with their reasons, written once.
 */
export function createDoorServer<TContext extends BaseContext>(options: DoorServerOptions<TContext>): ApolloServer<TContext> {
  const { logger, metrics } = options;
  const limits = queryLimitOptions<TContext>(options.limits, metrics);
  const shared = {
    introspection: true,
    parseOptions: limits.parseOptions,
    validationRules: limits.validationRules,
    // Apollo's CSRF prevention guards cookie-authenticated servers; every operation here needs an
    // Authorization header, which a cross-site form or image cannot send, and the guard would
    // refuse plain GET queries (GraphQL over HTTP allows them).
    csrfPrevention: false,
    // Apollo would stop itself on SIGTERM, racing our drain (in-flight requests would see a
    // stopped server); the entry point owns the shutdown order instead.
    stopOnTerminationSignals: false,
    formatError: formatGraphQLError(logger),
    // Apollo adds `extensions.stacktrace` unless NODE_ENV is production or test; no door sends one
    // in any environment (the stack is logged with the error, never answered).
    includeStacktraceInErrorResponses: false,
    plugins: [
      ...options.plugins.first,
      operationObserver<TContext>(options.name, metrics, options.knownOperations),
      operationRules<TContext>(),
      limits.plugin,
      ...options.plugins.last,
    ],
    logger: apolloLogger(logger),
    ...(options.persistedQueries === undefined ? {} : { persistedQueries: options.persistedQueries }),
    ...(options.stringifyResult === undefined ? {} : { stringifyResult: options.stringifyResult }),
  };
  return 'gateway' in options.graph
    ? new ApolloServer<TContext>({ ...shared, gateway: options.graph.gateway })
    : new ApolloServer<TContext>({ ...shared, schema: options.graph.schema });
}

/** Apollo's warnings and errors in our log (server and gateway alike); its debug and info lines are noise here. */
export function apolloLogger(logger: Logger) {
  return {
    debug: () => {},
    info: () => {},
    warn: (message: unknown) => logger.warn(String(message)),
    error: (message: unknown) => logger.error(String(message)),
  };
}
