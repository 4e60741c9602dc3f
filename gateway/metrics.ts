import type { Gauge, Histogram } from 'prom-client';
import type { Metrics } from '../platform/metrics.js';

/** The gateway's fetches to its subgraphs; names and labels are a contract (docs/operations.md). */
export interface SubgraphFetchMetrics {
  readonly duration: Histogram<'subgraph' | 'outcome'>;
  /** Fetches the gateway has in flight to each subgraph, over HTTP or in process. */
  readonly inFlight: Gauge<'subgraph'>;
}

/** Declared on the process's registry by the first caller, shared by every later one. */
export function subgraphFetchMetrics(metrics: Metrics): SubgraphFetchMetrics {
  return {
    duration: metrics.histogram({
      name: 'subgraph_fetch_duration_seconds',
      help: 'Gateway to subgraph fetch latency, by subgraph and outcome (ok, error, unavailable).',
      labelNames: ['subgraph', 'outcome'],
    }),
    inFlight: metrics.gauge({
      name: 'subgraph_fetches_in_flight',
      help: 'Fetches the gateway has in flight to each subgraph (over HTTP or in process).',
      labelNames: ['subgraph'],
    }),
  };
}
