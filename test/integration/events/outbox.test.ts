import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors/errors.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { loadSystemConfig } from '../../../processes/config.js';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { createInProcessBus } from '../../../events/bus/in-process-bus.js';
import { manualClock } from '../../../platform/clock.js';
import { createEventProducer, type EventProducer } from '../../../events/publish/outbox.js';
import { purgeArchive, replayFromArchive } from '../../../events/archive/outbox-archive.js';
import { COMMITTED_AT_HEADER, committedAtOf } from '../../../events/publish/committed-at.logic.js';
import { createOutboxRelay } from '../../../events/publish/outbox-relay.js';
import { readyRowsSql } from '../../../events/publish/relay-batch.js';
import { createPrismaClient } from '../../../platform/db/database.js';
import { loadSchemaRegistry } from '../../../events/schemas/registry.js';
import { ensureStreams } from '../../../events/streams.js';
import { createTestDatabase, databaseKinds, serverUrl, type TestDatabase } from '../../support/database.js';
import { courseEmit, coursePublishedPayload, courseRegisteredPayload, testSource } from '../../unit/events/fixtures.js';
import { deferred, recorder, text } from './helpers.js';

const config = loadSystemConfig({});
const registry = loadSchemaRegistry();
const tenantId = newId('tenant');

/** An in-process bus whose publish can be made to fail or to hang, like a broker that is down. */
function controllableBus() {
  const inner = createInProcessBus();
  const state = {
    failFrom: Infinity,
    published: 0,
    /** While set, publish waits on it, after calling `entered`. */
    gate: undefined as Promise<void> | undefined,
    /** Message ids whose publish fails, whatever failFrom says. */
    failIds: new Set<string>(),
    entered: () => {},
  };
  const bus: EventBus = {
    ...inner,
    async publish(subject, data, options) {
      if (state.gate) {
        state.entered();
        await state.gate;
      }
      if (state.published >= state.failFrom || state.failIds.has(options?.msgId ?? '')) {
        throw new Error('nats: connection refused\n  at connect');
      }
      state.published += 1;
      return inner.publish(subject, data, options);
    },
  };
  return { bus, state };
}

async function publishedEnvelopes(bus: EventBus) {
  return (await bus.readStream(config.events.catalogStream)).map((m) => ({
    msgId: m.headers['Nats-Msg-Id'],
    envelope: JSON.parse(text(m.data)) as { eventId: string; eventType: string; partitionKey: string },
    headers: m.headers,
  }));
}

