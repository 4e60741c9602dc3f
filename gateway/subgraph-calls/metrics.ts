import type { Counter, Gauge, Histogram } from 'prom-client';
import type { Metrics } from '../../platform/observability/metrics.js';

/** The gateway's fetches to its subgraphs; names and labels are a contract (docs/operations.md). */
export interface SubgraphFetchMetrics {
  readonly duration: Histogram<'subgraph' | 'outcome'>;
  /** Fetches the gateway has in flight to each subgraph, over HTTP or in process. */
  readonly inFlight: Gauge<'subgraph'>;
  /** Attempts made again on another replica after one failed. */
  readonly retries: Counter<'subgraph'>;
  /** Replicas of each subgraph in rotation (the gateway's client-side balancing). */
  readonly replicasUp: Gauge<'subgraph'>;
}

/** Declared on the process's registry by the first caller, shared by every later one. */
export function subgraphFetchMetrics(metrics: Metrics): SubgraphFetchMetrics {
  return {
    duration: metrics.histogram({
      name: 'subgraph_fetch_duration_seconds',
      help: 'Gateway to subgraph fetch latency per attempt, by subgraph and outcome (ok, error, unavailable).',
      labelNames: ['subgraph', 'outcome'],
    }),
    inFlight: metrics.gauge({
      name: 'subgraph_fetches_in_flight',
      help: 'Fetches the gateway has in flight to each subgraph (over HTTP or in process).',
      labelNames: ['subgraph'],
    }),
    retries: metrics.counter({
      name: 'subgraph_fetch_retries_total',
      help: 'Subgraph fetches sent again to another replica after an attempt failed (reads, or writes never sent).',
      labelNames: ['subgraph'],
    }),
    replicasUp: metrics.gauge({
      name: 'subgraph_replicas_up',
      help: 'Replicas of each subgraph the gateway keeps in rotation (CATALOG_URL / AI_URL lists).',
      labelNames: ['subgraph'],
    }),
  };
}
