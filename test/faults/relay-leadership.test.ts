import fs from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../events/bus/jetstream-bus.js';
import { createEventProducer } from '../../events/publish/outbox.js';
import { loadSchemaRegistry } from '../../events/schemas/registry.js';
import { ensureStreams } from '../../events/streams.js';
import { systemClock } from '../../platform/clock.js';
import { createPrismaClient, type Db } from '../../platform/db/database.js';
import { newId } from '../../platform/ids.js';
import { silentLogger } from '../../platform/observability/logger.js';
import { applyMigrations } from '../../prisma/migrate.js';
import { loadSystemConfig } from '../../processes/config.js';
import { courseEmit, coursePublishedPayload, testSource } from '../unit/events/fixtures.js';
import { freePort, processDataDir } from '../support/child-env.js';
import { spawnEntry, waitForHttp, type EntryProcess } from '../support/entry-process.js';
import { eventually } from '../support/eventually.js';
import {
  privateServicesAvailable,
  startPrivateNats,
  startPrivatePostgres,
  type PrivateNats,
  type PrivatePostgres,
} from '../support/private-services.js';
import { recordFigures } from '../support/reliability-figures.js';

/**
 * The outbox relay's leadership under a frozen leader, on real processes: two event workers
 * (`npm run start:worker`, private Postgres and NATS) while the test writes outbox rows steadily.
 * The leader is SIGSTOPped in the middle of a batch (its session is inside a transaction), as a long
 * GC pause or a stalled node would; the other worker must take the lease and publish within the
 * lease's bound. After SIGCONT the old leader must not lead (nor publish) until it takes the lease
 * again, and in the end every row is on the CATALOG stream exactly once, each course's events in
 * the order they were written.
 */
const LEASE_SECONDS = 3;
/** The lease, a poll interval, the successor's first batch, and a loaded 2-core machine's slack. */
const TAKEOVER_BOUND_MS = (LEASE_SECONDS + 1) * 1000 + 15_000;
const COURSES = 20;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const runs = privateServicesAvailable('relay leadership', ['nats-server', 'postgres']);

