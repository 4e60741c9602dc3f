import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../platform/clock.js';
import { createEventProducer } from '../../../events/publish/outbox.js';
import { loadSchemaRegistry } from '../../../events/schemas/registry.js';
import { feedWorkerMetrics } from '../../../events/worker-metrics.js';
import type { EventWorkerHealth } from '../../../events/worker.js';
import { newId } from '../../../platform/ids.js';
import { createMetrics, type Metrics } from '../../../platform/observability/metrics.js';
import { countQuotaRejections, feedAiMetrics } from '../../../subgraphs/ai/metrics.js';
import { quotaExceeded, type QuotaService } from '../../../subgraphs/ai/quota/quota.service.js';
import { createTestDatabase, testDatabaseKind, type TestDatabase } from '../../support/database.js';
import { courseEmit, playPackageBuiltPayload, testSource } from '../../unit/events/fixtures.js';
import { ASSIST, assistInput, startAiHarness, TENANT_B, type AiHarness } from '../ai/support.js';

/** The metrics the event worker and the AI gateway feed, read through /metrics' text format. */
async function scrape(metrics: Metrics): Promise<string> {
  return (await metrics.render()).body;
}

function value(text: string, series: string): number | undefined {
  const escaped = series.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const match = new RegExp(`^${escaped} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : undefined;
}

describe('event worker metrics', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => db?.close());

  it('report outbox backlog and lag, DLQ depth and alert, and consumer redeliveries', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const health: Pick<EventWorkerHealth, 'deadLetters' | 'consumers' | 'outboxListen'> = {
      outboxListen: 'listening',
      deadLetters: { depth: 3, alerting: true, oldestLetterAt: new Date().toISOString(), oldestLetterAgeSeconds: 660 },
      consumers: [
        {
          durable: 'catalog-svc-play-package-built',
          processed: 10,
          duplicates: 0,
          retried: 2,
          deadLettered: 0,
          schemaDigestMismatches: 0,
          held: 0,
          heldPastLimit: 0,
          exhaustedDecided: 0,
          exhaustedHandledLate: 0,
        },
      ],
    };
    feedWorkerMetrics(
      metrics,
      { health: () => health as EventWorkerHealth },
      { db: db.prisma, deadLetterStream: 'CATALOG_DLQ', cacheMs: 0 },
    );

    let text = await scrape(metrics);
    expect(value(text, 'outbox_backlog')).toBe(0);
    expect(value(text, 'outbox_lag_seconds')).toBe(0);
    expect(value(text, 'dlq_depth{stream="CATALOG_DLQ"}')).toBe(3);
    expect(value(text, 'dlq_alert{stream="CATALOG_DLQ"}')).toBe(1);
    expect(value(text, 'dlq_oldest_letter_age_seconds{stream="CATALOG_DLQ"}')).toBe(660);
    expect(value(text, 'consumer_redeliveries_total{consumer="catalog-svc-play-package-built"}')).toBe(2);
    expect(value(text, 'outbox_listen_connected')).toBe(1);

    const producer = createEventProducer({
      registry: loadSchemaRegistry(),
      clock: systemClock,
      source: testSource,
      dualPublishDays: 30,
    });
    const tenantId = newId('tenant');
    for (let i = 0; i < 2; i++) {
      await db.prisma.$transaction((tx) =>
        producer.emit(tx, {
          ...courseEmit(tenantId, `draft-${i}`),
          eventType: 'content.play_package.built',
          payload: playPackageBuiltPayload(tenantId),
        }),
      );
    }
    await db.prisma.$executeRawUnsafe(`UPDATE "OutboxEvent" SET "createdAt" = now() - interval '90 seconds'`);
    health.consumers[0].retried = 5;
    health.deadLetters = { depth: 0, oldestLetterAgeSeconds: 0, alerting: false };
    health.outboxListen = 'reconnecting';
    text = await scrape(metrics);
    expect(value(text, 'outbox_listen_connected')).toBe(0);
    expect(value(text, 'outbox_backlog')).toBe(2);
    expect(value(text, 'outbox_lag_seconds')).toBeGreaterThanOrEqual(90);
    expect(value(text, 'dlq_alert{stream="CATALOG_DLQ"}')).toBe(0);
    // A counter grows by what happened since the last scrape.
    expect(value(text, 'consumer_redeliveries_total{consumer="catalog-svc-play-package-built"}')).toBe(5);
    // Without a LISTEN (OUTBOX_LISTEN off, the embedded database) there is no series to alert on.
    const withoutListen = createMetrics({ defaultMetrics: false });
    feedWorkerMetrics(
      withoutListen,
      { health: () => ({ ...health, outboxListen: 'off' }) as EventWorkerHealth },
      { db: db.prisma, deadLetterStream: 'CATALOG_DLQ', cacheMs: 0 },
    );
    text = await scrape(withoutListen);
    expect(value(text, 'dlq_depth{stream="CATALOG_DLQ"}')).toBe(0);
    expect(text).not.toMatch(/^outbox_listen_connected /m);
  });
});

describe('AI gateway metrics', () => {
  let ai: AiHarness;
  const metrics = createMetrics({ defaultMetrics: false });

  beforeAll(async () => {
    ai = await startAiHarness(testDatabaseKind(), { MOCK_FAULT_INJECTION: 'true', AI_PROVIDER_RETRIES: '0' }, { metrics });
    feedAiMetrics(metrics, ai.services, ai.db.prisma, { cacheMs: 0 });
  });
  afterAll(async () => ai?.close());

  const note = (extra: Record<string, unknown> = {}) =>
    assistInput('patient_chart.note_summary', { note: 'BP 150/95', ...extra });

  it('time each provider attempt by outcome, count its errors by kind, and report each breaker', async () => {
    expect((await ai.gql(ASSIST, note())).errors).toBeUndefined();
    await ai.gql(ASSIST, note({ __mock: { status: 500 } }));
    const text = await scrape(metrics);
    expect(value(text, 'provider_request_duration_seconds_count{provider="mock",outcome="ok"}')).toBeGreaterThanOrEqual(1);
    expect(value(text, 'provider_request_duration_seconds_count{provider="mock",outcome="error"}')).toBeGreaterThanOrEqual(1);
    expect(value(text, 'provider_errors_total{provider="mock",code="server_error"}')).toBeGreaterThanOrEqual(1);
    expect(value(text, 'provider_breaker_state{provider="mock"}')).toBe(0);
  });

  it('report the HITL queue, and count outputs passed through while review is switched off', async () => {
    // The seeded global policy already holds note summaries (of the test above) for review.
    const depthBefore = value(await scrape(metrics), 'hitl_queue_depth{queue="fac-001/cardiology"}') ?? 0;
    await ai.db.prisma.hITLPolicy.create({
      data: {
        id: newId('hitlPolicy'),
        tenantId: TENANT_B,
        featureKey: 'patient_chart.note_summary',
        mode: 'required',
        updatedBy: newId('user'),
      },
    });
    const held = await ai.gql<{ assist: { status: string } }>(ASSIST, note(), { tenantId: TENANT_B });
    expect(held.data?.assist.status).toBe('pending_review');
    let text = await scrape(metrics);
    expect(value(text, 'hitl_queue_depth{queue="fac-001/cardiology"}')).toBe(depthBefore + 1);
    // The age is the oldest held output's: backdate the queue's outputs by an hour and it says so.
    await ai.db.prisma.$executeRaw`
      UPDATE "AIProvenance" SET "createdAt" = now() - interval '1 hour'
       WHERE "reviewState" = 'pending' AND "facilityId" = 'fac-001' AND "specialty" = 'cardiology'`;
    text = await scrape(metrics);
    const oldestAge = value(text, 'hitl_queue_oldest_age_seconds{queue="fac-001/cardiology"}');
    expect(oldestAge).toBeGreaterThanOrEqual(3_600);
    expect(oldestAge).toBeLessThan(3_600 + 60);
    expect(value(text, 'hitl_passthrough_total{feature="patient_chart.note_summary"}')).toBeUndefined();

    await ai.db.prisma.featureFlag.create({
      data: { tenantId: TENANT_B, featureKey: '*', flag: 'hitl.enabled', enabled: false, updatedBy: newId('user') },
    });
    const released = await ai.gql<{ assist: { reviewState: string } }>(ASSIST, note(), { tenantId: TENANT_B });
    expect(released.data?.assist.reviewState).toBe('bypassed_by_flag');
    text = await scrape(metrics);
    expect(value(text, 'hitl_passthrough_total{feature="patient_chart.note_summary"}')).toBe(1);
  });

  it('count quota rejections by limit, and passes every other outcome through untouched', async () => {
    const counting = createMetrics({ defaultMetrics: false });
    const refusing: QuotaService = {
      reserve: async () => {
        throw quotaExceeded('requests_per_minute', 12);
      },
      settle: async () => {},
      health: async () => ({ status: 'up', store: 'memory' }),
    };
    const quota = countQuotaRejections(refusing, counting);
    await expect(quota.reserve('ten_x', { enabled: true } as never, 10)).rejects.toMatchObject({ code: 'quota.exceeded' });
    await expect(quota.reserve('ten_x', { enabled: true } as never, 10)).rejects.toMatchObject({ code: 'quota.exceeded' });
    expect(await quota.health()).toEqual({ status: 'up', store: 'memory' });
    expect(value(await scrape(counting), 'quota_rejections_total{limit="requests_per_minute"}')).toBe(2);
  });
});
