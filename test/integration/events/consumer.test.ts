import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSystemConfig } from '../../../processes/config.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import type { EventBus, MaxDeliveriesAdvisory } from '../../../events/bus/event-bus.js';
import { systemClock } from '../../../platform/clock.js';
import { startConsumer } from '../../../events/consume/consumer-runner.js';
import type { ConsumerHandle, EventHandler, StartConsumerOptions } from '../../../events/consume/consumer-spec.js';
import { deadLetterDepth, listDeadLetters, replayDeadLetters } from '../../../events/dead-letters/dead-letters.js';
import { permanentFailure } from '../../../events/consume/verdict.logic.js';
import { buildEnvelope, subjectFor, type ConsumedEnvelope, type EventEnvelope } from '../../../events/envelope.js';
import { createEventProducer } from '../../../events/publish/outbox.js';
import { loadSchemaRegistry } from '../../../events/schemas/registry.js';
import { deadLetterSubjectPrefix, ensureStreams, streamSpecs } from '../../../events/streams.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { eventually } from '../../support/eventually.js';
import { courseEmit, courseRegisteredPayload, playPackageBuiltPayload, testSource } from '../../unit/events/fixtures.js';
import { bytes, recorder, stacks, streamEnv, text, uniqueToken } from './helpers.js';

const registry = loadSchemaRegistry();
const EVENT = 'content.play_package.built';

