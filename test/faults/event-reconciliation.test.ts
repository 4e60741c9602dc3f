import fs from 'node:fs/promises';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus, StoredMessage } from '../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../events/bus/jetstream-bus.js';
import { subjectFor, type EventEnvelope } from '../../events/envelope.js';
import { ensureStreams } from '../../events/streams.js';
import { loadSystemConfig } from '../../processes/config.js';
import { newId } from '../../platform/ids.js';
import { silentLogger } from '../../platform/observability/logger.js';
import { applyMigrations } from '../../prisma/migrate.js';
import { CATALOG_DURABLES } from '../../subgraphs/catalog/consumers.js';
import { builtPayload, consumedEnvelope } from '../integration/catalog/harness.js';
import { spawnEntry, type EntryProcess } from '../support/entry-process.js';
import {
  privateServicesAvailable,
  startPrivateNats,
  startPrivatePostgres,
  type PrivateNats,
  type PrivatePostgres,
} from '../support/private-services.js';
import { freePort, processDataDir } from '../support/child-env.js';
import { eventually } from '../support/eventually.js';
import { recordFigures } from '../support/reliability-figures.js';
import { seededRandom } from '../support/seeded-random.js';

/**
 * Event reconciliation under faults, in the manner of Jepsen's checkers: N play-package-built
 * events with unique ids go into JetStream while two event worker replicas (each its own process,
 * as `npm run start:worker`, sharing the durable consumer) are killed with SIGKILL, NATS is killed
 * and restarted, and Postgres is stopped with `-m immediate` (a crash: no checkpoint, recovery
 * from the WAL) and restarted — each at a random point of the processing (a random fraction of N,
 * seeded). Afterwards every input is classified from what the system holds, not from what it
 * reported: its CourseVersion rows in Postgres and its `catalog.course_version.published.v1`
 * messages on the CATALOG stream (matched by causationId = the input's eventId). Exactly one of
 * each is ok; none is lost; more is duplicated.
 *
 * Producer order: a course is out of order when its published events' per-course sequence
 * (x-course-version-seq) does not follow the CONTENT stream order of its built events, or its
 * published events do not reach the CATALOG stream in that sequence.
 *
 * NATS and Postgres are private instances of the machine's binaries (test/support/private-services.ts):
 * other suites run at the same time against the machine's own services, which must not go down.
 */
