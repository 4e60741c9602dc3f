import type { GraphQLDataSource, GraphQLDataSourceProcessOptions } from '@apollo/gateway';
import type { GatewayGraphQLResponse } from '@apollo/server-gateway-interface';
import type { LocalSubgraph } from '../platform/graphql/subgraph-server.js';
import type { Metrics } from '../platform/metrics.js';
import { subgraphFetchMetrics, type SubgraphFetchMetrics } from './metrics.js';
import { SpanKind, withSpan } from '../platform/telemetry.js';
import { continueTrace } from '../platform/trace-context.js';
import { distinctRepresentations } from './entity-representations.logic.js';
import type { GatewayContext } from './forwarding.js';

/**
 * A subgraph in the gateway's own process (one-process mode, `npm start`): its fetches run on the
 * subgraph's Apollo Server directly instead of over loopback HTTP — no socket, no second JSON
 * round trip, no second verification of a token this process just verified. The operation, the
 * forwarded headers, the limits and the error formatting are those of the HTTP door.
 */
export class InProcessSubgraph implements GraphQLDataSource<GatewayContext> {
  private readonly fetches?: SubgraphFetchMetrics;

  constructor(
    private readonly name: string,
    private readonly subgraph: LocalSubgraph,
    metrics?: Metrics,
  ) {
    this.fetches = metrics && subgraphFetchMetrics(metrics);
  }

  async process(options: GraphQLDataSourceProcessOptions<GatewayContext>): Promise<GatewayGraphQLResponse> {
    const context = options.context as Partial<GatewayContext> | undefined;
    if (!context?.principal || !context.forward) {
      throw new Error(`The ${this.name} subgraph runs in process: only operations of an authenticated request reach it`);
    }
    const { principal, requestId, forward } = context;
    return withSpan(
      `subgraph ${this.name}`,
      // The subgraph's own work hangs below this span, as below its server span over HTTP.
      { 'graphql.subgraph.name': this.name, 'subgraph.transport': 'in-process', 'service.component': this.name },
      async () => {
        const startedAt = process.hrtime.bigint();
        this.fetches?.inFlight.inc({ subgraph: this.name });
        // Each entity once, as over HTTP: the subgraph's cap on representations applies here too.
        const entities = distinctRepresentations(options.request.variables);
        const result = await this.subgraph
          .execute(
            {
              query: options.request.query ?? '',
              variables: entities.variables,
              operationName: options.request.operationName,
              headers: forward,
            },
            { principal, requestId: requestId ?? '', trace: continueTrace(forward.traceparent) },
          )
          .finally(() => this.fetches?.inFlight.dec({ subgraph: this.name }));
        this.fetches?.duration.observe(
          { subgraph: this.name, outcome: result.errors?.length ? 'error' : 'ok' },
          seconds(startedAt),
        );
        return entities.expand(result) as GatewayGraphQLResponse;
      },
      { kind: SpanKind.INTERNAL },
    );
  }
}

function seconds(startedAt: bigint): number {
  return Number(process.hrtime.bigint() - startedAt) / 1e9;
}