describe.each(stacks())('consumer runner, inbox and dead letters: $name', (stack) => {
  const tenantId = newId('tenant');
  const producer = createEventProducer({ registry, clock: systemClock, source: testSource, dualPublishDays: 30 });
  let bus: EventBus;
  let db: TestDatabase;
  const cleanups: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    db = await createTestDatabase(stack.db);
    bus = await stack.bus.open();
  });
  afterAll(async () => {
    for (const cleanup of cleanups) await cleanup();
    await bus?.close();
    await db?.close();
  });

  /**
   * Streams, subject and DLQ of one test: a new durable reads its stream from the start, so each
   * test gets streams of its own.
   */
  async function fixture() {
    const token = uniqueToken();
    const config = loadSystemConfig(streamEnv(token));
    const streamOptions = { subjectPrefix: `${stack.subjectPrefix}p${token}.`, storage: 'memory' as const };
    const deadLetterStream = {
      stream: config.events.dlqStream,
      subjectPrefix: deadLetterSubjectPrefix(config.events, streamOptions),
    };
    const subject = `${streamOptions.subjectPrefix}${subjectFor(EVENT, 1)}`;
    await ensureStreams(bus, config, streamOptions);
    cleanups.push(async () => {
      for (const spec of streamSpecs(config.events, streamOptions)) await bus.deleteStream(spec.name);
    });
    /** Every dead letter, as a DLQ consumer sees it. */
    const deadLetters = recorder<{ subject: string; headers: Record<string, string>; body: string }>();
    const watch = await bus.consume(
      {
        stream: deadLetterStream.stream,
        durable: `dlq_watch_${token}`,
        filterSubject: `${deadLetterStream.subjectPrefix}.>`,
        ackWaitMs: 5_000,
        maxDeliver: 1,
      },
      async (m) => {
        deadLetters.push({ subject: m.subject, headers: m.headers, body: text(m.data) });
        m.ack();
      },
    );
    cleanups.unshift(() => watch.stop());

    const publish = (body: string, msgId: string) =>
      bus.publish(subject, bytes(body), {
        msgId,
        headers: { traceparent: `00-${'c'.repeat(32)}-${'d'.repeat(16)}-01`, 'Content-Type': 'application/json' },
      });

    const consumer = (handle: EventHandler, overrides: Partial<StartConsumerOptions> = {}): Promise<ConsumerHandle> =>
      startConsumer({
        bus,
        db: db.prisma,
        logger: silentLogger,
        registry,
        producer,
        stream: config.events.contentStream,
        durable: `catalog-svc-play-package-built-${token}`,
        subject,
        eventType: EVENT,
        version: 1,
        maxDeliver: config.events.maxDeliver,
        // Long enough that no delivery here times out on a loaded machine.
        ackWaitMs: 5_000,
        nakDelayMs: () => 20,
        deadLetterStream,
        handle,
        ...overrides,
      });
    return { config, deadLetterStream, subject, deadLetters, publish, consumer, token };
  }

  function envelope(payload: Record<string, unknown> = playPackageBuiltPayload(tenantId)): EventEnvelope {
    return buildEnvelope(
      { clock: systemClock, registry, source: { service: 'content', instance: 'c-1', commit: 'def' } },
      {
        eventType: EVENT,
        eventVersion: 1,
        payload,
        tenantId,
        partitionKey: String(payload.courseDraftId ?? 'x'),
        actor: { type: 'system', id: 'content' },
        retentionClass: 'operational',
        dataResidency: 'EU',
      },
    );
  }

  it('applies a duplicated event once, emitting with causation, correlation and trace', async () => {
    const { publish, consumer } = await fixture();
    const calls = recorder<string>();
    const handle = await consumer(async (tx, env, ctx) => {
      const courseId = newId('course');
      await ctx.emit({
        ...courseEmit(env.tenantId, courseId),
        eventType: 'catalog.course.registered',
        payload: courseRegisteredPayload(courseId),
      });
      calls.push(env.eventId);
    });
    const event = envelope();
    const body = JSON.stringify(event);
    await publish(body, `${event.eventId}-first`);
    await publish(body, `${event.eventId}-again`);
    const sentinel = envelope();
    await publish(JSON.stringify(sentinel), sentinel.eventId);
    await calls.until((ids) => ids.includes(sentinel.eventId), 'the sentinel');
    await handle.stop();
    expect(calls.items.filter((id) => id === event.eventId)).toHaveLength(1);
    expect(handle.stats()).toMatchObject({ processed: 2, duplicates: 1, deadLettered: 0 });
    const rows = await db.prisma.outboxEvent.findMany({
      where: { eventType: 'catalog.course.registered' },
      orderBy: { id: 'asc' },
    });
    const emitted = rows.map((r) => r.envelope as unknown as EventEnvelope);
    expect(emitted.filter((e) => e.causationId === event.eventId)).toHaveLength(1);
    expect(emitted.find((e) => e.causationId === event.eventId)).toMatchObject({ correlationId: event.correlationId });
    expect((rows[0].headers as Record<string, string>).traceparent).toMatch(new RegExp(`^00-${'c'.repeat(32)}-[0-9a-f]{16}-01$`));
    expect(await db.prisma.inboxEvent.count({ where: { eventId: event.eventId } })).toBe(1);
  });

  describe('in batches (handleBatch)', () => {
    const registered = (env: ConsumedEnvelope) => ({
      ...courseEmit(env.tenantId, `crs_${env.eventId}`),
      eventType: 'catalog.course.registered',
      payload: courseRegisteredPayload(`crs_${env.eventId}`),
    });

    it('hands every new event to the batch handler once, skips duplicates, and writes what it emits in order', async () => {
      const { publish, consumer } = await fixture();
      const single = recorder<string>();
      const batched = recorder<string[]>();
      const events = Array.from({ length: 12 }, () => envelope());
      const sentinel = envelope();
      // Published before the consumer starts: its first pulls bring several at once.
      for (const event of events) await publish(JSON.stringify(event), event.eventId);
      await publish(JSON.stringify(events[3]), `${events[3].eventId}-again`);
      await publish(JSON.stringify(sentinel), sentinel.eventId);
      const handle = await consumer(
        async (_tx, env) => {
          single.push(env.eventId);
        },
        {
          batchSize: 5,
          handleBatch: async (_tx, batch) => {
            for (const { envelope: env, ctx } of batch) await ctx.emit(registered(env));
            batched.push(batch.map(({ envelope: env }) => env.eventId));
          },
        },
      );
      await batched.until((b) => b.flat().includes(sentinel.eventId), 'the sentinel');
      // Stopping waits for the batch in hand: its verdicts are counted after.
      await handle.stop();
      expect(single.items).toEqual([]);
      expect(batched.items.every((batch) => batch.length <= 5)).toBe(true);
      // Within and across batches (concurrency 1), the handler sees the stream's order.
      expect(batched.items.flat()).toEqual([...events, sentinel].map((e) => e.eventId));
      expect(handle.stats()).toMatchObject({ processed: events.length + 1, duplicates: 1, deadLettered: 0 });
      const rows = await db.prisma.outboxEvent.findMany({
        where: { eventType: 'catalog.course.registered', partitionKey: { in: events.map((e) => `crs_${e.eventId}`) } },
        orderBy: { id: 'asc' },
      });
      expect(rows.map((r) => (r.envelope as unknown as EventEnvelope).causationId)).toEqual(events.map((e) => e.eventId));
      expect(await db.prisma.inboxEvent.count({ where: { eventId: { in: events.map((e) => e.eventId) } } })).toBe(events.length);
    });

    it('retries a failed batch one event at a time: only the bad event is dead-lettered, nothing is applied twice', async () => {
      const { publish, consumer, deadLetters } = await fixture();
      const events = Array.from({ length: 6 }, () => envelope());
      const poison = events[2];
      const applied = recorder<string>();
      for (const event of events) await publish(JSON.stringify(event), event.eventId);
      const handle = await consumer(
        async (_tx, env, ctx) => {
          if (env.eventId === poison.eventId) throw permanentFailure('package contradicts the stored version');
          await ctx.emit(registered(env));
          applied.push(env.eventId);
        },
        {
          batchSize: 10,
          handleBatch: async (_tx, batch) => {
            for (const { envelope: env, ctx } of batch) {
              if (env.eventId === poison.eventId) throw permanentFailure('package contradicts the stored version');
              await ctx.emit(registered(env));
            }
            for (const { envelope: env } of batch) applied.push(env.eventId);
          },
        },
      );
      await deadLetters.until((items) => items.some((d) => d.headers['x-event-id'] === poison.eventId), 'the dead letter');
      await applied.until((ids) => ids.length >= events.length - 1, 'the other events');
      await handle.stop();
      const good = events.filter((e) => e !== poison).map((e) => e.eventId);
      expect([...applied.items].sort()).toEqual([...good].sort());
      expect(handle.stats()).toMatchObject({ processed: good.length, deadLettered: 1, retried: 0 });
      const rows = await db.prisma.outboxEvent.findMany({
        where: { partitionKey: { in: events.map((e) => `crs_${e.eventId}`) } },
      });
      expect(rows.map((r) => (r.envelope as unknown as EventEnvelope).causationId).sort()).toEqual([...good].sort());
      expect(await db.prisma.inboxEvent.count({ where: { eventId: poison.eventId } })).toBe(0);
    });
  });

  it('tolerates an unknown enum value (enum widening is a minor change)', async () => {
    const { publish, consumer } = await fixture();
    const seen = recorder<string>();
    const handle = await consumer(async (_tx, env) => {
      seen.push((env.payload.playPackage as { format: string }).format);
    });
    const event = envelope(
      playPackageBuiltPayload(tenantId, {
        playPackage: { playPackageId: newId('playPackage'), sha256: 'e'.repeat(64), format: 'v3' },
      }),
    );
    await publish(JSON.stringify(event), event.eventId);
    await seen.until((items) => items.length === 1, 'the widened event');
    await handle.stop();
    expect(seen.items).toEqual(['v3']);
  });

  it('dead-letters a poison message after exactly 6 deliveries, then replays it once with a new message id', async () => {
    const { publish, consumer, deadLetters, deadLetterStream, subject, config } = await fixture();
    let healed = false;
    const deliveries = recorder<number>();
    const processed = recorder<string>();
    const handle = await consumer(async (_tx, env, ctx) => {
      deliveries.push(ctx.deliveryCount);
      if (!healed) throw new Error('course store unavailable\nsecond line');
      processed.push(env.eventId);
    });
    const event = envelope();
    const body = JSON.stringify(event);
    await publish(body, event.eventId);
    const [letter] = (
      await deadLetters.until((items) => items.some((d) => d.headers['x-event-id'] === event.eventId), 'the dead letter')
    ).filter((d) => d.headers['x-event-id'] === event.eventId);
    expect(deliveries.items).toEqual([1, 2, 3, 4, 5, 6]);
    expect(letter.subject).toBe(`${deadLetterStream.subjectPrefix}.${subject}`);
    expect(letter.body).toBe(body);
    expect(letter.headers).toMatchObject({
      'x-original-subject': subject,
      'x-error': 'course store unavailable | second line',
      'x-retries': '5',
      'x-deliveries': '6',
      'x-event-id': event.eventId,
      'x-event-type': EVENT,
      traceparent: `00-${'c'.repeat(32)}-${'d'.repeat(16)}-01`,
    });
    expect(letter.headers['x-stack']).toMatch(/^Error: course store unavailable \| second line \| at /);
    expect(letter.headers['x-dead-lettered-at']).toMatch(/Z$/);

    const dry = await replayDeadLetters(bus, deadLetterStream, { eventIds: [event.eventId], dryRun: true });
    expect(dry).toMatchObject({
      matched: 1,
      replayed: 0,
      letters: [{ eventId: event.eventId, retries: 5, originalSubject: subject }],
    });
    expect(await deadLetterDepth(bus, deadLetterStream)).toBeGreaterThan(0);

    healed = true;
    const replay = await replayDeadLetters(bus, deadLetterStream, { eventIds: [event.eventId] });
    expect(replay).toMatchObject({ matched: 1, replayed: 1 });
    await processed.until((ids) => ids.includes(event.eventId), 'the replayed event');
    await handle.stop();
    expect(handle.stats()).toMatchObject({ retried: 5, deadLettered: 1, processed: 1 });
    expect(processed.items.filter((id) => id === event.eventId)).toHaveLength(1);
    expect(await listDeadLetters(bus, deadLetterStream, { eventIds: [event.eventId] })).toEqual([]);
    const copies = (await bus.readStream(config.events.contentStream, { filterSubject: subject })).filter(
      (m) => (JSON.parse(text(m.data)) as EventEnvelope).eventId === event.eventId,
    );
    expect(copies).toHaveLength(2);
    expect(copies[1].headers['Nats-Msg-Id']).not.toBe(event.eventId);
    expect(copies[1].headers['x-replayed-from']).toBe('dlq');
  });

  it('dead-letters invalid and unparseable messages on their first delivery', async () => {
    const { publish, consumer, deadLetters, subject, token } = await fixture();
    const calls = recorder<string>();
    const handle = await consumer(async (_tx, env) => {
      calls.push(env.eventId);
    });
    const invalid = envelope(playPackageBuiltPayload(tenantId, { durationMinutes: -5 }));
    await publish(JSON.stringify(invalid), invalid.eventId);
    const garbageId = `garbage-${token}`;
    await publish('{not json', garbageId);
    const wrongType = { ...envelope(), eventType: 'content.play_package.removed' };
    await publish(JSON.stringify(wrongType), wrongType.eventId);
    const letters = await deadLetters.until(
      (items) =>
        items.filter((d) => [invalid.eventId, wrongType.eventId].includes(d.headers['x-event-id']) || d.body === '{not json')
          .length === 3,
      'three dead letters',
    );
    const byId = (id: string) => letters.find((d) => d.headers['x-event-id'] === id)!;
    expect(byId(invalid.eventId).headers).toMatchObject({ 'x-retries': '0', 'x-deliveries': '1' });
    expect(byId(invalid.eventId).headers['x-error']).toBe(
      'schema.invalid_event: Invalid content.play_package.built v1 payload: /durationMinutes must be >= 0',
    );
    expect(byId(wrongType.eventId).headers['x-error']).toMatch(/^schema.invalid_event: Expected content.play_package.built v1/);
    expect(letters.find((d) => d.body === '{not json')!.headers).toMatchObject({
      'x-retries': '0',
      'x-original-subject': subject,
    });
    const valid = envelope();
    await publish(JSON.stringify(valid), valid.eventId);
    await calls.until((ids) => ids.includes(valid.eventId), 'the valid event');
    await handle.stop();
    expect(calls.items).toEqual([valid.eventId]);
    expect(handle.stats()).toMatchObject({ deadLettered: 3, retried: 0, processed: 1 });
  });

  it('keeps a long-running message with working() instead of letting the ack wait redeliver it', async () => {
    const { publish, consumer } = await fixture();
    const ackWaitMs = stack.bus.ackWaitMs;
    let keepAlives = 0;
    const beats = recorder<number>();
    const counting: EventBus = {
      ...bus,
      consume: (spec, handler) =>
        bus.consume(spec, (m) =>
          handler({
            ...m,
            working: () => {
              m.working();
              beats.push(++keepAlives);
            },
          }),
        ),
    };
    const deliveries = recorder<number>();
    const handle = await consumer(
      async (_tx, _env, ctx) => {
        deliveries.push(ctx.deliveryCount);
        // Three keep-alives at half the ack wait each: well past one ack wait in total.
        await beats.until((items) => items.length >= 3, 'three keep-alives');
      },
      { bus: counting, ackWaitMs },
    );
    const event = envelope();
    await publish(JSON.stringify(event), event.eventId);
    await deliveries.until((items) => items.length >= 1, 'the delivery');
    const sentinel = envelope();
    await publish(JSON.stringify(sentinel), sentinel.eventId);
    await deliveries.until((items) => items.length >= 2, 'the sentinel');
    await handle.stop();
    expect(deliveries.items).toEqual([1, 1]);
    expect(handle.stats()).toMatchObject({ processed: 2, duplicates: 0 });
  });

  /** The bus with every delivery's keep-alive lost, as in a NATS restart: the ack wait runs out while a handler still works. */
  function keepAlivesLost(): EventBus {
    return { ...bus, consume: (spec, handler) => bus.consume(spec, (m) => handler({ ...m, working: () => {} })) };
  }

  /** The next MAX_DELIVERIES advisory of `durable`. */
  function nextAdvisory(durable: string): Promise<MaxDeliveriesAdvisory> {
    return new Promise((resolve) => {
      const stop = bus.onMaxDeliveries((advisory) => {
        if (advisory.consumer !== durable) return;
        stop();
        resolve(advisory);
      });
    });
  }

  it('writes no dead letter when the last delivery runs out of ack wait while this process still handles it', async () => {
    const { publish, consumer, deadLetterStream, token } = await fixture();
    const advisory = nextAdvisory(`catalog-svc-play-package-built-${token}`);
    const handled = recorder<string>();
    const handle = await consumer(
      async (_tx, env) => {
        // Still working when JetStream gives the delivery up; it commits after the advisory.
        await advisory;
        handled.push(env.eventId);
      },
      // No grace: only the wait for this process's own attempt keeps the letter from being written.
      { bus: keepAlivesLost(), maxDeliver: 1, ackWaitMs: 500, safetyNetGraceMs: 0 },
    );
    const event = envelope();
    await publish(JSON.stringify(event), event.eventId);
    // The safety net decided, or (as before it waited) wrote a letter beside the commit.
    await eventually(
      async () => handle.stats().exhaustedDecided === 1 || (await deadLetterDepth(bus, deadLetterStream)) > 0,
      "the safety net's decision",
    );
    await handle.stop();
    expect(await deadLetterDepth(bus, deadLetterStream)).toBe(0);
    expect(handled.items).toEqual([event.eventId]);
    expect(handle.stats()).toMatchObject({ processed: 1, deadLettered: 0, exhaustedHandledLate: 1 });
  });

  it("gives another replica's attempt its grace before writing a dead letter", async () => {
    const { publish, consumer, deadLetterStream, token } = await fixture();
    const advisory = nextAdvisory(`catalog-svc-play-package-built-${token}`);
    const handled = recorder<string>();
    const handler: EventHandler = async (_tx, env) => {
      await advisory;
      handled.push(env.eventId);
    };
    // Two replicas of one durable: whichever does not hold the message has only the grace to go by.
    const options = { bus: keepAlivesLost(), maxDeliver: 1, ackWaitMs: 500, safetyNetGraceMs: 5_000 };
    const replicas = [await consumer(handler, options), await consumer(handler, options)];
    const event = envelope();
    await publish(JSON.stringify(event), event.eventId);
    const decided = () => replicas.reduce((sum, r) => sum + r.stats().exhaustedDecided, 0);
    await eventually(
      async () => decided() === 2 || (await deadLetterDepth(bus, deadLetterStream)) > 0,
      'both safety nets decided',
      { timeoutMs: 60_000 },
    );
    for (const replica of replicas) await replica.stop();
    expect(await deadLetterDepth(bus, deadLetterStream)).toBe(0);
    expect(handled.items).toEqual([event.eventId]);
    expect(replicas.map((r) => r.stats().exhaustedHandledLate)).toEqual([1, 1]);
  });

  it('keeps deciding through a database and a bus outage instead of leaving the message without a letter', async () => {
    const { publish, consumer, deadLetters, deadLetterStream, token } = await fixture();
    let advised = false;
    const advisory = nextAdvisory(`catalog-svc-play-package-built-${token}`).then(() => (advised = true));
    let refusals = 0;
    const flaky: EventBus = {
      ...bus,
      // The runner's own letter and the safety net's first try are refused.
      publish: (subject, data, options) =>
        subject.startsWith(`${deadLetterStream.subjectPrefix}.`) && refusals++ < 2
          ? Promise.reject(new Error('nats: timeout'))
          : bus.publish(subject, data, options),
    };
    let inboxFailures = 0;
    // The safety net's first look at the inbox finds Postgres down.
    const inbox = db.prisma.inboxEvent;
    const unreachableOnce = new Proxy(db.prisma, {
      get(target, property) {
        if (property === 'inboxEvent' && advised)
          return {
            count: (args: Parameters<typeof inbox.count>[0]) =>
              inboxFailures++ === 0
                ? Promise.reject(Object.assign(new Error("Can't reach database server"), { code: 'P1001' }))
                : inbox.count(args),
          };
        const value: unknown = Reflect.get(target, property);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const handle = await consumer(
      async () => {
        throw new Error('still failing');
      },
      { bus: flaky, db: unreachableOnce, maxDeliver: 2, safetyNetGraceMs: 50 },
    );
    const event = envelope();
    await publish(JSON.stringify(event), event.eventId);
    await advisory;
    const letters = await deadLetters.until(
      (items) => items.some((d) => d.headers['x-event-id'] === event.eventId),
      'the safety-net dead letter',
    );
    await handle.stop();
    expect(inboxFailures).toBeGreaterThanOrEqual(2);
    expect(refusals).toBe(3);
    expect(handle.stats()).toMatchObject({ exhaustedDecided: 1, exhaustedHandledLate: 0 });
    expect(letters.filter((d) => d.headers['x-event-id'] === event.eventId)).toHaveLength(1);
  });

  it('dead-letters through the MAX_DELIVERIES safety net when the last attempt could not', async () => {
    const { publish, consumer, deadLetters, deadLetterStream } = await fixture();
    let refusals = 0;
    // The runner's own dead letter on the last delivery fails, as if the process died there;
    // the safety net's later attempt goes through.
    const flaky: EventBus = {
      ...bus,
      publish: (subject, data, options) =>
        subject.startsWith(`${deadLetterStream.subjectPrefix}.`) && refusals++ === 0
          ? Promise.reject(new Error('nats: timeout'))
          : bus.publish(subject, data, options),
    };
    const deliveries = recorder<number>();
    const handle = await consumer(
      async (_tx, _env, ctx) => {
        deliveries.push(ctx.deliveryCount);
        throw new Error('still failing');
      },
      { bus: flaky, maxDeliver: 2 },
    );
    const event = envelope();
    await publish(JSON.stringify(event), event.eventId);
    const letters = await deadLetters.until(
      (items) => items.some((d) => d.headers['x-event-id'] === event.eventId),
      'the safety-net dead letter',
    );
    await handle.stop();
    expect(deliveries.items).toEqual([1, 2]);
    expect(refusals).toBe(2);
    const letter = letters.find((d) => d.headers['x-event-id'] === event.eventId)!;
    expect(letter.headers).toMatchObject({ 'x-retries': '1', 'x-error': 'max deliveries (2) reached without a handler verdict' });
  });
});
