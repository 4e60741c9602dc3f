import { GraphQLError } from 'graphql';
import { Agent, fetch as undiciFetch, type Dispatcher, type RequestInit, type Response } from 'undici';
import type { Metrics } from '../platform/metrics.js';
import { subgraphFetchMetrics } from './metrics.js';
import { injectTraceHeaders, SpanKind, withSpan } from '../platform/telemetry.js';

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
 * a network failure turned into a clear subgraph.unavailable error for that subgraph's fields only.
 */
export function subgraphFetcher(subgraph: string, dispatcher: Dispatcher, metrics?: Metrics) {
  const fetches = metrics && subgraphFetchMetrics(metrics);
  return async (url: string, init: RequestInit = {}): Promise<Response> =>
    withSpan(
      `subgraph ${subgraph}`,
      { 'graphql.subgraph.name': subgraph, 'url.full': url },
      async (span) => {
        const startedAt = process.hrtime.bigint();
        const seconds = () => Number(process.hrtime.bigint() - startedAt) / 1e9;
        const headers = injectTraceHeaders({ ...((init.headers as Record<string, string> | undefined) ?? {}) });
        fetches?.inFlight.inc({ subgraph });
        try {
          const response = await undiciFetch(url, { ...init, headers, dispatcher });
          span.setAttribute('http.response.status_code', response.status);
          fetches?.duration.observe({ subgraph, outcome: response.ok ? 'ok' : 'error' }, seconds());
          return response;
        } catch (error) {
          fetches?.duration.observe({ subgraph, outcome: 'unavailable' }, seconds());
          // status and retryAfterSeconds let the REST door answer 503 + Retry-After (a retryable
          // outage), not the 500 an error without a declared status maps to.
          throw new GraphQLError(`The ${subgraph} service is unavailable; fields it serves are null`, {
            originalError: error as Error,
            extensions: { code: 'subgraph.unavailable', serviceName: subgraph, status: 503, retryAfterSeconds: 1 },
          });
        } finally {
          fetches?.inFlight.dec({ subgraph });
        }
      },
      { kind: SpanKind.CLIENT },
    );
}