const N = Number(process.env.RELIABILITY_EVENTS ?? 5_000);
const COURSES = 50;
type FaultKind = 'worker SIGKILL' | 'NATS restart' | 'Postgres restart';
/** How many faults of each kind (RELIABILITY_FAULTS='{"Postgres restart": 8}' changes the mix). */
const FAULTS: Record<FaultKind, number> = {
  'worker SIGKILL': 8,
  'NATS restart': 4,
  'Postgres restart': 4,
  ...(JSON.parse(process.env.RELIABILITY_FAULTS ?? '{}') as Partial<Record<FaultKind, number>>),
};
/** Longest outage of NATS or Postgres, ms (each is 200 ms up to this, seeded). */
const MAX_DOWN_MS = Number(process.env.RELIABILITY_MAX_DOWN_MS ?? 2_000);
const SEED = Number(process.env.RELIABILITY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const ACK_WAIT_SECONDS = 10;
const REPLICAS = 2;
/** Longer than the old nak backoff took to spend 6 deliveries (about 17-23 s). */
const LONG_OUTAGE_MS = 25_000;
const CONVERGENCE_MS = 240_000;
const PUBLISHED_SUBJECT = subjectFor('catalog.course_version.published', 1);
const BUILT_SUBJECT = subjectFor('content.play_package.built', 1);

/** A deliberate outage or a pause between poll rounds; never a stand-in for waiting on an event. */
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A wait that may fail without ending the test at once: its error, or undefined when it passed. */
function failureOf(wait: Promise<unknown>): Promise<unknown> {
  return wait.then(
    () => undefined,
    (error: unknown) => error,
  );
}

/**
 * Courses whose versions did not follow the producer: per course, the built events in CONTENT
 * stream order (an input published twice counts where it first landed) must have published
 * events with increasing per-course sequence, and those must reach the CATALOG stream in that
 * sequence. One line per out-of-order course, saying where.
 */
function producerOrder(builtMessages: StoredMessage[], publishedMessages: StoredMessage[]) {
  const json = <T>(m: StoredMessage) => JSON.parse(Buffer.from(m.data).toString('utf8')) as T;
  const builtOrder = new Map<string, string[]>();
  const seen = new Set<string>();
  for (const m of builtMessages) {
    const e = json<EventEnvelope<{ slug: string }>>(m);
    if (seen.has(e.eventId)) continue;
    seen.add(e.eventId);
    builtOrder.set(e.payload.slug, [...(builtOrder.get(e.payload.slug) ?? []), e.eventId]);
  }
  const sequenceOf = new Map<string, number>();
  const catalogOrder = new Map<string, number[]>();
  for (const m of publishedMessages) {
    const e = json<EventEnvelope<{ courseId: string }>>(m);
    const sequence = Number(m.headers['x-course-version-seq']);
    sequenceOf.set(e.causationId, sequence);
    catalogOrder.set(e.payload.courseId, [...(catalogOrder.get(e.payload.courseId) ?? []), sequence]);
  }
  const increasing = (values: number[]) => values.every((v, i) => i === 0 || v > values[i - 1]);
  const outOfOrder: string[] = [];
  for (const [slug, eventIds] of builtOrder) {
    const sequences = eventIds.map((id) => sequenceOf.get(id) ?? Number.NaN);
    if (!increasing(sequences)) outOfOrder.push(`${slug}: sequences in built order ${sequences.join(' ')}`);
  }
  for (const [courseId, sequences] of catalogOrder) {
    if (!increasing(sequences)) outOfOrder.push(`${courseId}: CATALOG stream order ${sequences.join(' ')}`);
  }
  return { courses: builtOrder.size, outOfOrder };
}

const runs = privateServicesAvailable('event reconciliation under faults', ['nats-server', 'postgres']);

describe.runIf(runs)('event reconciliation under faults', () => {
  let postgres: PrivatePostgres;
  let nats: PrivateNats;
  let bus: EventBus;
  let inspector: NatsConnection;
  let jsm: JetStreamManager;
  let observer: pg.Pool;
  let dataDir: string;
  const config = loadSystemConfig({});

  beforeAll(async () => {
    [postgres, nats] = await Promise.all([startPrivatePostgres(), startPrivateNats()]);
    await applyMigrations(postgres.url);
    bus = await connectJetStreamBus(nats.url, { logger: silentLogger });
    await ensureStreams(bus, config);
    inspector = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    jsm = await jetstreamManager(inspector);
    observer = new pg.Pool({ connectionString: postgres.url, max: 2, connectionTimeoutMillis: 2_000 });
    // Idle clients die with every Postgres restart; the next query reconnects.
    observer.on('error', () => undefined);
    dataDir = processDataDir('reliability-worker-');
  });

  afterAll(async () => {
    await bus?.close().catch(() => undefined);
    await inspector?.close().catch(() => undefined);
    await observer?.end().catch(() => undefined);
    await nats?.destroy();
    await postgres?.destroy();
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  });

  /** A query that survives Postgres restarts: undefined while the server is down. */
  async function query<T extends pg.QueryResultRow>(sql: string): Promise<T[] | undefined> {
    try {
      return (await observer.query<T>(sql)).rows;
    } catch {
      return undefined;
    }
  }

  it(`classifies ${N} built events after worker kills, NATS restarts and Postgres restarts: none lost, none duplicated`, async () => {
    const random = seededRandom(SEED);
    const tenantId = newId('tenant');
    const slugs = Array.from({ length: COURSES }, (_, i) => ({ slug: `rel-${i}`, draft: newId('courseDraft') }));
    // Input i: course i % COURSES, label 1.0.<i / COURSES>: every input asks for a version of its own.
    const inputs: EventEnvelope[] = Array.from({ length: N }, (_, i) => {
      const { slug, draft } = slugs[i % COURSES];
      return consumedEnvelope('built', builtPayload(tenantId, slug, `1.0.${Math.floor(i / COURSES)}`, { courseDraftId: draft }));
    });
    const inputIds = new Set(inputs.map((e) => e.eventId));
    expect(inputIds.size).toBe(N);

    // --- the worker replicas, supervised like a service manager would (restart on any exit) --
    const workerEnv = async () => ({
      DATABASE_URL: postgres.url,
      NATS_URL: nats.url,
      DATA_DIR: dataDir,
      METRICS_PORT: String(await freePort()),
      DB_POOL_SIZE: '4',
      CONSUMER_ACK_WAIT_SECONDS: String(ACK_WAIT_SECONDS),
      // Production mode: the test plays the content service, whose stream it created above.
      CREATE_PRODUCER_STREAMS: 'false',
      OTEL_SDK_DISABLED: 'true',
    });
    const workers: Array<EntryProcess | undefined> = Array.from({ length: REPLICAS }, () => undefined);
    let supervising = true;
    let killing = false;
    let unplannedExits = 0;
    let starts = 0;
    /** What every worker process wrote (warnings and errors), for the failure message. */
    let history = '';
    const startWorker = async (replica: number) => {
      const child = spawnEntry('processes/worker.main.ts', await workerEnv());
      starts += 1;
      workers[replica] = child;
      void child.exited.then(async () => {
        history = `${history}\n--- worker ${replica} (start ${starts}) exited\n${child.output()}`.slice(-128 * 1024);
        if (!supervising || killing || workers[replica] !== child) return;
        // E.g. started while NATS or Postgres was down: it exits, the supervisor starts it again.
        unplannedExits += 1;
        await pause(500);
        if (supervising && workers[replica] === child) await startWorker(replica);
      });
    };
    for (let replica = 0; replica < REPLICAS; replica++) await startWorker(replica);
    const workerOutput = () => workers.map((w, i) => `--- worker ${i}\n${w?.output() ?? ''}`).join('\n');

    // --- progress, observed in Postgres ----------------------------------------------------
    let progress = 0;
    let observing = true;
    const observing$ = (async () => {
      while (observing) {
        const rows = await query<{ n: number }>('SELECT count(*)::int AS n FROM "CourseVersion"');
        if (rows) progress = rows[0].n;
        await pause(250);
      }
    })();

    // --- the producer: publishes every input until JetStream acknowledged it ----------------
    const started = Date.now();
    let publishRetries = 0;
    const publishing = (async () => {
      const deadline = Date.now() + CONVERGENCE_MS;
      for (let at = 0; at < inputs.length; at += 250) {
        // Keep at most ~1,000 inputs ahead of the worker, so broker restarts also hit the producer.
        while (at - progress > 1_000 && Date.now() < deadline) await pause(100);
        let pending = inputs.slice(at, at + 250);
        while (pending.length) {
          if (Date.now() > deadline) throw new Error(`could not publish ${pending.length} inputs before the deadline`);
          const results = await Promise.allSettled(
            pending.map((e) =>
              bus.publish(BUILT_SUBJECT, Buffer.from(JSON.stringify(e)), {
                msgId: e.eventId,
                headers: { 'Content-Type': 'application/json' },
              }),
            ),
          );
          pending = pending.filter((_, i) => results[i].status === 'rejected');
          if (pending.length) {
            publishRetries += pending.length;
            await pause(200);
          }
        }
      }
    })();

    // --- the nemesis: faults at random points of the processing -----------------------------
    const plan = (Object.entries(FAULTS) as Array<[FaultKind, number]>)
      .flatMap(([kind, count]) => Array.from({ length: count }, () => ({ kind, at: Math.floor((0.02 + random() * 0.93) * N) })))
      .sort((a, b) => a.at - b.at);
    const injected: Array<{ kind: FaultKind; at: number; progress: number; downMs: number }> = [];
    for (const fault of plan) {
      await eventually(() => progress >= fault.at, `progress ${fault.at}`, { timeoutMs: CONVERGENCE_MS, intervalMs: 200 });
      await pause(Math.floor(random() * 400));
      const downMs = Math.floor(200 + random() * (MAX_DOWN_MS - 200));
      injected.push({ kind: fault.kind, at: fault.at, progress, downMs: fault.kind === 'worker SIGKILL' ? 0 : downMs });
      if (fault.kind === 'worker SIGKILL') {
        const replica = Math.floor(random() * REPLICAS);
        killing = true;
        await workers[replica]?.kill('SIGKILL');
        killing = false;
        await startWorker(replica);
      } else if (fault.kind === 'NATS restart') {
        await nats.stop(random() < 0.5 ? 'SIGKILL' : 'SIGTERM');
        await pause(downMs);
        await nats.start();
      } else {
        await postgres.stop('immediate');
        await pause(downMs);
        await postgres.start();
      }
    }
    await publishing;
    const faultsDoneAt = Date.now();

    // --- convergence: everything processed, relayed and acknowledged ------------------------
    const consumerState = async () => {
      try {
        const info = await jsm.consumers.info(config.events.contentStream, CATALOG_DURABLES.playPackageBuilt);
        return { pending: info.num_pending, ackPending: info.num_ack_pending };
      } catch {
        return undefined;
      }
    };
    // Its failure is asserted after the figures, which say what did not converge.
    const convergenceFailure = await failureOf(
      eventually(
        async () => {
          const rows = await query<{ versions: number; unpublished: number }>(
            `SELECT (SELECT count(*)::int FROM "CourseVersion") AS versions,
                  (SELECT count(*)::int FROM "OutboxEvent" WHERE "publishedAt" IS NULL) AS unpublished`,
          );
          const consumer = await consumerState();
          const done =
            !!rows && rows[0].versions >= N && rows[0].unpublished === 0 && consumer?.pending === 0 && consumer.ackPending === 0;
          if (!done) throw new Error(`not yet: ${JSON.stringify({ database: rows?.[0], consumer })}`);
        },
        'the worker to process and relay every input',
        { timeoutMs: CONVERGENCE_MS, intervalMs: 200 },
      ),
    );
    const converged = convergenceFailure === undefined;
    const convergedAt = Date.now();
    supervising = false;
    observing = false;
    await observing$;
    await Promise.all(workers.map((w) => w?.kill('SIGTERM')));

    // --- classification, from what the system holds ----------------------------------------
    const versions =
      (await query<{ id: string; sourceEventId: string | null; courseId: string }>(
        'SELECT id, "sourceEventId", "courseId" FROM "CourseVersion"',
      )) ?? [];
    const inbox = (await query<{ eventId: string }>(
      `SELECT "eventId" FROM "InboxEvent" WHERE consumer = '${CATALOG_DURABLES.playPackageBuilt}'`,
    ))!;
    const published = await bus.readStream(config.events.catalogStream, { filterSubject: PUBLISHED_SUBJECT });
    const registered = await bus.readStream(config.events.catalogStream, {
      filterSubject: subjectFor('catalog.course.registered', 1),
    });
    const dlq = await bus.streamState(config.events.dlqStream);
    // Why anything was dead-lettered: the letters' own headers.
    const letters = (await bus.readStream(config.events.dlqStream)).map(
      (l) =>
        `${l.headers['x-event-id']} after ${l.headers['x-deliveries']} deliveries by ${l.headers['x-consumer']}: ${(l.headers['x-error'] ?? '').slice(0, 300)}`,
    );
    const streamInfo = await jsm.streams.info(config.events.contentStream);
    const catalogInfo = await jsm.streams.info(config.events.catalogStream);

    const dbByInput = new Map<string, string[]>();
    for (const v of versions) dbByInput.set(v.sourceEventId ?? '', [...(dbByInput.get(v.sourceEventId ?? '') ?? []), v.id]);
    const streamByInput = new Map<string, string[]>();
    for (const m of published) {
      const envelope = JSON.parse(Buffer.from(m.data).toString('utf8')) as EventEnvelope<{ courseVersionId: string }>;
      streamByInput.set(envelope.causationId, [
        ...(streamByInput.get(envelope.causationId) ?? []),
        envelope.payload.courseVersionId,
      ]);
    }
    let ok = 0;
    let lost = 0;
    let duplicated = 0;
    let mismatched = 0;
    const examples: string[] = [];
    for (const id of inputIds) {
      const inDb = dbByInput.get(id) ?? [];
      const onStream = streamByInput.get(id) ?? [];
      if (inDb.length > 1 || onStream.length > 1) {
        duplicated += 1;
        if (examples.length < 5) examples.push(`${id}: duplicated db=${inDb.length} stream=${onStream.length}`);
      } else if (inDb.length === 0 || onStream.length === 0) {
        lost += 1;
        if (examples.length < 5) examples.push(`${id}: lost db=${inDb.length} stream=${onStream.length}`);
      } else if (inDb[0] !== onStream[0]) {
        mismatched += 1;
        if (examples.length < 5) examples.push(`${id}: version ${inDb[0]} in db, ${onStream[0]} on the stream`);
      } else ok += 1;
    }
    const strangers = [...dbByInput.keys(), ...streamByInput.keys()].filter((id) => !inputIds.has(id));
    const order = producerOrder(await bus.readStream(config.events.contentStream, { filterSubject: BUILT_SUBJECT }), published);
    const registeredCourses = registered.map(
      (m) => (JSON.parse(Buffer.from(m.data).toString('utf8')) as EventEnvelope<{ courseId: string }>).payload.courseId,
    );

    const counts = Object.fromEntries(Object.keys(FAULTS).map((k) => [k, injected.filter((f) => f.kind === k).length]));
    const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    recordFigures({
      suite: 'event reconciliation (faults)',
      faultsInjected: injected.length,
      eventsChecked: N,
      lost,
      duplicated,
      requestsTried: 0,
      serverErrors: 0,
      notes: [
        `seed ${SEED}; faults ${Object.entries(counts)
          .map(([k, v]) => `${v}× ${k}`)
          .join(', ')}; worker starts ${starts}, unplanned exits ${unplannedExits}`,
        `ok ${ok}, lost ${lost}, duplicated ${duplicated}, mismatched ${mismatched}; dead letters ${dlq.messages}; publish retries ${publishRetries}`,
        `${REPLICAS} worker replicas; courses out of producer order ${order.outOfOrder.length} of ${order.courses}`,
        `faults over ${seconds(faultsDoneAt - started)}, converged ${converged ? `${seconds(convergedAt - faultsDoneAt)} after the last fault` : 'NOT within the deadline'}`,
        `streams: ${streamInfo.config.name} ${streamInfo.config.storage} storage × ${streamInfo.config.num_replicas} replica(s), ${catalogInfo.config.name} ${catalogInfo.config.storage} × ${catalogInfo.config.num_replicas}; nats-server ${inspector.info?.version}`,
        ...letters.slice(0, 5).map((l) => `dead letter ${l}`),
      ],
    });
    if (examples.length || order.outOfOrder.length)
      console.warn(
        `[reliability] examples:\n${[...examples, ...order.outOfOrder.slice(0, 5)].join('\n')}\nworker output:\n${history}\n${workerOutput()}`,
      );

    // Durable configuration: file storage on both the consumed and the published stream.
    expect(streamInfo.config.storage).toBe(StorageType.File);
    expect(catalogInfo.config.storage).toBe(StorageType.File);
    expect(injected.length).toBe(plan.length);
    expect(
      converged,
      `did not converge (${String(convergenceFailure)}); worker output:\n${history.slice(-16 * 1024)}\n${workerOutput()}`,
    ).toBe(true);
    expect({ lost, duplicated, mismatched, strangers: strangers.length, outOfOrder: order.outOfOrder.length }).toEqual({
      lost: 0,
      duplicated: 0,
      mismatched: 0,
      strangers: 0,
      outOfOrder: 0,
    });
    expect(ok).toBe(N);
    expect(versions).toHaveLength(N);
    expect(published).toHaveLength(N);
    // The inbox holds each input once; each course was registered once.
    expect(new Set(inbox.map((r) => r.eventId)).size).toBe(N);
    expect(inbox).toHaveLength(N);
    expect(new Set(registeredCourses).size).toBe(COURSES);
    expect(registeredCourses).toHaveLength(COURSES);
    expect(dlq.messages).toBe(0);
  });

  it(`a Postgres outage of ${LONG_OUTAGE_MS / 1000} s dead-letters nothing: the consumer holds its message and waits`, async () => {
    // Before the runner waited for the database, each failed delivery was nak'ed with backoff and
    // the 6th one (at about 17-23 s) dead-lettered every message taken during the outage.
    const tenantId = newId('tenant');
    const inputs = Array.from({ length: 300 }, (_, i) =>
      consumedEnvelope('built', builtPayload(tenantId, `outage-${i % 10}`, `2.0.${i}`)),
    );
    const ids = new Set(inputs.map((e) => e.eventId));
    const worker = spawnEntry('processes/worker.main.ts', {
      DATABASE_URL: postgres.url,
      NATS_URL: nats.url,
      DATA_DIR: dataDir,
      METRICS_PORT: String(await freePort()),
      DB_POOL_SIZE: '4',
      CONSUMER_ACK_WAIT_SECONDS: String(ACK_WAIT_SECONDS),
      OTEL_SDK_DISABLED: 'true',
    });
    try {
      const versions = async () =>
        (await query<{ n: number }>(`SELECT count(*)::int AS n FROM "CourseVersion" WHERE "tenantId" = '${tenantId}'`))?.[0].n;
      for (const e of inputs) await bus.publish(BUILT_SUBJECT, Buffer.from(JSON.stringify(e)), { msgId: e.eventId });
      await eventually(async () => ((await versions()) ?? 0) >= 20, 'the first versions', { timeoutMs: 60_000, intervalMs: 200 });
      await postgres.stop('immediate');
      await pause(LONG_OUTAGE_MS);
      await postgres.start();
      const outageFailure = await failureOf(
        eventually(async () => (await versions()) === inputs.length, 'every version after the outage', {
          timeoutMs: 120_000,
          intervalMs: 200,
        }),
      );
      const letters = (await bus.readStream(config.events.dlqStream)).filter((l) => ids.has(l.headers['x-event-id'] ?? ''));
      expect(letters.map((l) => l.headers['x-error']).slice(0, 3)).toEqual([]);
      expect(outageFailure, worker.output()).toBeUndefined();
    } finally {
      await worker.kill('SIGTERM');
    }
  });
});
