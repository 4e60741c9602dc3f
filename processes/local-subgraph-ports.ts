import type { ExecuteOperation } from '../gateway/execute-port.js';
import { gatewayContext } from '../gateway/forwarding.js';
import { subgraphFetchMetrics } from '../gateway/metrics.js';
import type { SubgraphName } from '../gateway/supergraph.js';
import type { Metrics } from '../platform/metrics.js';
import type { LocalSubgraph } from '../platform/graphql/subgraph-server.js';
import { SpanKind, withSpan } from '../platform/telemetry.js';
import { continueTrace } from '../platform/trace-context.js';

/**
 * Each subgraph of this process as an execute port of its own, for REST-compat's documents that one
 * subgraph serves alone (rest-compat/documents.ts, SERVED_BY_ONE_SUBGRAPH): the operation runs on
 * the subgraph's Apollo Server with the headers, caller and trace the gateway would have forwarded
 * (gateway/forwarding.ts, gateway/in-process-subgraph.ts), without the gateway executing it first.
 */
export function localSubgraphPorts(
  subgraphs: Partial<Record<SubgraphName, LocalSubgraph>> | undefined,
  metrics?: Metrics,
): Partial<Record<SubgraphName, ExecuteOperation>> {
  const ports: Partial<Record<SubgraphName, ExecuteOperation>> = {};
  // Counted as the gateway's in-process fetches are: the same operation ran through the gateway
  // before, and operators watch the subgraph's load and latency by these series.
  const fetches = metrics && subgraphFetchMetrics(metrics);
  for (const [name, subgraph] of Object.entries(subgraphs ?? {}) as Array<[SubgraphName, LocalSubgraph]>) {
    ports[name] = (operation, exchange, options = {}) => {
      const { principal, requestId, forward } = gatewayContext(exchange, {
        trusted: options.trusted === true,
        ifMatch: options.ifMatch,
      });
      return withSpan(
        `subgraph ${name}`,
        { 'graphql.subgraph.name': name, 'subgraph.transport': 'in-process', 'service.component': name },
        async () => {
          const startedAt = process.hrtime.bigint();
          fetches?.inFlight.inc({ subgraph: name });
          const result = await subgraph
            .execute({ ...operation, headers: forward }, { principal, requestId, trace: continueTrace(forward.traceparent) })
            .finally(() => fetches?.inFlight.dec({ subgraph: name }));
          const elapsed = Number(process.hrtime.bigint() - startedAt) / 1e9;
          fetches?.duration.observe({ subgraph: name, outcome: result.errors?.length ? 'error' : 'ok' }, elapsed);
          return result;
        },
        { kind: SpanKind.INTERNAL },
      );
    };
  }
  return ports;
}
