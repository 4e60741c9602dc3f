import { describe, expect, it } from 'vitest';
import { feedWorkerMetrics } from '../../../events/worker-metrics.js';
import { subgraphFetchMetrics } from '../../../gateway/subgraph-calls/metrics.js';
import type { Db } from '../../../platform/db/database.js';
import { createMetrics, operationLabel, type MetricDefinition } from '../../../platform/observability/metrics.js';
import { BREAKER_STATE, aiMetrics, feedAiMetrics } from '../../../subgraphs/ai/metrics.js';

const gauge = (name: string, labelNames: string[] = []): MetricDefinition => ({ name, help: `${name} (test)`, labelNames });

/** A database whose stores are empty, for the parts' scrape-time sources. */
const emptyDb = { $queryRaw: async () => [] } as unknown as Db;

const REQUIRED = [
  'http_requests_total',
  'http_request_duration_seconds',
  'graphql_operation_duration_seconds',
  'graphql_operation_errors_total',
  'subgraph_fetch_duration_seconds',
  'outbox_backlog',
  'outbox_lag_seconds',
  'consumer_redeliveries_total',
  'dlq_depth',
  'dlq_alert',
  'quota_rejections_total',
  'provider_request_duration_seconds',
  'provider_errors_total',
  'provider_breaker_state',
  'hitl_queue_depth',
  'hitl_queue_oldest_age_seconds',
  'hitl_passthrough_total',
];

describe('createMetrics', () => {
  it('declares every metric operators rely on, in Prometheus text format', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    // Each part declares its own metrics on the process's registry, as the processes wire them.
    subgraphFetchMetrics(metrics);
    aiMetrics(metrics);
    feedAiMetrics(metrics, { registry: { providers: new Map() }, breakers: { state: () => 'closed' } }, emptyDb);
    feedWorkerMetrics(
      metrics,
      { health: () => ({ deadLetters: { depth: 0, alerting: false }, consumers: [] }) as never },
      {
        db: emptyDb,
        deadLetterStream: 'CATALOG_DLQ',
      },
    );
    const { body, contentType } = await metrics.render();
    expect(contentType).toContain('text/plain');
    for (const name of REQUIRED) expect(body, name).toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
  });

  it('keeps each process on its own registry', async () => {
    const a = createMetrics({ defaultMetrics: false });
    const b = createMetrics({ defaultMetrics: false });
    a.httpRequests.inc({ service: 'gateway', method: 'GET', route: '/healthz', status: '200' });
    expect((await a.render()).body).toContain(
      'http_requests_total{service="gateway",method="GET",route="/healthz",status="200"} 1',
    );
    expect((await b.render()).body).not.toContain('route="/healthz"');
  });

  it('reads fed gauges from their sources at scrape time, and stops when a source is removed', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    let backlog = 3;
    const remove = metrics.feed(gauge('outbox_backlog'), () => backlog);
    metrics.feed(gauge('provider_breaker_state', ['provider']), async () => [
      { labels: { provider: 'mock' }, value: BREAKER_STATE.closed },
      { labels: { provider: 'openai' }, value: BREAKER_STATE.open },
    ]);
    let body = (await metrics.render()).body;
    expect(body).toMatch(/^outbox_backlog 3$/m);
    expect(body).toMatch(/^provider_breaker_state\{provider="openai"\} 2$/m);
    backlog = 0;
    expect((await metrics.render()).body).toMatch(/^outbox_backlog 0$/m);
    remove();
    body = (await metrics.render()).body;
    // Nobody measures the outbox in this process any more: no series rather than a false 0.
    expect(body).not.toContain('outbox_backlog');
  });

  it('counts a failing source instead of failing the scrape', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.feed(gauge('dlq_depth', ['stream']), () => {
      throw new Error('nats down');
    });
    metrics.feed(gauge('hitl_queue_depth', ['queue']), () => [{ labels: { queue: 'q1' }, value: 4 }]);
    const { body } = await metrics.render();
    expect(body).toContain('metrics_source_errors_total{gauge="dlq_depth"} 1');
    expect(body).toContain('hitl_queue_depth{queue="q1"} 4');
  });
});

describe('operationLabel', () => {
  const known = new Set(['RestCourses']);

  it('names only the operations the service knows; every other name is other', () => {
    expect(operationLabel('RestCourses', known)).toBe('RestCourses');
    expect(operationLabel('Courses', known)).toBe('other');
    expect(operationLabel(undefined, known)).toBe('other');
    expect(operationLabel('x'.repeat(80), known)).toBe('other');
  });

  it('names the subgraph fetches the gateway plans for a known operation after it', () => {
    expect(operationLabel('RestCourses__catalog__0', known)).toBe('RestCourses');
    expect(operationLabel('Evil__catalog__0', known)).toBe('other');
  });

  it('adds no series for a thousand operation names a client invents', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    for (let i = 0; i < 1_000; i++)
      metrics.graphqlErrors.inc({ service: 'gateway', operation: operationLabel(`Op${i}`, known), code: 'X' });
    const series = await metrics.registry.getSingleMetric('graphql_operation_errors_total')!.get();
    expect(series.values.map((value) => value.labels.operation)).toEqual(['other']);
  });
});

describe('part metrics', () => {
  it('are declared once per registry, however many callers ask', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    aiMetrics(metrics).hitlPassthrough.inc({ feature: 'f' });
    aiMetrics(metrics).hitlPassthrough.inc({ feature: 'f' });
    expect((await metrics.render()).body).toMatch(/^hitl_passthrough_total\{feature="f"\} 2$/m);
  });
});
