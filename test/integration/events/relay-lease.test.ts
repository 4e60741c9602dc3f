import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { loadSystemConfig } from '../../../processes/config.js';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { createInProcessBus } from '../../../events/bus/in-process-bus.js';
import { createEventProducer } from '../../../events/publish/outbox.js';
import { createOutboxRelay, type OutboxRelay } from '../../../events/publish/outbox-relay.js';
import { loadSchemaRegistry } from '../../../events/schemas/registry.js';
import { ensureStreams } from '../../../events/streams.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { eventually } from '../../support/eventually.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';
import { courseEmit, coursePublishedPayload, testSource } from '../../unit/events/fixtures.js';
import { deferred, text } from './helpers.js';

const config = loadSystemConfig({});
const registry = loadSchemaRegistry();
const tenantId = newId('tenant');
const LEASE_MS = 1_500;

/**
 * The relay's leadership lease with its fencing token. A relay "paused" here is one whose publish
 * is held at a gate (it passed its lease check just before, as a process frozen mid-send would
 * have) while its monotonic clock is moved past the lease: what it does when it resumes is what
 * a SIGSTOPped holder does after SIGCONT (test/faults/relay-leadership.test.ts does it to a
 * real process).
 */
describe.each(databaseKinds())('outbox relay lease on %s', (kind) => {
  let db: TestDatabase;
  const producer = createEventProducer({ registry, clock: manualClock(), source: testSource, dualPublishDays: 30 });

  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });
  afterAll(async () => db?.close());
  beforeEach(async () => {
    await db.prisma.outboxEvent.deleteMany({});
    await db.prisma.outboxRelayLease.deleteMany({});
  });

  /** Rows of two courses: P gets `perCourse` events, Q one. */
  async function writeRows(perCourse: number) {
    const [p, q] = [newId('course'), newId('course')];
    const ids: { p: string[]; q: string } = { p: [], q: '' };
    for (let i = 0; i < perCourse; i++) {
      const [e] = await db.prisma.$transaction((tx) =>
        producer.emit(tx, {
          ...courseEmit(tenantId, p),
          eventType: 'catalog.course_version.published',
          payload: coursePublishedPayload({ courseId: p }),
        }),
      );
      ids.p.push(e.eventId);
    }
    const [e] = await db.prisma.$transaction((tx) =>
      producer.emit(tx, {
        ...courseEmit(tenantId, q),
        eventType: 'catalog.course_version.published',
        payload: coursePublishedPayload({ courseId: q }),
      }),
    );
    ids.q = e.eventId;
    return ids;
  }

  /** A view of `bus` for one relay: every publish it attempts is recorded, and one can be held at a gate. */
  function relayBus(bus: EventBus) {
    const attempts: string[] = [];
    const gate = { msgId: '', open: deferred(), reached: deferred() };
    const view: EventBus = {
      ...bus,
      async publish(subject, data, options) {
        attempts.push(options?.msgId ?? '');
        if (options?.msgId === gate.msgId) {
          gate.reached.resolve();
          await gate.open.promise;
        }
        return bus.publish(subject, data, options);
      },
    };
    return { view, attempts, gate };
  }

  async function streamIds(bus: EventBus) {
    return (await bus.readStream(config.events.catalogStream)).map(
      (m) => (JSON.parse(text(m.data)) as { eventId: string }).eventId,
    );
  }

  async function openBus() {
    const bus = createInProcessBus();
    await ensureStreams(bus, config, { storage: 'memory' });
    return bus;
  }

  it('a relay paused past its lease publishes nothing more and takes the lease again, with a new token, before it goes on', async () => {
    const bus = await openBus();
    const ids = await writeRows(3);
    let monotonic = 0;
    const a = relayBus(bus);
    const relay = createOutboxRelay({
      db: db.prisma,
      bus: a.view,
      logger: silentLogger,
      leaseMs: LEASE_MS,
      monotonicMs: () => monotonic,
    });
    a.gate.msgId = ids.p[1];
    const run = relay.runOnce();
    await a.gate.reached.promise;
    const token = BigInt(relay.status().leaseToken!);
    // Frozen mid-send; its clock runs on.
    monotonic += LEASE_MS;
    a.gate.open.resolve();
    expect(await run).toMatchObject({ locked: true, leaseLost: true });
    // The publish in flight went out; the next one of its course was never attempted.
    expect(a.attempts).not.toContain(ids.p[2]);
    expect(relay.status().leader).toBe(false);

    expect(await relay.runOnce()).toMatchObject({ locked: true });
    expect(BigInt(relay.status().leaseToken!)).toBe(token + 1n);
    expect(await streamIds(bus)).toEqual(expect.arrayContaining([...ids.p, ids.q]));
    const onStream = await streamIds(bus);
    expect(onStream.filter((id) => ids.p.includes(id))).toEqual(ids.p);
    expect(new Set(onStream).size).toBe(onStream.length);
    expect(await db.prisma.outboxEvent.count({ where: { publishedAt: null } })).toBe(0);
  });

  it('a leader that reaches the database but cannot publish lets the lease go within the progress window; another takes it and publishes', async () => {
    const bus = await openBus();
    const ids = await writeRows(2);
    let monotonic = 0;
    const log = capturedLogger();
    const cutOff: EventBus = {
      ...bus,
      publish: () => Promise.reject(new Error('TIMEOUT: the broker does not answer')),
    };
    const stuck = createOutboxRelay({
      db: db.prisma,
      bus: cutOff,
      logger: log.logger,
      leaseMs: LEASE_MS,
      monotonicMs: () => monotonic,
    });
    expect(await stuck.runOnce()).toMatchObject({ locked: true, published: 0, failed: {} });
    const token = stuck.status().leaseToken!;
    // Within the window it still renews (the database answers): it is only slow so far.
    monotonic = LEASE_MS * 0.6;
    expect(await stuck.runOnce()).toMatchObject({ locked: true, failed: {} });
    expect(stuck.status().leaseToken).toBe(token);
    // Past the window without one publish: it gives the lease up and stands aside.
    monotonic = LEASE_MS * 1.2;
    expect(await stuck.runOnce()).toEqual({ locked: false, published: 0 });
    expect(stuck.status().leader).toBe(false);

    const successor = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, leaseMs: LEASE_MS });
    expect(await successor.runOnce()).toMatchObject({ locked: true, published: ids.p.length + 1 });
    expect(BigInt(successor.status().leaseToken!)).toBe(BigInt(token) + 1n);
    expect(await streamIds(bus)).toEqual(expect.arrayContaining([...ids.p, ids.q]));
    // The stuck relay does not take it straight back while it stands aside.
    expect(await stuck.runOnce()).toEqual({ locked: false, published: 0 });

    // An operator follows leadership by the fencing token in the logs (not "[redacted]").
    const taken = log.lines.find((line) => line.msg === 'outbox relay lease taken');
    expect(taken).toMatchObject({ fencingToken: token });
    expect(log.lines.find((line) => String(line.msg).startsWith('outbox relay lease given up'))).toMatchObject({
      fencingToken: token,
    });
    expect(JSON.stringify(log.lines)).not.toContain('[redacted]');
  });

  it('stop() gives the lease back: another relay leads at once', async () => {
    const bus = await openBus();
    const first = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, leaseMs: 60_000, pollIntervalMs: 600_000 });
    first.start();
    await eventually(() => first.status().leader, 'the first relay to lead');
    await first.stop();
    const second = createOutboxRelay({ db: db.prisma, bus, logger: silentLogger, leaseMs: 60_000 });
    expect(await second.runOnce()).toMatchObject({ locked: true });
    expect(second.status().leader).toBe(true);
  });

  {
    it('a paused holder is replaced within its lease; when it resumes it neither publishes nor marks, and leads again only by taking the lease', async () => {
      const bus = await openBus();
      const ids = await writeRows(3);
      const [clockA, clockB] = [manualClock('2026-11-26T10:00:00Z'), manualClock('2026-11-26T11:00:00Z')];
      let monotonicA = 0;
      const a = relayBus(bus);
      const holder: OutboxRelay = createOutboxRelay({
        db: db.prisma,
        bus: a.view,
        logger: silentLogger,
        clock: clockA,
        leaseMs: LEASE_MS,
        monotonicMs: () => monotonicA,
      });
      const b = relayBus(bus);
      const successor = createOutboxRelay({ db: db.prisma, bus: b.view, logger: silentLogger, clock: clockB, leaseMs: LEASE_MS });

      a.gate.msgId = ids.p[1];
      const frozen = holder.runOnce();
      await a.gate.reached.promise;
      const tokenA = BigInt(holder.status().leaseToken!);
      monotonicA += 10 * LEASE_MS;
      // The successor leads once the holder's lease has expired by the database's clock.
      expect(await successor.runOnce()).toEqual({ locked: false, published: 0 });
      await eventually(async () => (await successor.runOnce()).locked, 'the successor to take the lease', {
        timeoutMs: 10 * LEASE_MS,
      });
      expect(BigInt(successor.status().leaseToken!)).toBe(tokenA + 1n);
      expect(await db.prisma.outboxEvent.count({ where: { publishedAt: null } })).toBe(0);

      // The holder resumes: its publish in flight goes out (a duplicate the stream drops), then it stops.
      const attemptsBefore = a.attempts.length;
      a.gate.open.resolve();
      expect(await frozen).toMatchObject({ locked: true, published: 0, leaseLost: true });
      expect(a.attempts.slice(attemptsBefore)).toEqual([]);
      expect(a.attempts).not.toContain(ids.p[2]);
      // Its marks were fenced: every row carries the successor's time.
      const marks = await db.prisma.outboxEvent.findMany({ select: { publishedAt: true } });
      expect(marks.map((m) => m.publishedAt?.toISOString())).toEqual(marks.map(() => clockB.now().toISOString()));

      // It does not lead again while the successor holds the lease, and publishes nothing.
      const more = await writeRows(1);
      expect(await holder.runOnce()).toEqual({ locked: false, published: 0 });
      expect(a.attempts).not.toContain(more.q);
      expect(await successor.runOnce()).toMatchObject({ locked: true, published: 2 });

      const onStream = await streamIds(bus);
      expect(new Set(onStream).size).toBe(onStream.length);
      expect(onStream.filter((id) => ids.p.includes(id))).toEqual(ids.p);
      expect(onStream).toHaveLength(ids.p.length + 1 + 2);
    });
  }
});
