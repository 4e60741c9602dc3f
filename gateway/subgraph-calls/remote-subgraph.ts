import type { GraphQLDataSource, GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import type { GatewayGraphQLResponse } from '@apollo/server-gateway-interface';
import { Kind, type DocumentNode } from 'graphql';
import type { Dispatcher } from 'undici';
import type { Metrics } from '../../platform/observability/metrics.js';
import { injectTraceHeaders, SpanKind, withSpan } from '../../platform/observability/telemetry.js';
import { distinctRepresentations } from './entity-representations.logic.js';
import type { GatewayContext } from '../forwarding.js';
import { subgraphFetchMetrics, type SubgraphFetchMetrics } from './metrics.js';
import type { Replica, ReplicaPool } from './replica-pool.js';
import { mayRetryElsewhere, type AttemptOutcome } from './subgraph-answer.logic.js';
import { attemptFetch, type SubgraphHttpRequest } from './subgraph-fetch.js';
import { unavailableAnswer } from './unavailable.js';

export interface RemoteSubgraphDeps {
  pool: ReplicaPool;
  dispatcher: Dispatcher;
  /** Per attempt: queries are retried elsewhere, so theirs is the shorter one. */
  timeouts: { queryMs: number; mutationMs: number };
  metrics?: Metrics;
}

/**
 * A subgraph over HTTP, on one or more replicas (CATALOG_URL / AI_URL lists). Each fetch sends
 * the request's forwarded headers and a client span's `traceparent`, tries the replicas in the
 * pool's order, and classifies every attempt where it ends (subgraph-answer.logic.ts): a GraphQL
 * answer goes to the query planner whatever its HTTP status; a replica that cannot serve is taken
 * out of rotation and the fetch moves to the next one when that is safe (a read, or a write that
 * was never sent). When no replica could serve, the fields of the fetch are subgraph.unavailable.
 *
 * It replaces Apollo's RemoteGraphQLDataSource, which hands any non-2xx answer to the client as an
 * uncoded error carrying the subgraph's URL and body, and has no notion of replicas or timeouts.
 */
export class RemoteSubgraph implements GraphQLDataSource<GatewayContext> {
  private readonly fetches?: SubgraphFetchMetrics;

  constructor(
    private readonly name: string,
    private readonly deps: RemoteSubgraphDeps,
  ) {
    this.fetches = deps.metrics && subgraphFetchMetrics(deps.metrics);
  }

  async process(options: GraphQLDataSourceProcessOptions<GatewayContext>): Promise<GatewayGraphQLResponse> {
    const { request } = options;
    if (!request.query) throw new Error('Missing query');
    const incoming = options.kind === 'incoming operation' ? options : undefined;
    const read = operationType(incoming?.document, request.query) === 'query';
    const entities = distinctRepresentations(request.variables);
    const http: SubgraphHttpRequest = {
      body: JSON.stringify({ query: request.query, variables: entities.variables, operationName: request.operationName }),
      headers: requestHeaders(options),
    };
    const outcome = await this.fromReplicas(http, read);
    if (outcome.kind === 'answered') return entities.expand(outcome.answer) as GatewayGraphQLResponse;
    return unavailableAnswer(this.name, {
      document: incoming?.document,
      variables: request.variables,
      pathInIncomingRequest: incoming?.pathInIncomingRequest,
    });
  }

  /** Replicas in turn until one serves, or a failure that must not be tried again elsewhere. */
  private async fromReplicas(request: SubgraphHttpRequest, read: boolean): Promise<AttemptOutcome> {
    const { pool, timeouts } = this.deps;
    const timeoutMs = read ? timeouts.queryMs : timeouts.mutationMs;
    let outcome: AttemptOutcome | undefined;
    for (const [resend, replica] of pool.attemptOrder().entries()) {
      if (resend > 0) this.fetches?.retries.inc({ subgraph: this.name });
      outcome = await this.attempt(replica, request, timeoutMs, resend);
      if (outcome.kind === 'answered') {
        pool.succeeded(replica);
        return outcome;
      }
      pool.failed(replica, { reason: outcome.reason, excerpt: outcome.excerpt });
      if (!mayRetryElsewhere(outcome, read)) break;
    }
    return outcome!;
  }

  /** One attempt, with its client span (its `traceparent` is what the subgraph continues) and metrics. */
  private attempt(replica: Replica, request: SubgraphHttpRequest, timeoutMs: number, resend: number): Promise<AttemptOutcome> {
    const subgraph = this.name;
    return withSpan(
      `subgraph ${subgraph}`,
      {
        'graphql.subgraph.name': subgraph,
        'url.full': replica.url,
        ...(resend > 0 ? { 'http.request.resend_count': resend } : {}),
      },
      async (span) => {
        const startedAt = process.hrtime.bigint();
        this.fetches?.inFlight.inc({ subgraph });
        const headers = injectTraceHeaders({ ...request.headers });
        const outcome = await attemptFetch(this.deps.dispatcher, replica.url, { ...request, headers }, timeoutMs).finally(() =>
          this.fetches?.inFlight.dec({ subgraph }),
        );
        const label = outcome.kind === 'unavailable' ? 'unavailable' : outcome.status < 300 ? 'ok' : 'error';
        this.fetches?.duration.observe({ subgraph, outcome: label }, Number(process.hrtime.bigint() - startedAt) / 1e9);
        if (outcome.kind === 'answered') span.setAttribute('http.response.status_code', outcome.status);
        else span.setAttribute('error.type', outcome.reason);
        return outcome;
      },
      { kind: SpanKind.CLIENT },
    );
  }
}

/**
 * The headers of a fetch: JSON, what the planner set (a trace request), and the request's
 * forwarded headers (gateway/forwarding.ts). Health checks and schema loads carry no request
 * context; only operations forward headers.
 */
function requestHeaders(options: GraphQLDataSourceProcessOptions<GatewayContext>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of options.request.http?.headers ?? []) headers[name.toLowerCase()] = value;
  headers['content-type'] = 'application/json';
  const forward = (options.context as Partial<GatewayContext> | undefined)?.forward;
  for (const [name, value] of Object.entries(forward ?? {})) headers[name] = value;
  return headers;
}

/** The type of the fetch's operation: the planner's document, else the first keyword of its text. */
function operationType(document: DocumentNode | undefined, query: string): string {
  const operation = document?.definitions.find((definition) => definition.kind === Kind.OPERATION_DEFINITION);
  if (operation?.kind === Kind.OPERATION_DEFINITION) return operation.operation;
  const keyword = /^\s*(query|mutation|subscription)\b/.exec(query)?.[1];
  return keyword ?? (/^\s*\{/.test(query) ? 'query' : 'unknown');
}