describe.runIf(runs)('outbox relay leadership under a frozen leader', () => {
  let postgres: PrivatePostgres;
  let nats: PrivateNats;
  let bus: EventBus;
  let db: Db;
  let observer: pg.Pool;
  let dataDir: string;
  const workers = new Map<string, EntryProcess>();
  const config = loadSystemConfig({});
  const figures: string[] = [];
  let checked = 0;
  let duplicated = 0;
  let lost = 0;

  beforeAll(async () => {
    [postgres, nats] = await Promise.all([startPrivatePostgres(), startPrivateNats()]);
    await applyMigrations(postgres.url);
    bus = await connectJetStreamBus(nats.url, { logger: silentLogger });
    await ensureStreams(bus, { ...config, events: { ...config.events, createProducerStreams: true } });
    db = createPrismaClient(postgres.url, 2);
    observer = new pg.Pool({ connectionString: postgres.url, max: 1 });
    dataDir = processDataDir('relay-leadership-');
  });

  afterAll(async () => {
    // A worker left stopped would never exit on SIGTERM.
    for (const worker of workers.values()) {
      if (worker.running()) {
        process.kill(worker.pid, 'SIGCONT');
        await worker.kill('SIGKILL');
      }
    }
    await bus?.close().catch(() => undefined);
    await db?.$disconnect();
    await observer?.end();
    await nats?.destroy();
    await postgres?.destroy();
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
    recordFigures({
      suite: 'relay leadership',
      faultsInjected: 1,
      eventsChecked: checked,
      lost,
      duplicated,
      requestsTried: 0,
      serverErrors: 0,
      notes: figures,
    });
  });

  async function startWorker(name: string): Promise<{ worker: EntryProcess; metrics: string }> {
    const metricsPort = await freePort();
    const url = new URL(postgres.url);
    // The worker's sessions carry its name, so pg_stat_activity shows where it stopped.
    url.searchParams.set('application_name', name);
    const worker = spawnEntry('processes/worker.main.ts', {
      DATABASE_URL: url.toString(),
      NATS_URL: nats.url,
      DATA_DIR: dataDir,
      METRICS_PORT: String(metricsPort),
      DB_POOL_SIZE: '4',
      OUTBOX_RELAY_LEASE_SECONDS: String(LEASE_SECONDS),
      SERVICE_INSTANCE: name,
      CREATE_PRODUCER_STREAMS: 'false',
      OTEL_SDK_DISABLED: 'true',
      LOG_LEVEL: 'info',
    });
    workers.set(name, worker);
    const metrics = `http://127.0.0.1:${metricsPort}/metrics`;
    // Ready, not merely listening: the ops port answers before the worker has started.
    await waitForHttp(worker, `http://127.0.0.1:${metricsPort}/readyz`, `worker ${name}`);
    return { worker, metrics };
  }

  async function lease(): Promise<{ holder: string; token: bigint } | undefined> {
    const { rows } = await observer.query<{ holder: string; token: string }>('SELECT holder, token FROM "OutboxRelayLease"');
    return rows[0] ? { holder: rows[0].holder.split('/')[0], token: BigInt(rows[0].token) } : undefined;
  }

  /** Whether a session of `name` is inside a transaction (a relay batch: nothing else of a worker runs one here). */
  async function inTransaction(name: string): Promise<boolean> {
    const { rows } = await observer.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle in transaction'`,
      [name],
    );
    return rows[0].n > 0;
  }

  async function leaderGauge(metrics: string): Promise<number> {
    const text = await (await fetch(metrics)).text();
    return Number(/^outbox_relay_leader (\S+)$/m.exec(text)?.[1]);
  }

  async function onStream(): Promise<Array<{ eventId: string; partitionKey: string }>> {
    return (await bus.readStream(config.events.catalogStream)).map(
      (m) => JSON.parse(Buffer.from(m.data).toString('utf8')) as { eventId: string; partitionKey: string },
    );
  }

  it('a SIGSTOPped leader is replaced within the lease bound; after SIGCONT it publishes nothing until it takes the lease again', async () => {
    const producer = createEventProducer({
      registry: loadSchemaRegistry(),
      clock: systemClock,
      source: testSource,
      dualPublishDays: 30,
    });
    const tenantId = newId('tenant');
    const courses = Array.from({ length: COURSES }, () => newId('course'));
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing) {
        await db.$transaction(async (tx) => {
          for (const course of courses) {
            await producer.emit(tx, {
              ...courseEmit(tenantId, course),
              eventType: 'catalog.course_version.published',
              payload: coursePublishedPayload({ courseId: course }),
            });
          }
        });
        written += COURSES;
        await pause(20);
      }
    })();

    const a = await startWorker('worker-a');
    const b = await startWorker('worker-b');
    const first = await eventually(async () => (await lease()) ?? false, 'a relay leader');
    const [leader, follower] = first.holder === 'worker-a' ? [a, b] : [b, a];
    const [leaderName, followerName] = first.holder === 'worker-a' ? ['worker-a', 'worker-b'] : ['worker-b', 'worker-a'];

    // Freeze the leader in the middle of a batch: stop it, and keep it stopped only if its session
    // is inside the batch's transaction.
    let stoppedAt = 0;
    await eventually(
      async () => {
        process.kill(leader.worker.pid, 'SIGSTOP');
        stoppedAt = Date.now();
        if (await inTransaction(leaderName)) return true;
        process.kill(leader.worker.pid, 'SIGCONT');
        return false;
      },
      'the leader stopped mid-batch',
      { intervalMs: 7 },
    );
    const publishedAtStop = (await onStream()).length;

    const taken = await eventually(
      async () => {
        const now = await lease();
        if (now?.holder !== followerName) return false;
        return (await onStream()).length > publishedAtStop + COURSES ? now : false;
      },
      'the follower to take the lease and publish',
      { timeoutMs: TAKEOVER_BOUND_MS, intervalMs: 100 },
    );
    const takeoverMs = Date.now() - stoppedAt;
    expect(taken.token).toBeGreaterThan(first.token);
    expect(await leaderGauge(follower.metrics)).toBe(1);
    figures.push(
      `leader SIGSTOPped mid-batch: follower took the lease (token ${first.token} -> ${taken.token}) and published within ${takeoverMs} ms (lease ${LEASE_SECONDS} s)`,
    );

    // The old leader resumes: it notices, does not lead, and publishes nothing while the other leads.
    process.kill(leader.worker.pid, 'SIGCONT');
    await eventually(async () => (await leaderGauge(leader.metrics)) === 0, 'the resumed worker to know it does not lead');
    // The gauge reads the lease's local deadline and turns 0 at once; the frozen batch learns it
    // lost the lease only at its next step (a publish check, or a statement on the session the
    // server ended), a round trip later: the log line may come after the gauge (seen in CI).
    await eventually(
      () => /outbox relay lease lapsed mid-batch|outbox relay run failed/.test(leader.worker.output()),
      'the resumed batch to report the lapsed lease or its ended transaction',
    );
    expect((await lease())?.holder).toBe(followerName);

    // The follower goes away cleanly: it hands the lease back and the old leader takes it, with a new token.
    await follower.worker.kill('SIGTERM');
    const again = await eventually(async () => {
      const now = await lease();
      return now?.holder === leaderName && now.token > taken.token ? now : false;
    }, 'the first worker to lead again');
    expect(await leaderGauge(leader.metrics)).toBe(1);
    figures.push(`after SIGCONT the first worker led again only by taking the lease (token ${again.token})`);

    writing = false;
    await writer;
    await eventually(async () => (await db.outboxEvent.count({ where: { publishedAt: null } })) === 0, 'every row published', {
      timeoutMs: 60_000,
    });

    // Every row on the stream exactly once, and each course's rows in the order they were written.
    const rows = await db.outboxEvent.findMany({ select: { eventId: true, id: true }, orderBy: { id: 'asc' } });
    const idOf = new Map(rows.map((r) => [r.eventId, r.id]));
    const stream = await onStream();
    const seen = new Set<string>();
    const lastId = new Map<string, bigint>();
    const outOfOrder: string[] = [];
    for (const event of stream) {
      if (seen.has(event.eventId)) duplicated += 1;
      seen.add(event.eventId);
      const id = idOf.get(event.eventId)!;
      if ((lastId.get(event.partitionKey) ?? -1n) > id)
        outOfOrder.push(`${event.partitionKey}: ${id} after ${lastId.get(event.partitionKey)}`);
      lastId.set(event.partitionKey, id);
    }
    lost = rows.filter((r) => !seen.has(r.eventId)).length;
    checked = rows.length;
    figures.push(
      `${rows.length} rows written while the relay changed hands twice: ${lost} lost, ${duplicated} duplicated, ${outOfOrder.length} out of order`,
    );
    expect(written).toBe(rows.length);
    expect({ lost, duplicated, outOfOrder }).toEqual({ lost: 0, duplicated: 0, outOfOrder: [] });
  });
});
