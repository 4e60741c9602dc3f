import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { loadSystemConfig } from '../../../processes/config.js';
import { createInProcessBus } from '../../../events/bus/in-process-bus.js';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { createEventProducer } from '../../../events/publish/outbox.js';
import {
  listenForOutboxCommits,
  OUTBOX_COMMITTED_CHANNEL,
  type OutboxCommitFeed,
} from '../../../events/publish/outbox-wakeup.js';
import { loadSchemaRegistry } from '../../../events/schemas/registry.js';
import { startEventWorker, type EventWorker } from '../../../events/worker.js';
import { eventually } from '../../support/eventually.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { courseEmit, coursePublishedPayload, testSource } from '../../unit/events/fixtures.js';
import { recorder, text } from './helpers.js';

const config = loadSystemConfig({});
const registry = loadSchemaRegistry();
const tenantId = newId('tenant');
const LISTENER_NAME = `outbox-wakeup-test-${process.pid}`;

/**
 * Rows other processes commit reach the relay leader by NOTIFY at their commit (the migration's
 * trigger, LISTENed to by events/publish/outbox-wakeup.ts), not at the next poll. The relay here
 * polls every 10 minutes, so a row published within the test's bounded wait was woken for.
 */
describe('outbox commits wake the relay leader (Postgres LISTEN/NOTIFY)', () => {
  let db: TestDatabase;
  const producer = createEventProducer({ registry, clock: manualClock(), source: testSource, dualPublishDays: 30 });

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => db?.close());

  /** One committed transaction writing one outbox row; its event id. */
  async function commitRow(): Promise<string> {
    const courseId = newId('course');
    const [event] = await db.prisma.$transaction((tx) =>
      producer.emit(tx, {
        ...courseEmit(tenantId, courseId),
        eventType: 'catalog.course_version.published',
        payload: coursePublishedPayload({ courseId }),
      }),
    );
    return event.eventId;
  }

  describe('the trigger', () => {
    let listener: pg.Client;
    afterEach(async () => listener?.end());

    it('notifies once per committing transaction, and never for one rolled back', async () => {
      listener = new pg.Client({ connectionString: db.url });
      await listener.connect();
      const notes = recorder<string>();
      listener.on('notification', (message) => notes.push(message.channel));
      await listener.query(`LISTEN ${OUTBOX_COMMITTED_CHANNEL}`);

      const rolledBack = db.prisma.$transaction(async (tx) => {
        await producer.emit(tx, {
          ...courseEmit(tenantId, newId('course')),
          eventType: 'catalog.course_version.published',
          payload: coursePublishedPayload({ courseId: newId('course') }),
        });
        throw new Error('rolled back on purpose');
      });
      await expect(rolledBack).rejects.toThrow('rolled back on purpose');
      // Two rows in one transaction, one notification.
      await db.prisma.$transaction(async (tx) => {
        for (let i = 0; i < 2; i++) {
          const courseId = newId('course');
          await producer.emit(tx, {
            ...courseEmit(tenantId, courseId),
            eventType: 'catalog.course_version.published',
            payload: coursePublishedPayload({ courseId }),
          });
        }
      });
      await notes.until((items) => items.length >= 1, 'the committed transaction to notify');
      // Notifications arrive in commit order: the rolled-back one would have come first.
      await commitRow();
      await notes.until((items) => items.length >= 2, 'the next commit to notify');
      expect(notes.items).toEqual([OUTBOX_COMMITTED_CHANNEL, OUTBOX_COMMITTED_CHANNEL]);
    });
  });

  describe('the event worker', () => {
    let bus: EventBus;
    let worker: EventWorker | undefined;
    let feed: OutboxCommitFeed;

    beforeAll(async () => {
      bus = createInProcessBus();
    });
    afterEach(async () => {
      await worker?.stop();
      worker = undefined;
    });

    async function startWorker(): Promise<EventWorker> {
      feed = listenForOutboxCommits({
        databaseUrl: db.url,
        logger: silentLogger,
        applicationName: LISTENER_NAME,
        retryBaseMs: 50,
        retryMaxMs: 200,
      });
      const started = await startEventWorker({
        bus,
        db: db.prisma,
        logger: silentLogger,
        config,
        consumers: [],
        streams: { storage: 'memory' },
        relay: { pollIntervalMs: 600_000 },
        outboxCommits: feed,
      });
      await eventually(
        () => started.relay.status().leader && started.health().outboxListen === 'listening',
        'the relay to lead and the feed to listen',
      );
      return started;
    }

    async function publishedIds() {
      const ids = recorder<string>();
      const stop = await bus.follow(['catalog.>'], {
        onMessage: (_subject, data) => ids.push((JSON.parse(text(data)) as { eventId: string }).eventId),
        onGap: () => undefined,
      });
      return { ids, stop };
    }

    it('publishes a row another connection committed without waiting for the poll', async () => {
      worker = await startWorker();
      const seen = await publishedIds();
      try {
        const eventId = await commitRow();
        await seen.ids.until((items) => items.includes(eventId), `event ${eventId} published`, 10_000);
      } finally {
        await seen.stop();
      }
    });

    it('listens again after its connection is cut, and wakes the relay for what was committed meanwhile', async () => {
      worker = await startWorker();
      const seen = await publishedIds();
      const admin = new pg.Client({ connectionString: db.url });
      await admin.connect();
      try {
        // With a timeout, pg_terminate_backend returns once the backend is gone.
        const { rows } = await admin.query<{ ended: boolean }>(
          'SELECT pg_terminate_backend(pid, 5000) AS ended FROM pg_stat_activity WHERE application_name = $1',
          [LISTENER_NAME],
        );
        expect(rows).toEqual([{ ended: true }]);
        const duringOutage = await commitRow();
        await seen.ids.until((items) => items.includes(duringOutage), `event ${duringOutage} published`, 10_000);
        expect(feed.listening()).toBe(true);
        expect(worker.health().outboxListen).toBe('listening');
        const afterwards = await commitRow();
        await seen.ids.until((items) => items.includes(afterwards), `event ${afterwards} published`, 10_000);
      } finally {
        await seen.stop();
        await admin.end();
      }
    });
  });
});
