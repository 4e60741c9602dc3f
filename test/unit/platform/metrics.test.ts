import { describe, expect, it } from 'vitest';
import { BREAKER_STATE, createMetrics, operationLabel } from '../../../platform/metrics.js';

const FED = [
  'outbox_backlog',
  'outbox_lag_seconds',
  'dlq_depth',
  'dlq_alert',
  'provider_breaker_state',
  'hitl_queue_depth',
  'hitl_queue_oldest_age_seconds',
] as const;

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
    for (const name of FED) metrics.feed(name, () => 0);
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
    const remove = metrics.feed('outbox_backlog', () => backlog);
    metrics.feed('provider_breaker_state', async () => [
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
    metrics.feed('dlq_depth', () => {
      throw new Error('nats down');
    });
    metrics.feed('hitl_queue_depth', () => [{ labels: { queue: 'q1' }, value: 4 }]);
    const { body } = await metrics.render();
    expect(body).toContain('metrics_source_errors_total{gauge="dlq_depth"} 1');
    expect(body).toContain('hitl_queue_depth{queue="q1"} 4');
  });
});

describe('operationLabel', () => {
  it('bounds client-chosen operation names', () => {
    expect(operationLabel('Courses')).toBe('Courses');
    expect(operationLabel(undefined)).toBe('anonymous');
    expect(operationLabel('x'.repeat(80))).toBe('invalid');
    expect(operationLabel('drop table;')).toBe('invalid');
  });
});