describe.each(databaseKinds())('outbox and relay on %s', (kind) => {
  let db: TestDatabase;
  let producer: EventProducer;
  const clock = manualClock('2026-11-21T10:00:00.000Z');

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    producer = createEventProducer({ registry, clock, source: testSource, dualPublishDays: 30 });
  });
  afterAll(async () => db?.close());
  beforeEach(async () => {
    await db.prisma.outboxEvent.deleteMany({});
    // Each test's relays start without a leader: an earlier test's relay never gave its lease back.
    await db.prisma.outboxRelayLease.deleteMany({});
  });

  async function openBus() {
    const controlled = controllableBus();
    await ensureStreams(controlled.bus, config, { storage: 'memory' });
    return controlled;
  }

  const emitPublished = (tx: Parameters<EventProducer['emit']>[0], courseId = newId('course')) =>
    producer.emit(tx, {
      ...courseEmit(tenantId, courseId),
      eventType: 'catalog.course_version.published',
      payload: coursePublishedPayload({ courseId }),
      traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`,
    });

  it('validates payloads before anything is inserted', async () => {
    const courseId = newId('course');
    const attempt = db.prisma.$transaction((tx) =>
      producer.emit(tx, {
        ...courseEmit(tenantId, courseId),
        eventType: 'catalog.course_version.withdrawn',
        payload: { courseVersionId: newId('courseVersion'), courseId },
      }),
    );
    await expect(attempt).rejects.toMatchObject({ code: 'schema.invalid_event', details: { path: '/reason' } });
    await expect(attempt).rejects.toBeInstanceOf(AppError);
    expect(await db.prisma.outboxEvent.count()).toBe(0);
  });

  it('writes subject, partition key, envelope and headers in the caller transaction', async () => {
    const courseId = newId('course');
    const [envelope] = await db.prisma.$transaction((tx) => emitPublished(tx, courseId));
    const row = await db.prisma.outboxEvent.findUniqueOrThrow({ where: { eventId: envelope.eventId } });
    expect(row).toMatchObject({
      eventType: 'catalog.course_version.published',
      eventVersion: 1,
      subject: 'catalog.course_version.published.v1',
      tenantId,
      partitionKey: courseId,
      publishedAt: null,
      attempts: 0,
    });
    expect(row.headers).toEqual({ 'Content-Type': 'application/json', traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` });
    expect(row.envelope).toMatchObject({
      eventId: envelope.eventId,
      schemaUri: registry.schemaUri('catalog.course_version.published', 1),
    });
    expect(row.txid).toBeGreaterThan(0n);
  });

  it('publishes in id order with Nats-Msg-Id = eventId and marks rows published once', async () => {
    const { bus } = await openBus();
    const written = [];
    for (let i = 0; i < 3; i++) written.push(...(await db.prisma.$transaction((tx) => emitPublished(tx))));
    const relay = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, clock });
    expect(await relay.runOnce()).toEqual({ locked: true, published: 3 });
    expect(await relay.runOnce()).toEqual({ locked: true, published: 0 });
    const sent = await publishedEnvelopes(bus);
    expect(sent.map((s) => s.envelope.eventId)).toEqual(written.map((e) => e.eventId));
    expect(sent.map((s) => s.msgId)).toEqual(written.map((e) => e.eventId));
    expect(sent[0].headers).toMatchObject({
      traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`,
      'Content-Type': 'application/json',
    });
    const rows = await db.prisma.outboxEvent.findMany({ orderBy: { id: 'asc' } });
    expect(rows.every((r) => r.publishedAt?.toISOString() === clock.now().toISOString())).toBe(true);
    await bus.close();
  });

  it('stamps each event with its commit time when the database tracks commit times, with nothing when it does not', async () => {
    // The embedded database (npm test) tracks them, the machine's Postgres (test:services) does not: CI runs both.
    const [{ track }] = await db.prisma.$queryRaw<
      Array<{ track: string }>
    >`SELECT current_setting('track_commit_timestamp') AS track`;
    const { bus } = await openBus();
    const before = Date.now();
    const [envelope] = await db.prisma.$transaction((tx) => emitPublished(tx));
    const after = Date.now();
    const relay = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, clock });
    expect(await relay.runOnce()).toEqual({ locked: true, published: 1 });
    const [sent] = await publishedEnvelopes(bus);
    expect(sent.envelope.eventId).toBe(envelope.eventId);
    if (track === 'on') {
      // Rounded to the millisecond; the server's clock is this machine's.
      expect(committedAtOf(sent.headers)).toBeGreaterThanOrEqual(before - 1);
      expect(committedAtOf(sent.headers)).toBeLessThanOrEqual(after + 1);
    } else {
      expect(track).toBe('off');
      expect(sent.headers).not.toHaveProperty(COMMITTED_AT_HEADER);
    }
    await bus.close();
  });

  it('reads the rows that may go with one prepared statement and one cached plan per connection', async () => {
    // One connection, so the session's prepared statements are the relay's. Unnamed, the read was
    // parsed and planned again on every round (bench/results/2026-11-28T2310-relay-prepared.md).
    const single = createPrismaClient(db.url, 1);
    try {
      const { bus } = await openBus();
      const relay = createOutboxRelay({ db: single, bus, logger: silentLogger, clock });
      for (let round = 0; round < 3; round++) {
        await single.$transaction((tx) => emitPublished(tx));
        expect(await relay.runOnce()).toEqual({ locked: true, published: 1 });
      }
      const statements = await single.$queryRaw<Array<{ name: string; generic: number; custom: number }>>`
        SELECT name, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements`;
      const ready = statements.find((statement) => statement.name.startsWith('outbox_ready_'));
      expect(ready).toMatchObject({ generic: 3, custom: 0 });
      expect(statements.some((statement) => statement.name.startsWith('outbox_relay_lock_'))).toBe(true);
      await bus.close();
    } finally {
      await single.$disconnect();
    }
  });

  it('refuses a batch size that is not a positive integer before it reaches the SQL', () => {
    expect(readyRowsSql(100).values).toEqual([]);
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => readyRowsSql(bad)).toThrow(/positive integer/);
  });

  it('loses nothing while the broker is down and stops the batch at the first failure', async () => {
    const { bus, state } = await openBus();
    const written = [];
    for (let i = 0; i < 3; i++) written.push(...(await db.prisma.$transaction((tx) => emitPublished(tx))));
    const relay = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, clock });
    state.failFrom = 1;
    const run = await relay.runOnce();
    expect(run).toMatchObject({ locked: true, published: 1, failed: { eventId: written[1].eventId } });
    const rows = await db.prisma.outboxEvent.findMany({ orderBy: { id: 'asc' } });
    expect(rows.map((r) => [r.publishedAt !== null, r.attempts])).toEqual([
      [true, 0],
      [false, 1],
      [false, 0],
    ]);
    expect(rows[1].lastError).toBe('nats: connection refused at connect');
    state.failFrom = 0;
    expect((await relay.runOnce()).failed).toBeDefined();
    expect((await db.prisma.outboxEvent.findUniqueOrThrow({ where: { eventId: written[1].eventId } })).attempts).toBe(2);
    state.failFrom = Infinity;
    expect(await relay.runOnce()).toEqual({ locked: true, published: 2 });
    expect((await publishedEnvelopes(bus)).map((s) => s.envelope.eventId)).toEqual(written.map((e) => e.eventId));
    await bus.close();
  });

  it('holds back only the partition of a failed row; other partitions of the batch go out', async () => {
    const { bus, state } = await openBus();
    const [courseA, courseB] = [newId('course'), newId('course')];
    const [a1] = await db.prisma.$transaction((tx) => emitPublished(tx, courseA));
    const [b1] = await db.prisma.$transaction((tx) => emitPublished(tx, courseB));
    const [a2] = await db.prisma.$transaction((tx) => emitPublished(tx, courseA));
    const [b2] = await db.prisma.$transaction((tx) => emitPublished(tx, courseB));
    const relay = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, clock });
    state.failIds.add(a1.eventId);
    expect(await relay.runOnce()).toMatchObject({ locked: true, published: 2, failed: { eventId: a1.eventId } });
    // a2 was never tried: publishing it before a1 would reorder course A.
    expect((await publishedEnvelopes(bus)).map((s) => s.envelope.eventId)).toEqual([b1.eventId, b2.eventId]);
    const rows = await db.prisma.outboxEvent.findMany({ orderBy: { id: 'asc' } });
    expect(rows.map((r) => [r.eventId, r.publishedAt !== null, r.attempts])).toEqual([
      [a1.eventId, false, 1],
      [b1.eventId, true, 0],
      [a2.eventId, false, 0],
      [b2.eventId, true, 0],
    ]);
    state.failIds.clear();
    expect(await relay.runOnce()).toEqual({ locked: true, published: 2 });
    const sent = (await publishedEnvelopes(bus)).map((s) => s.envelope.eventId);
    expect(sent.filter((id) => id === a1.eventId || id === a2.eventId)).toEqual([a1.eventId, a2.eventId]);
    await bus.close();
  });

  it('publishes once after a crash between commit and publish, and after a crash between publish and mark', async () => {
    const { bus } = await openBus();
    const committed = [];
    for (let i = 0; i < 2; i++) committed.push(...(await db.prisma.$transaction((tx) => emitPublished(tx))));
    // The previous relay published the first row, then died before its transaction committed.
    const row = await db.prisma.outboxEvent.findUniqueOrThrow({ where: { eventId: committed[0].eventId } });
    await bus.publish(row.subject, Buffer.from(JSON.stringify(row.envelope)), { msgId: row.eventId });
    // A new process: a new relay instance over the same rows.
    const restarted = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, clock });
    expect(await restarted.runOnce()).toEqual({ locked: true, published: 2 });
    const sent = await publishedEnvelopes(bus);
    expect(sent.map((s) => s.envelope.eventId)).toEqual(committed.map((e) => e.eventId));
    expect(await db.prisma.outboxEvent.count({ where: { publishedAt: null } })).toBe(0);
    await bus.close();
  });

  it('does not take rows whose transaction is not settled, and takes them in id order once it is', async () => {
    const { bus } = await openBus();
    const relay = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, clock });
    const courseId = newId('course');
    const a = (await db.prisma.$transaction((tx) => emitPublished(tx, courseId)))[0];
    const b = (await db.prisma.$transaction((tx) => emitPublished(tx, courseId)))[0];
    // Rows stamped with transaction ids no snapshot has passed yet look like rows of transactions
    // still running, without holding two transactions open.
    await db.prisma.$executeRawUnsafe(
      `UPDATE "OutboxEvent" SET txid = (pg_current_xact_id()::text::bigint + 1000 + id) WHERE "eventId" IN ($1, $2)`,
      a.eventId,
      b.eventId,
    );
    expect(await relay.runOnce()).toEqual({ locked: true, published: 0 });
    await db.prisma.$executeRawUnsafe(`UPDATE "OutboxEvent" SET txid = 1 WHERE "eventId" IN ($1, $2)`, a.eventId, b.eventId);
    expect(await relay.runOnce()).toEqual({ locked: true, published: 2 });
    expect((await publishedEnvelopes(bus)).map((s) => s.envelope.eventId)).toEqual([a.eventId, b.eventId]);
    await bus.close();
  });

  {
    it('never publishes a later commit of a partition before an earlier-numbered row still in flight', async () => {
      const { bus } = await openBus();
      const relay = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, clock });
      const courseId = newId('course');
      const insertedA = deferred<string>();
      const commitA = deferred();
      // A takes the lower id and commits last.
      const txA = db.prisma.$transaction(async (tx) => {
        const [a] = await emitPublished(tx, courseId);
        insertedA.resolve(a.eventId);
        await commitA.promise;
      });
      const aId = await insertedA.promise;
      const [b] = await db.prisma.$transaction((tx) => emitPublished(tx, courseId));
      const ids = await db.prisma.outboxEvent.findMany({ select: { eventId: true, id: true }, orderBy: { id: 'asc' } });
      expect(ids.map((r) => r.eventId)).toEqual([b.eventId]);
      expect(await relay.runOnce()).toEqual({ locked: true, published: 0 });
      commitA.resolve();
      await txA;
      expect(await relay.runOnce()).toEqual({ locked: true, published: 2 });
      const sent = await publishedEnvelopes(bus);
      expect(sent.map((s) => s.envelope.eventId)).toEqual([aId, b.eventId]);
      await bus.close();
    });

    it('is not held back by a transaction running in another database of the same server', async () => {
      const { bus } = await openBus();
      const relay = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, clock });
      const elsewhere = new pg.Client({ connectionString: serverUrl(kind) });
      await elsewhere.connect();
      try {
        await elsewhere.query('BEGIN');
        await elsewhere.query('SELECT pg_current_xact_id()');
        // Committed after the foreign transaction took its id: a plain xmin rule would wait for it.
        const [event] = await db.prisma.$transaction((tx) => emitPublished(tx));
        expect(await relay.runOnce()).toEqual({ locked: true, published: 1 });
        expect((await publishedEnvelopes(bus)).map((s) => s.envelope.eventId)).toEqual([event.eventId]);
      } finally {
        await elsewhere.query('ROLLBACK');
        await elsewhere.end();
        await bus.close();
      }
    });

    it('lets only one relay replica publish at a time', async () => {
      const { bus, state } = await openBus();
      await db.prisma.$transaction((tx) => emitPublished(tx));
      const gate = deferred();
      const entered = deferred();
      state.gate = gate.promise;
      state.entered = () => entered.resolve();
      const first = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, clock });
      const second = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, clock });
      const firstRun = first.runOnce();
      // The first relay publishes only after taking the lock, so it holds it from here on.
      await entered.promise;
      expect(await second.runOnce()).toEqual({ locked: false, published: 0 });
      state.gate = undefined;
      gate.resolve();
      expect(await firstRun).toEqual({ locked: true, published: 1 });
      await bus.close();
    });
  }

  it('wakes on notify, and stop() flushes what was committed before it', async () => {
    const { bus } = await openBus();
    const got = recorder<string>();
    const sub = await bus.consume(
      { stream: config.events.catalogStream, durable: 'relay-test', filterSubject: 'catalog.>', ackWaitMs: 5_000, maxDeliver: 6 },
      async (m) => {
        got.push((JSON.parse(text(m.data)) as { eventId: string }).eventId);
        m.ack();
      },
    );
    const relay = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, clock, pollIntervalMs: 600_000 });
    relay.start();
    const [first] = await db.prisma.$transaction((tx) => emitPublished(tx));
    relay.notify();
    await got.until((ids) => ids.includes(first.eventId), 'the notified event');
    const [second] = await db.prisma.$transaction((tx) => emitPublished(tx));
    await relay.stop();
    expect(relay.status().running).toBe(false);
    expect(await db.prisma.outboxEvent.count({ where: { publishedAt: null } })).toBe(0);
    await got.until((ids) => ids.includes(second.eventId), 'the flushed event');
    await sub.stop();
    await bus.close();
  });

  it('keeps published rows as the archive, purges them after the retention, and replays them a page at a time', async () => {
    const { bus } = await openBus();
    const relay = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, clock });
    const old = (await db.prisma.$transaction((tx) => emitPublished(tx)))[0];
    const recent = (await db.prisma.$transaction((tx) => emitPublished(tx)))[0];
    const registered = (
      await db.prisma.$transaction((tx) =>
        producer.emit(tx, {
          ...courseEmit(tenantId, newId('course')),
          eventType: 'catalog.course.registered',
          payload: courseRegisteredPayload(),
        }),
      )
    )[0];
    const pending = (await db.prisma.$transaction((tx) => emitPublished(tx)))[0];
    await relay.runOnce();
    await db.prisma.outboxEvent.update({
      where: { eventId: pending.eventId },
      data: { publishedAt: null, createdAt: new Date('2020-01-01') },
    });
    await db.prisma.outboxEvent.update({
      where: { eventId: old.eventId },
      data: { publishedAt: new Date('2025-09-20T00:00:00Z') },
    });
    await db.prisma.outboxEvent.update({
      where: { eventId: recent.eventId },
      data: { publishedAt: new Date('2025-11-22T00:00:00Z') },
    });

    // The hot copies are still on the stream, within its duplicate window: the relay's message-id
    // rule (Nats-Msg-Id = eventId) makes the replay of an event already there a duplicate.
    const range = { since: new Date('2020-01-01T00:00:00Z'), until: new Date('2100-01-01T00:00:00Z') };
    const filter = { ...range, eventType: 'catalog.course_version.published' };
    expect(await replayFromArchive(db.prisma, bus, filter)).toMatchObject({ matched: 2, published: 0, duplicates: 2 });

    // Once they have aged out of the hot stream, the replay sends them again, in order, one page at a time.
    const { bus: fresh } = await openBus();
    expect(await replayFromArchive(db.prisma, fresh, filter, { dryRun: true, pageSize: 1 })).toEqual({
      matched: 2,
      published: 0,
      duplicates: 0,
      firstEventId: old.eventId,
      lastEventId: recent.eventId,
    });
    expect(await publishedEnvelopes(fresh)).toEqual([]);
    expect(await replayFromArchive(db.prisma, fresh, filter, { pageSize: 1 })).toMatchObject({ matched: 2, published: 2 });
    const replayed = await publishedEnvelopes(fresh);
    expect(replayed.map((s) => s.envelope.eventId)).toEqual([old.eventId, recent.eventId]);
    expect(replayed.map((s) => s.msgId)).toEqual([old.eventId, recent.eventId]);
    expect(replayed[0].headers['x-replayed-from']).toBe('archive');
    expect(await replayFromArchive(db.prisma, fresh, { ...range, tenantId: newId('tenant') })).toMatchObject({ matched: 0 });
    expect(
      await replayFromArchive(db.prisma, fresh, { since: range.since, until: new Date(clock.now().getTime() - 60_000) }),
    ).toMatchObject({ matched: 0 });

    expect(await purgeArchive(db.prisma, clock.now(), 13)).toBe(1);
    const left = await db.prisma.outboxEvent.findMany({ select: { eventId: true } });
    expect(left.map((r) => r.eventId).sort()).toEqual([recent.eventId, registered.eventId, pending.eventId].sort());
    await bus.close();
    await fresh.close();
  });
});
