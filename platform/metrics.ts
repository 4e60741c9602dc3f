import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AppError } from './errors.js';
import { send } from './http/http.js';

/**
 * Prometheus metrics of one process, on a registry created here and passed to whoever records (no
 * prom-client default registry, so two systems in one test process never mix their numbers).
 *
 * Counters and histograms are recorded where things happen. Gauges that describe a store (outbox
 * backlog, DLQ depth, HITL queue, breaker state) are read when Prometheus scrapes: the owning
 * module registers a source with `feed()`, and nothing polls in between.
 */
export type FedGauge =
  | 'outbox_backlog'
  | 'outbox_lag_seconds'
  | 'dlq_depth'
  | 'dlq_alert'
  | 'provider_breaker_state'
  | 'hitl_queue_depth'
  | 'hitl_queue_oldest_age_seconds';

export interface Sample {
  labels?: Record<string, string>;
  value: number;
}

/** A number for an unlabelled gauge, or one sample per label set. */
export type GaugeSource = () => Promise<number | Sample[]> | number | Sample[];

/** provider_breaker_state values. */
export const BREAKER_STATE = { closed: 0, half_open: 1, open: 2 } as const;

const FED_GAUGES: Record<FedGauge, { help: string; labelNames: string[] }> = {
  outbox_backlog: { help: 'Outbox events not yet published to the broker.', labelNames: [] },
  outbox_lag_seconds: { help: 'Age of the oldest unpublished outbox event (0 when the outbox is empty).', labelNames: [] },
  dlq_depth: { help: 'Messages in the dead-letter stream.', labelNames: ['stream'] },
  dlq_alert: {
    help: 'Dead-letter alert: 1 when the DLQ has been non-empty longer than DLQ_ALERT_MINUTES.',
    labelNames: ['stream'],
  },
  provider_breaker_state: {
    help: 'Circuit breaker per model provider: 0 closed, 1 half-open, 2 open.',
    labelNames: ['provider'],
  },
  hitl_queue_depth: { help: 'AI outputs waiting for human review, per reviewer queue.', labelNames: ['queue'] },
  hitl_queue_oldest_age_seconds: {
    help: 'Age of the oldest output waiting for review, per reviewer queue.',
    labelNames: ['queue'],
  },
};

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const SOURCE_TIMEOUT_MS = 2_000;

export interface Metrics {
  readonly registry: Registry;
  readonly httpRequests: Counter<'service' | 'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'service' | 'method' | 'route' | 'status'>;
  readonly httpInFlight: Gauge<'service'>;
  readonly graphqlDuration: Histogram<'service' | 'operation' | 'type' | 'outcome'>;
  readonly graphqlErrors: Counter<'service' | 'operation' | 'code'>;
  /** Operations refused by the gateway's limits (depth, cost) before any subgraph is called. */
  readonly graphqlRejections: Counter<'limit'>;
  readonly subgraphFetch: Histogram<'subgraph' | 'outcome'>;
  readonly consumerRedeliveries: Counter<'consumer'>;
  readonly quotaRejections: Counter<'limit'>;
  readonly providerDuration: Histogram<'provider' | 'outcome'>;
  readonly providerErrors: Counter<'provider' | 'code'>;
  /** Outputs released without review because HITL is switched off (rollback phase 2). */
  readonly hitlPassthrough: Counter<'feature'>;
  /**
   * Registers a scrape-time source for a gauge (the gauge appears with its first source); returns
   * a function that removes it. A failing or slow source (2 s) is left out of that scrape and
   * counted in metrics_source_errors_total.
   */
  feed(gauge: FedGauge, source: GaugeSource): () => void;
  /** Runs `fn` before each scrape, e.g. to turn a component's cumulative stats into counter increments. */
  onScrape(fn: () => void | Promise<void>): () => void;
  render(): Promise<{ contentType: string; body: string }>;
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const feedErrors = new Counter({
    name: 'metrics_source_errors_total',
    help: 'Gauge sources that failed or timed out during a scrape (the gauge is left out).',
    labelNames: ['gauge'],
    registers,
  });

  // Fed gauges exist only in a process that has a source for them: the gateway process does not
  // report an outbox backlog of 0 while the worker process holds the real one.
  const fed = new Map<FedGauge, { gauge: Gauge<string>; sources: Set<GaugeSource> }>();

  const scrapeHooks = new Set<() => void | Promise<void>>();

