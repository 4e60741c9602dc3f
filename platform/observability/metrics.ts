import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Prometheus metrics of one process, on a registry created here and passed to whoever records (no
 * prom-client default registry, so two systems in one test process never mix their numbers).
 *
 * This module declares the generic metrics every process has (HTTP and GraphQL requests, process
 * metrics). Each part declares its own metrics on the same registry (gateway/subgraph-calls/metrics.ts,
 * subgraphs/ai/metrics.ts, events/worker-metrics.ts) with `counter`, `histogram`, `gauge` and
 * `feed`; their names and labels are a contract (dashboards, docs/operations.md).
 *
 * Counters and histograms are recorded where things happen. Gauges that describe a store (outbox
 * backlog, DLQ depth, HITL queue, breaker state) are read when Prometheus scrapes: the owning
 * module registers a source with `feed()`, and nothing polls in between.
 */
export interface MetricDefinition<L extends string = string> {
  name: string;
  help: string;
  labelNames: readonly L[];
}

export interface Sample {
  labels?: Record<string, string>;
  value: number;
}

/** A number for an unlabelled gauge, or one sample per label set. */
export type GaugeSource = () => Promise<number | Sample[]> | number | Sample[];

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
  /** A part's counter on this registry: declared by its first caller, shared by every later one. */
  counter<L extends string>(definition: MetricDefinition<L>): Counter<L>;
  /** A part's histogram on this registry, declared once like `counter`. */
  histogram<L extends string>(definition: MetricDefinition<L> & { buckets?: number[] }): Histogram<L>;
  /** A part's gauge set where things happen (a fed gauge is read at scrape time instead: `feed`). */
  gauge<L extends string>(definition: MetricDefinition<L>): Gauge<L>;
  /**
   * Registers a scrape-time source for a gauge (the gauge appears with its first source); returns
   * a function that removes it. A failing or slow source (2 s) is left out of that scrape and
   * counted in metrics_source_errors_total.
   */
  feed(gauge: MetricDefinition, source: GaugeSource): () => void;
  /** Runs `fn` before each scrape, e.g. to turn a component's cumulative stats into counter increments. */
  onScrape(fn: () => void | Promise<void>): () => void;
  render(): Promise<{ contentType: string; body: string }>;
}

/** The request metrics every process declares at once. */
function requestMetrics(registers: Registry[]) {
  return {
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
  };
}

/** Gauges read at scrape time from the sources their owners register. */
function fedGauges(registry: Registry) {
  const registers = [registry];
  const feedErrors = new Counter({
    name: 'metrics_source_errors_total',
    help: 'Gauge sources that failed or timed out during a scrape (the gauge is left out).',
    labelNames: ['gauge'],
    registers,
  });
  // Fed gauges exist only in a process that has a source for them: the gateway process does not
  // report an outbox backlog of 0 while the worker process holds the real one.
  const fed = new Map<string, { gauge: Gauge<string>; sources: Set<GaugeSource> }>();
  const scrapeHooks = new Set<() => void | Promise<void>>();

  const readSources = async (name: string, gauge: Gauge<string>, sources: Set<GaugeSource>) => {
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
  };

  return {
    async refresh() {
      for (const hook of scrapeHooks)
        await Promise.resolve()
          .then(hook)
          .catch(() => feedErrors.inc({ gauge: 'on_scrape' }));
      for (const [name, { gauge, sources }] of fed) await readSources(name, gauge, sources);
    },
    feed({ name, help, labelNames }: MetricDefinition, source: GaugeSource): () => void {
      let entry = fed.get(name);
      if (!entry) {
        entry = { gauge: new Gauge({ name, help, labelNames: [...labelNames], registers }), sources: new Set() };
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
    onScrape(fn: () => void | Promise<void>): () => void {
      scrapeHooks.add(fn);
      return () => scrapeHooks.delete(fn);
    },
  };
}

export function createMetrics(options: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const gauges = fedGauges(registry);
  return {
    registry,
    ...requestMetrics(registers),
    // Parts ask for their metrics wherever they are wired; the first asker declares each one.
    counter: <L extends string>({ name, help, labelNames }: MetricDefinition<L>) =>
      declaredOnce(registry, name, () => new Counter<L>({ name, help, labelNames: [...labelNames], registers })),
    histogram: <L extends string>({ name, help, labelNames, buckets }: MetricDefinition<L> & { buckets?: number[] }) =>
      declaredOnce(
        registry,
        name,
        () => new Histogram<L>({ name, help, labelNames: [...labelNames], buckets: buckets ?? LATENCY_BUCKETS, registers }),
      ),
    gauge: <L extends string>({ name, help, labelNames }: MetricDefinition<L>) =>
      declaredOnce(registry, name, () => new Gauge<L>({ name, help, labelNames: [...labelNames], registers })),
    feed: gauges.feed,
    onScrape: gauges.onScrape,
    async render() {
      await gauges.refresh();
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

/** The metric of that name on the registry, or the one `declare` creates (and registers) now. */
function declaredOnce<M>(registry: Registry, name: string, declare: () => M): M {
  return (registry.getSingleMetric(name) as M | undefined) ?? declare();
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('metric source timed out')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Operation names come from clients: keep the label set bounded. */
/**
 * The `operation` label of a GraphQL operation: its name when the service knows it (the REST
 * table's documents, and the subgraph fetches the gateway plans for them: `RestCourses__catalog__0`),
 * else `other`. Clients name their operations freely; a label taken from them would grow a series
 * per name they invent.
 */
export function operationLabel(name: string | null | undefined, known: ReadonlySet<string>): string {
  if (!name) return 'other';
  if (known.has(name)) return name;
  const planned = /^(.+)__[a-z]+__\d+$/.exec(name)?.[1];
  return planned !== undefined && known.has(planned) ? planned : 'other';
}
