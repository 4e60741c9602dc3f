import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../../events/bus/jetstream-bus.js';
import { createEventProducer } from '../../../events/publish/outbox.js';
import { loadSchemaRegistry } from '../../../events/schemas/registry.js';
import { ensureStreams, streamSpecs } from '../../../events/streams.js';
import { systemClock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { loadSystemConfig } from '../../../processes/config.js';
import { childEnv } from '../../support/child-env.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../../support/database.js';
import { privateServicesAvailable, startPrivateNats, type PrivateNats } from '../../support/private-services.js';
import { courseEmit, coursePublishedPayload, courseRegisteredPayload, testSource } from '../../unit/events/fixtures.js';
import { text } from './helpers.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const config = loadSystemConfig({});
const producer = createEventProducer({
  registry: loadSchemaRegistry(),
  clock: systemClock,
  source: testSource,
  dualPublishDays: 30,
});

/**
 * `npm run events:replay-archive`, run as an operator runs it, on the run's database, against a
 * nats-server of its own: the command publishes on the production subjects, which other suites'
 * streams on the shared server may hold. Its process is awaited asynchronously.
 */
function replayCli(args: string[], env: Record<string, string | undefined>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'events/archive/replay-archive.cli.ts', ...args], {
      cwd: ROOT,
      env: childEnv(env),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe.runIf(privateServicesAvailable('events:replay-archive', ['nats-server']))('npm run events:replay-archive', () => {
  let nats: PrivateNats;
  let bus: EventBus;

  beforeAll(async () => {
    nats = await startPrivateNats();
    bus = await connectJetStreamBus(nats.url, { logger: silentLogger });
  });
  afterAll(async () => {
    await bus?.close();
    await nats?.destroy();
  });

  it.each([
    [['--until', '2026-02-01T00:00:00Z'], 'archive_replay.argument_missing', /--since <ISO instant> is required/],
    [
      ['--since', '2026-01-01T00:00:00Z', '--until', '2026-02-01T00:00:00Z', '--from', 'x'],
      'archive_replay.argument_unknown',
      /Unknown option '--from'/,
    ],
  ])('refuses %j with exit 2 and %s, before reaching anything', async (args, code, message) => {
    const run = await replayCli(args, { NATS_URL: 'nats://127.0.0.1:1', DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none' });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`^${code.replace('.', '\\.')}: `));
    expect(run.stderr).toMatch(message);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('needs NATS_URL (exit 2), and names an unreachable server (exit 1)', async () => {
    const range = ['--since', '2026-01-01T00:00:00Z', '--until', '2026-02-01T00:00:00Z'];
    const noNats = await replayCli(range, { NATS_URL: undefined });
    expect(noNats.code).toBe(2);
    expect(noNats.stderr).toMatch(/^archive_replay\.nats_required: events:replay-archive needs NATS_URL/);
    const db = await createTestDatabase();
    try {
      const down = await replayCli(range, { NATS_URL: 'nats://127.0.0.1:1', DATABASE_URL: db.url });
      expect(down.code).toBe(1);
      expect(down.stderr).toMatch(/^NATS_URL: cannot reach nats:\/\/127\.0\.0\.1:1/);
    } finally {
      await db.close();
    }
  });

  describe.each(databaseKinds())('on %s', (kind) => {
    let db: TestDatabase;
    const streams = kind === 'postgres' ? 'PG' : 'EMB';
    const streamNames = { CATALOG_STREAM: `CATALOG_${streams}`, CATALOG_DLQ_STREAM: `CATALOG_DLQ_${streams}` };

    beforeAll(async () => {
      db = await createTestDatabase(kind);
    });
    afterAll(async () => db?.close());

    it('replays the range, filtered, in order, with Nats-Msg-Id = eventId; a dry run publishes nothing and a second run only finds duplicates', async () => {
      // Each database kind publishes to a stream of its own (the same subjects): one exists at a time.
      const events = loadSystemConfig(streamNames).events;
      await ensureStreams(bus, { ...config, events: { ...events, createProducerStreams: true } }, { storage: 'memory' });
      try {
        await replaysTheArchive(events);
      } finally {
        for (const spec of streamSpecs(events)) await bus.deleteStream(spec.name);
      }
    });

    async function replaysTheArchive(events: typeof config.events) {
      const [tenant, other] = [newId('tenant'), newId('tenant')];
      const course = newId('course');
      const write = (tenantId: string, eventType: string, payload: object) =>
        db.prisma.$transaction((tx) => producer.emit(tx, { ...courseEmit(tenantId, course), eventType, payload }));
      const inRange: string[] = [];
      for (let i = 0; i < 5; i++)
        inRange.push(
          (await write(tenant, 'catalog.course_version.published', coursePublishedPayload({ courseId: course })))[0].eventId,
        );
      const otherType = (await write(tenant, 'catalog.course.registered', courseRegisteredPayload(course)))[0].eventId;
      const otherTenant = (
        await write(other, 'catalog.course_version.published', coursePublishedPayload({ courseId: course }))
      )[0].eventId;
      const early = (await write(tenant, 'catalog.course_version.published', coursePublishedPayload({ courseId: course })))[0]
        .eventId;
      const unpublished = (
        await write(tenant, 'catalog.course_version.published', coursePublishedPayload({ courseId: course }))
      )[0].eventId;
      await db.prisma.outboxEvent.updateMany({
        data: { createdAt: new Date('2026-01-10T00:00:00Z'), publishedAt: new Date('2026-01-10T00:00:01Z') },
      });
      await db.prisma.outboxEvent.update({ where: { eventId: early }, data: { createdAt: new Date('2025-12-31T23:59:59Z') } });
      await db.prisma.outboxEvent.update({ where: { eventId: unpublished }, data: { publishedAt: null } });

      const env = { DATABASE_URL: db.url, DB_POOL_SIZE: '1', NATS_URL: nats.url };
      const args = [
        '--since',
        '2026-01-01T00:00:00Z',
        '--until',
        '2026-02-01T00:00:00Z',
        '--tenant',
        tenant,
        '--type',
        'catalog.course_version.published',
      ];
      const dry = await replayCli([...args, '--dry-run'], env);
      expect(dry.code, dry.stderr).toBe(0);
      expect(JSON.parse(dry.stdout)).toEqual({
        matched: 5,
        published: 0,
        duplicates: 0,
        dryRun: true,
        firstEventId: inRange[0],
        lastEventId: inRange[4],
      });
      expect((await bus.streamState(events.catalogStream)).messages).toBe(0);

      const run = await replayCli(args, env);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ matched: 5, published: 5, duplicates: 0, dryRun: false });
      const stored = await bus.readStream(events.catalogStream);
      expect(stored.map((m) => (JSON.parse(text(m.data)) as { eventId: string }).eventId)).toEqual(inRange);
      expect(stored.map((m) => m.headers['Nats-Msg-Id'])).toEqual(inRange);
      expect(stored[0].headers).toMatchObject({ 'x-replayed-from': 'archive', 'Content-Type': 'application/json' });
      expect(stored.map((m) => m.subject)).toEqual(inRange.map(() => 'catalog.course_version.published.v1'));

      // Run again (say, after a run that stopped half-way): the stream's duplicate window drops them all.
      const again = await replayCli(args, env);
      expect(JSON.parse(again.stdout)).toMatchObject({ matched: 5, published: 0, duplicates: 5 });
      expect((await bus.streamState(events.catalogStream)).messages).toBe(5);

      // Without --tenant and --type: the other tenant's and the other type's events of the range too.
      const all = await replayCli(['--since', '2026-01-01T00:00:00Z', '--until', '2026-02-01T00:00:00Z'], env);
      expect(JSON.parse(all.stdout)).toMatchObject({ matched: 7, published: 2, duplicates: 5 });
      const ids = (await bus.readStream(events.catalogStream)).map(
        (m) => (JSON.parse(text(m.data)) as { eventId: string }).eventId,
      );
      expect(ids.slice(5).sort()).toEqual([otherType, otherTenant].sort());
    }
  });
});