  const refreshFed = async () => {
    for (const hook of scrapeHooks)
      await Promise.resolve()
        .then(hook)
        .catch(() => feedErrors.inc({ gauge: 'on_scrape' }));
    for (const [name, { gauge, sources }] of fed) {
      gauge.reset();
      for (const source of sources) {
        try {
          const value = await withTimeout(Promise.resolve(source()), SOURCE_TIMEOUT_MS);
          const samples = typeof value === 'number' ? [{ value }] : value;
          for (const sample of samples) gauge.set(sample.labels ?? {}, sample.value);
        } catch {
          feedErrors.inc({ gauge: name });
        }
      }
    }
  };

  return {
    registry,
    httpRequests: new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by service, method, route template and status.',
      labelNames: ['service', 'method', 'route', 'status'],
      registers,
    }),
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency from the first byte read to the response end.',
      labelNames: ['service', 'method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    httpInFlight: new Gauge({
      name: 'http_requests_in_flight',
      help: 'HTTP requests being served.',
      labelNames: ['service'],
      registers,
    }),
    graphqlDuration: new Histogram({
      name: 'graphql_operation_duration_seconds',
      help: 'GraphQL operation latency by operation name and outcome (ok or error).',
      labelNames: ['service', 'operation', 'type', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    graphqlErrors: new Counter({
      name: 'graphql_operation_errors_total',
      help: 'Errors returned in GraphQL responses, by operation and error code.',
      labelNames: ['service', 'operation', 'code'],
      registers,
    }),
    graphqlRejections: new Counter({
      name: 'graphql_limit_rejections_total',
      help: 'Operations refused by the gateway limits (depth, cost).',
      labelNames: ['limit'],
      registers,
    }),
    subgraphFetch: new Histogram({
      name: 'subgraph_fetch_duration_seconds',
      help: 'Gateway to subgraph fetch latency, by subgraph and outcome (ok, error, unavailable).',
      labelNames: ['subgraph', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    consumerRedeliveries: new Counter({
      name: 'consumer_redeliveries_total',
      help: 'Messages delivered again to a durable consumer (delivery count above 1).',
      labelNames: ['consumer'],
      registers,
    }),
    quotaRejections: new Counter({
      name: 'quota_rejections_total',
      help: 'AI requests refused by the per-tenant quota, by limit.',
      labelNames: ['limit'],
      registers,
    }),
    providerDuration: new Histogram({
      name: 'provider_request_duration_seconds',
      help: 'Model provider call latency per attempt, by provider and outcome.',
      labelNames: ['provider', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    providerErrors: new Counter({
      name: 'provider_errors_total',
      help: 'Failed model provider attempts, by provider and error code.',
      labelNames: ['provider', 'code'],
      registers,
    }),
    hitlPassthrough: new Counter({
      name: 'hitl_passthrough_total',
      help: 'AI outputs passed through without human review because HITL is disabled.',
      labelNames: ['feature'],
      registers,
    }),
    feed(name, source) {
      let entry = fed.get(name);
      if (!entry) {
        const { help, labelNames } = FED_GAUGES[name];
        entry = { gauge: new Gauge({ name, help, labelNames, registers }), sources: new Set() };
        fed.set(name, entry);
      }
      const { sources } = entry;
      sources.add(source);
      return () => {
        sources.delete(source);
        if (sources.size === 0 && fed.get(name)?.sources === sources) {
          registry.removeSingleMetric(name);
          fed.delete(name);
        }
      };
    },
    onScrape(fn) {
      scrapeHooks.add(fn);
      return () => scrapeHooks.delete(fn);
    },
    async render() {
      await refreshFed();
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('metric source timed out')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Operation names come from clients: keep the label set bounded. */
export function operationLabel(name: string | null | undefined): string {
  if (!name) return 'anonymous';
  return /^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(name) ? name : 'invalid';
}

/** `GET /metrics`: Prometheus text format. */
export async function serveMetrics(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  metrics: Metrics | undefined,
): Promise<void> {
  if (!metrics) throw new AppError('NOT_FOUND', 'Metrics are not enabled in this process');
  if (req.method !== 'GET') throw new AppError('METHOD_NOT_ALLOWED', 'Use GET for /metrics', { headers: { allow: 'GET' } });
  const { contentType, body } = await metrics.render();
  send(res, 200, body, { 'content-type': contentType, 'cache-control': 'no-store' });
}

/**
 * A process without an HTTP server of its own (the event worker) serves GET /metrics on its own
 * port; /healthz answers too, for a liveness probe.
 */
export async function startMetricsServer(options: {
  host: string;
  port: number;
  metrics: Metrics;
}): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path === '/healthz') return send(res, 200, '{"status":"ok"}', { 'content-type': 'application/json' });
    if (path !== '/metrics') return send(res, 404, 'Not Found', { 'content-type': 'text/plain' });
    serveMetrics(req, res, options.metrics).catch(() => send(res, 500, 'metrics failed', { 'content-type': 'text/plain' }));
  });
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
