import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../platform/clock.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { createInProcessBus } from '../../../events/bus/in-process-bus.js';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { readSettledThrough } from '../../../events/ledger/consumer-watermark.js';
import { createOrderGuard } from '../../../events/ordering/order-guard.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';

const STREAM = 'ORDER_GUARD';
const SUBJECT = 'order-guard.built';
const DURABLE = 'order-guard-test';

/**
 * The guard's floor is the consumer's own (inbox rows), not JetStream's ack floor. nats-server 2.9
 * moves the ack floor past messages still in a worker's hands when, after a restart that lost the
 * consumer's last state writes, a worker acks a message it held from before (processAckMsg takes
 * the ack's delivery sequence at its word when the message is not pending). The bus here reports
 * such a floor.
 */
describe.each(databaseKinds())('producer-order guard on %s', (kind) => {
  let db: TestDatabase;
  let bus: EventBus;
  /** What the (lying) broker says the consumer's ack floor is. */
  let ackFloor = 0;
  let lyingBus: EventBus;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    bus = createInProcessBus();
    await bus.ensureStream({ name: STREAM, subjects: [SUBJECT], maxAgeMs: 60 * 60 * 1000, storage: 'memory' });
    lyingBus = { ...bus, consumerAckFloor: async () => ackFloor };
  });
  afterAll(async () => {
    await bus?.close();
    await db?.close();
  });

  const publish = async (eventId: string, key: string) =>
    (await bus.publish(SUBJECT, Buffer.from(JSON.stringify({ eventId, key })))).seq;
  const guardOf = () =>
    createOrderGuard({
      bus: lyingBus,
      db: db.prisma,
      stream: STREAM,
      durable: DURABLE,
      filterSubject: SUBJECT,
      clock: systemClock,
      logger: silentLogger,
      holdLimitMs: 60 * 60 * 1000,
      keyOf: (data) => JSON.parse(Buffer.from(data).toString('utf8')) as { key: string; eventId: string },
    });
  /** Another worker committed the message: its inbox row. */
  const appliedElsewhere = (eventId: string) =>
    db.prisma.$executeRaw`INSERT INTO "InboxEvent" (consumer, "eventId", subject) VALUES (${DURABLE}, ${eventId}, ${SUBJECT})`;

  it('holds a later message of a course behind an earlier one in another worker’s hands, though the ack floor has passed it', async () => {
    const first = await publish('evt-k1', 'K');
    const second = await publish('evt-k2', 'K');
    const other = await publish('evt-l1', 'L');
    const guard = guardOf();

    // Before the fault the ack floor is right; the guard starts from it and keeps its own floor.
    guard.seen(other, 'L', 'evt-l1');
    expect(await guard.check([{ seq: other, key: 'L' }])).toEqual(new Map());

    // The broker's floor jumps past `first`, which another worker still has in hand.
    ackFloor = second;
    guard.seen(second, 'K', 'evt-k2');
    expect(await guard.check([{ seq: second, key: 'K' }])).toEqual(new Map([[second, first]]));
    expect(await readSettledThrough(db.prisma, DURABLE)).toBe(0);

    // The other worker commits `first`: `second` may go, and the floor rises to what is settled.
    await appliedElsewhere('evt-k1');
    expect(await guard.check([{ seq: second, key: 'K' }])).toEqual(new Map());
    expect(await readSettledThrough(db.prisma, DURABLE)).toBe(first);
  });

  it('starts a restarted worker from the stored floor, not from an ack floor that ran ahead', async () => {
    // Still unsettled from the test above: evt-k2 (nobody applied it) and evt-l1.
    const later = await publish('evt-k3', 'K');
    ackFloor = later;
    const restarted = guardOf();
    restarted.seen(later, 'K', 'evt-k3');
    const held = await restarted.check([{ seq: later, key: 'K' }]);
    expect([...held.keys()]).toEqual([later]);
    expect(held.get(later)).toBeLessThan(later);
    expect(await readSettledThrough(db.prisma, DURABLE)).toBeLessThan(later);
  });
});
