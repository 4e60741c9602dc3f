import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInProcessBus } from '../../../events/bus/in-process-bus.js';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { systemClock } from '../../../platform/clock.js';
import { startConsumer } from '../../../events/consume/consumer-runner.js';
import type { ConsumerHandle } from '../../../events/consume/consumer-spec.js';
import { subjectFor } from '../../../events/envelope.js';
import { createEventProducer } from '../../../events/publish/outbox.js';
import { createOutboxRelay } from '../../../events/publish/outbox-relay.js';
import { loadSchemaRegistry } from '../../../events/schemas/registry.js';
import { deadLetterSubjectPrefix, ensureStreams } from '../../../events/streams.js';
import { loadSystemConfig } from '../../../processes/config.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { activeTraceparent, shutdownTelemetry, startTelemetry, withSpan } from '../../../platform/observability/telemetry.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { ancestors, startOtlpReceiver, type OtlpReceiver } from '../../support/otlp-receiver.js';
import { courseEmit, playPackageBuiltPayload, testSource } from '../../unit/events/fixtures.js';

/**
 * An event's trace from the request that wrote it to the consumer that handled it: the outbox row
 * keeps the request's traceparent, the relay publishes under a producer span, and the consumer's
 * span (and its database work) hangs under that publish, linked to it.
 */
const EVENT = 'content.play_package.built';
const PRODUCER = 4;
const CONSUMER = 5;

let otlp: OtlpReceiver;
let db: TestDatabase;
let bus: EventBus;
let consumer: ConsumerHandle | undefined;

beforeAll(async () => {
  otlp = await startOtlpReceiver();
  startTelemetry({ tracesUrl: `${otlp.url}/v1/traces`, serviceName: 'event-traces-test' });
  db = await createTestDatabase();
  bus = createInProcessBus();
  await ensureStreams(bus, loadSystemConfig({}));
});

afterAll(async () => {
  await consumer?.stop();
  await bus?.close();
  await db?.close();
  await otlp?.close();
});

describe('event traces', () => {
  it('connect the producing request, the relay publish and the consumer with its database work', async () => {
    const config = loadSystemConfig({});
    const registry = loadSchemaRegistry();
    const tenantId = newId('tenant');
    const producer = createEventProducer({ registry, clock: systemClock, source: testSource, dualPublishDays: 30 });

    const request = await withSpan('request', {}, async () => {
      const current = activeTraceparent()!;
      await db.prisma.$transaction((tx) =>
        producer.emit(tx, {
          ...courseEmit(tenantId, 'draft-1'),
          eventType: EVENT,
          payload: playPackageBuiltPayload(tenantId),
          traceparent: current.traceparent,
        }),
      );
      return { traceId: current.traceId, spanId: current.traceparent.split('-')[2] };
    });

    const relay = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger });
    expect(await relay.runOnce()).toMatchObject({ published: 1 });

    let handled: () => void = () => {};
    const done = new Promise<void>((resolve) => (handled = resolve));
    consumer = await startConsumer({
      bus,
      db: db.prisma,
      logger: silentLogger,
      registry,
      stream: config.events.contentStream,
      durable: 'trace-test',
      subject: subjectFor(EVENT, 1),
      eventType: EVENT,
      version: 1,
      maxDeliver: 3,
      ackWaitMs: 10_000,
      deadLetterStream: { subjectPrefix: deadLetterSubjectPrefix(config.events) },
      handle: async (tx) => {
        await tx.$queryRawUnsafe('SELECT 42 AS handled');
        handled();
      },
    });
    await done;
    await consumer.stop();
    consumer = undefined;
    // Flushes the batch exporter, as shutdown does.
    await shutdownTelemetry();

    const spans = (await otlp.waitFor((all) => all.some((s) => s.kind === CONSUMER), 20_000)).filter(
      (s) => s.traceId === request.traceId,
    );
    const publish = spans.find((s) => s.kind === PRODUCER);
    expect(publish).toMatchObject({ name: `publish ${subjectFor(EVENT, 1)}`, parentSpanId: request.spanId });
    const consume = spans.find((s) => s.kind === CONSUMER);
    expect(consume).toMatchObject({
      name: `process ${subjectFor(EVENT, 1)}`,
      parentSpanId: publish!.spanId,
      links: [{ traceId: request.traceId, spanId: publish!.spanId }],
      attributes: { 'messaging.consumer.group.name': 'trace-test', 'messaging.delivery.count': 1 },
    });
    const handlerQuery = spans.find(
      (s) => s.name === 'prisma:client:db_query' && String(s.attributes['db.query.text']).includes('42'),
    );
    expect(handlerQuery).toBeDefined();
    expect(ancestors(handlerQuery!, spans)).toContainEqual(consume);
  });
});
