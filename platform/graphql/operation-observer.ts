import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { trace } from '@opentelemetry/api';
import { operationLabel, type Metrics } from '../observability/metrics.js';

/**
 * Apollo plugin recording each GraphQL operation: latency and outcome per known operation (others
 * are `other`), the codes of the errors it returned, and the operation's name and type on the
 * request's server span (spans are sampled and not aggregated, so any name may go there).
 */
export function operationObserver<TContext extends BaseContext>(
  service: string,
  metrics: Metrics | undefined,
  knownOperations: ReadonlySet<string> = new Set(),
): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      const startedAt = process.hrtime.bigint();
      return {
        async didResolveOperation(requestContext) {
          const span = trace.getActiveSpan();
          span?.setAttribute('graphql.operation.name', requestContext.operationName ?? '');
          if (requestContext.operation) span?.setAttribute('graphql.operation.type', requestContext.operation.operation);
        },
        async willSendResponse(requestContext) {
          if (!metrics) return;
          const operation = operationLabel(
            requestContext.operationName ?? requestContext.operation?.name?.value,
            knownOperations,
          );
          const type = requestContext.operation?.operation ?? 'unknown';
          const body = requestContext.response.body;
          const errors = body.kind === 'single' ? (body.singleResult.errors ?? []) : [];
          for (const error of errors) {
            const code = typeof error.extensions?.code === 'string' ? error.extensions.code : 'UNKNOWN';
            metrics.graphqlErrors.inc({ service, operation, code });
          }
          const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
          metrics.graphqlDuration.observe({ service, operation, type, outcome: errors.length ? 'error' : 'ok' }, seconds);
        },
      };
    },
  };
}
