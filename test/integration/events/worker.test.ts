import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSystemConfig } from '../../../processes/config.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { manualClock } from '../../../platform/clock.js';
import { buildEnvelope, subjectFor, type EventEnvelope } from '../../../events/envelope.js';
import { loadSchemaRegistry } from '../../../events/schemas/registry.js';
import { streamSpecs } from '../../../events/streams.js';
import { startEventWorker, type ConsumerSpec } from '../../../events/worker.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { courseEmit, courseRegisteredPayload, playPackageBuiltPayload } from '../../unit/events/fixtures.js';
import { bytes, recorder, stacks, streamEnv, text, uniqueToken } from './helpers.js';

const registry = loadSchemaRegistry();

describe.each(stacks())('event worker: $name', (stack) => {
  const token = uniqueToken();
  const config = loadSystemConfig({ ...streamEnv(token), SERVICE_INSTANCE: 'worker-test', SERVICE_COMMIT: 'c0ffee' });
  const streams = { subjectPrefix: `${stack.subjectPrefix}w${token}.`, storage: 'memory' as const };
  const clock = manualClock('2026-11-21T09:00:00.000Z');
  const tenantId = newId('tenant');
  let bus: EventBus;
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase(stack.db);
    bus = await stack.bus.open();
  });
  afterAll(async () => {
    for (const spec of streamSpecs(config.events, streams)) await bus?.deleteStream(spec.name);
    await bus?.close();
    await db?.close();
  });

  it('ensures streams, runs consumers whose emitted events the relay publishes, reports health and stops cleanly', async () => {
    const consumer: ConsumerSpec = {
      durable: `catalog-svc-play-package-built-${token}`,
      stream: config.events.contentStream,
      subject: `${streams.subjectPrefix}${subjectFor('content.play_package.built', 1)}`,
      eventType: 'content.play_package.built',
      version: 1,
      ackWaitMs: 5_000,
      handle: async (_tx, envelope, ctx) => {
        const courseId = newId('course');
        await ctx.emit({
          ...courseEmit(envelope.tenantId, courseId),
          eventType: 'catalog.course.registered',
          payload: courseRegisteredPayload(courseId),
        });
      },
    };
    // The relay polls rarely here: the event must go out because the consumer's commit woke it.
    const worker = await startEventWorker({
      bus,
      db: db.prisma,
      logger: silentLogger,
      config,
      consumers: [consumer],
      clock,
      streams,
      relay: { pollIntervalMs: 600_000 },
    });
    const published = recorder<EventEnvelope>();
    const watch = await bus.consume(
      {
        stream: config.events.catalogStream,
        durable: `watch_${token}`,
        filterSubject: `${streams.subjectPrefix}catalog.>`,
        ackWaitMs: 5_000,
        maxDeliver: 1,
      },
      async (m) => {
        published.push(JSON.parse(text(m.data)) as EventEnvelope);
        m.ack();
      },
    );

    const consumed = buildEnvelope(
      { clock, registry, source: { service: 'content', instance: 'c', commit: 'x' } },
      {
        eventType: 'content.play_package.built',
        eventVersion: 1,
        payload: playPackageBuiltPayload(tenantId),
        tenantId,
        partitionKey: 'draft',
        actor: { type: 'system', id: 'content' },
        retentionClass: 'operational',
        dataResidency: 'EU',
      },
    );
    await bus.publish(consumer.subject, bytes(JSON.stringify(consumed)), { msgId: consumed.eventId });
    const [registered] = await published.until((items) => items.length === 1, 'the emitted catalog event');
    expect(registered).toMatchObject({
      eventType: 'catalog.course.registered',
      causationId: consumed.eventId,
      correlationId: consumed.correlationId,
      source: { service: 'catalog', instance: 'worker-test', commit: 'c0ffee' },
    });

    expect(worker.health()).toMatchObject({
      status: 'ok',
      relay: { running: true, consecutiveFailures: 0 },
      // Started without an outbox commit feed: the relay polls (and its own consumers wake it).
      outboxListen: 'off',
      deadLetters: { depth: 0, alerting: false },
      consumers: [{ durable: consumer.durable, processed: 1, duplicates: 0, deadLettered: 0 }],
    });

    // A poison event makes the DLQ non-empty; past the alert threshold the worker is degraded.
    const invalid = { ...consumed, eventId: newId('event').slice(4), payload: { ...consumed.payload, locales: [] } };
    await bus.publish(consumer.subject, bytes(JSON.stringify(invalid)), { msgId: invalid.eventId });
    const dead = recorder<string>();
    const deadLetterWatch = await bus.consume(
      { stream: config.events.dlqStream, durable: `dlq_${token}`, filterSubject: '>', ackWaitMs: 5_000, maxDeliver: 1 },
      async (m) => {
        dead.push(m.headers['x-event-id']);
        m.ack();
      },
    );
    await dead.until((ids) => ids.includes(invalid.eventId), 'the dead letter');
    const [letter] = await bus.readStream(config.events.dlqStream);
    clock.set(letter.time);
    expect(await worker.deadLetterMonitor.check()).toMatchObject({ depth: 1, oldestLetterAt: letter.time.toISOString() });
    expect(worker.health().status).toBe('ok');
    const threshold = config.events.dlqAlertMinutes * 60_000;
    clock.advance(threshold + 1_000);
    await worker.deadLetterMonitor.check();
    expect(worker.health()).toMatchObject({ status: 'degraded', deadLetters: { depth: 1, alerting: true } });

    // The verdict comes from the DLQ stream, not from the process's memory: a replica (or this
    // worker restarted) that has just started agrees at once, with the same age.
    const replica = await startEventWorker({ bus, db: db.prisma, logger: silentLogger, config, consumers: [], clock, streams });
    expect(replica.health().deadLetters).toEqual(worker.health().deadLetters);
    expect(replica.health()).toMatchObject({
      status: 'degraded',
      deadLetters: { alerting: true, oldestLetterAgeSeconds: threshold / 1000 + 1 },
    });
    await replica.stop();

    await watch.stop();
    await deadLetterWatch.stop();
    await worker.stop();
    expect(worker.relay.status()).toMatchObject({ running: false, publishedTotal: 1 });
    expect(await db.prisma.outboxEvent.count({ where: { publishedAt: null } })).toBe(0);
  });
});
