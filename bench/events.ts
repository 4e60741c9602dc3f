// `npm run bench -- events`: content.play_package.built.v1 → the catalog's durable consumer stores
// the version (inbox row, course row lock, version, outbox rows, one transaction) → the outbox relay
// publishes catalog.course_version.published.v1 → a subscriber receives it. Over real NATS
// JetStream and Postgres, with the worker as its own process (bench/events-worker.ts), against the
// limit: the same messages published to a plain stream and consumed with explicit acks, no database.
//
// Two runs per flow: a burst (BENCH_EVENTS_BURST events published at once: the drain rate is the
// capacity) and a paced run at BENCH_EVENTS_RATE events/s for BENCH_DURATION_SECONDS (latency at
// that rate; when the flow cannot keep up, the lag grows and the run says so). Every wait is
// bounded: a flow that falls behind is reported as such, not waited for.
//
// There is no autocannon for NATS: the publisher here is a timer releasing rate/100 messages every
// 10 ms through the official client with at most 1,000 acks outstanding, and the subscriber only
// records the arrival time of each event (keyed by the consumed event's id, its causationId).
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { buildEnvelope } from '../events/envelope.js';
import { loadSchemaRegistry } from '../events/schemas/registry.js';
import { newId } from '../platform/ids.js';
import { DURATION, ROUNDS, f, freePort, freshDatabase, heading, percentile, spawnNode, table, type Proc } from './lib.js';
import { BENCH_TENANT } from './seed.js';
import { benchStreams, removeBenchStreams } from './streams.js';

const RATE = Number(process.env.BENCH_EVENTS_RATE ?? 2_000);
const BURST = Number(process.env.BENCH_EVENTS_BURST ?? 3_000);
/** How long a flow may take to deliver what was published, after the last publish. */
const DRAIN_BOUND_MS = Number(process.env.BENCH_EVENTS_DRAIN_SECONDS ?? 30) * 1000;
/** Courses the events are spread over: a new version of one of them each time, round-robin. */
const COURSES = 500;

interface FlowResult {
  label: string;
  mode: string;
  offered: string;
  published: number;
  delivered: number;
  /** Delivered events per second, first publish to last delivery. */
  rate: number;
  latencies: number[];
  load: string;
}

interface Flow {
  label: string;
  publishSubject: string;
  /** Starts receiving; `onEvent(key)` per delivered event. */
  subscribe(onEvent: (key: string) => void): Promise<() => Promise<void>>;
  /** After a run that fell behind: drop what is still queued, so the next run has the machine. */
  settle?(): Promise<void>;
}

let sequence = 0;
function bodies(count: number): Array<{ id: string; data: Uint8Array }> {
  const registry = loadSchemaRegistry();
  const source = { service: 'content', instance: 'bench', commit: 'bench' };
  const out: Array<{ id: string; data: Uint8Array }> = [];
  for (let i = 0; i < count; i++, sequence++) {
    const course = sequence % COURSES;
    const envelope = buildEnvelope(
      { clock: { now: () => new Date() }, registry, source },
      {
        eventType: 'content.play_package.built',
        eventVersion: 1,
        tenantId: BENCH_TENANT,
        partitionKey: `bench-${course}`,
        actor: { type: 'system', id: 'content' },
        retentionClass: 'operational',
        dataResidency: 'EU',
        payload: {
          courseDraftId: `drf_${course.toString(16).toUpperCase().padStart(26, '0')}`,
          tenantId: BENCH_TENANT,
          slug: `bench-events-${course}`,
          title: { en: `Bench events course ${course}` },
          defaultLocale: 'en',
          versionLabel: `1.${Math.floor(sequence / COURSES)}.0`,
          durationMinutes: 30,
          locales: ['en'],
          playPackage: { playPackageId: newId('playPackage'), sha256: randomBytes(32).toString('hex'), format: 'v1' },
          publishedBy: 'usr_01JDBENCHAVTH0R000000000000'.slice(0, 30),
        },
      },
    );
    out.push({ id: envelope.eventId, data: new TextEncoder().encode(JSON.stringify(envelope)) });
  }
  return out;
}

async function runFlow(js: JetStreamClient, flow: Flow, mode: 'burst' | 'paced', count: number): Promise<FlowResult> {
  const messages = bodies(count);
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  let lastDelivery = 0;
  let delivered = 0;
  const unsubscribe = await flow.subscribe((key) => {
    const sent = sentAt.get(key);
    if (sent === undefined) return;
    sentAt.delete(key);
    const now = performance.now();
    latencies.push(now - sent);
    lastDelivery = now;
    delivered++;
  });
  const loadBefore = (await import('node:os')).loadavg()[0];
  const started = performance.now();
  let published = 0;
  let inFlight = 0;
  const publishOne = (m: { id: string; data: Uint8Array }) => {
    inFlight++;
    sentAt.set(m.id, performance.now());
    return js
      .publish(flow.publishSubject, m.data, { msgID: m.id })
      .then(() => published++)
      .catch(() => sentAt.delete(m.id))
      .finally(() => inFlight--);
  };
  if (mode === 'burst') {
    const pending: Array<Promise<unknown>> = [];
    for (const m of messages) {
      while (inFlight >= 1_000) await new Promise((resolve) => setTimeout(resolve, 1));
      pending.push(publishOne(m));
    }
    await Promise.all(pending);
  } else {
    // Paced by the clock, not by acks: a flow that falls behind does not slow the offered load.
    let next = 0;
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        const due = Math.min(messages.length, Math.floor(((performance.now() - started) / 1000) * RATE));
        while (next < due && inFlight < 1_000) void publishOne(messages[next++]);
        if (next >= messages.length) {
          clearInterval(timer);
          resolve();
        }
      }, 10);
    });
    while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const publishedAt = performance.now();
  while (delivered < published && performance.now() - publishedAt < DRAIN_BOUND_MS) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await unsubscribe();
  if (delivered < published) await flow.settle?.();
  latencies.sort((a, b) => a - b);
  return {
    label: flow.label,
    mode: mode === 'burst' ? `burst of ${count}` : `paced ${RATE}/s × ${DURATION} s`,
    offered: mode === 'burst' ? f(published / ((publishedAt - started) / 1000), 0) : String(RATE),
    published,
    delivered,
    rate: delivered / (((lastDelivery || performance.now()) - started) / 1000),
    latencies,
    load: `${loadBefore.toFixed(1)}→${(await import('node:os')).loadavg()[0].toFixed(1)}`,
  };
}

/** A pull consumer of its own (ephemeral, ordered) that records each message's key. */
async function orderedSubscriber(
  js: JetStreamClient,
  stream: string,
  filter: string,
  keyOf: (data: Uint8Array) => string,
): Promise<(onEvent: (key: string) => void) => Promise<() => Promise<void>>> {
  return async (onEvent) => {
    const consumer = await js.consumers.get(stream, { filter_subjects: filter, deliver_policy: DeliverPolicy.New });
    const messages = await consumer.consume({ max_messages: 1_000 });
    const loop = (async () => {
      for await (const m of messages) onEvent(keyOf(m.data));
    })();
    return async () => {
      await messages.close();
      await loop;
    };
  };
}

export async function run(): Promise<void> {
  const natsUrl = process.env.NATS_URL;
  if (!natsUrl) throw new Error('events needs NATS_URL (JetStream), e.g. nats://127.0.0.1:4222');
  const names = benchStreams();
  const { id, prefix } = names;
  const streams = names.env;
  const rawStream = `BENCH_${id}_RAW`;
  const db = await freshDatabase();
  let worker: Proc | undefined;
  let nc: NatsConnection | undefined;
  let jsm: JetStreamManager | undefined;
  try {
    // One worker per consumer concurrency (CONSUMER_CONCURRENCY), restarted between levels on the
    // same database, streams and durable consumers, as a redeploy with another setting would be.
    const startWorker = async (concurrency: number) => {
      const metricsPort = await freePort();
      return spawnNode('event-worker', 'bench/events-worker.ts', {
        env: {
          DATABASE_URL: db.url,
          NATS_URL: natsUrl,
          DB_POOL_SIZE: '10',
          METRICS_PORT: String(metricsPort),
          CONSUMER_CONCURRENCY: String(concurrency),
          ...(process.env.BENCH_EVENTS_BATCH ? { CONSUMER_BATCH_SIZE: process.env.BENCH_EVENTS_BATCH } : {}),
          ...streams,
        },
        readyUrl: `http://127.0.0.1:${metricsPort}/metrics`,
      });
    };
    nc = await connect({ servers: natsUrl, name: 'bench-events' });
    const js = jetstream(nc);
    jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: rawStream, subjects: [`${prefix}raw.>`], duplicate_window: 120_000_000_000 });

    const keyByCause = (data: Uint8Array) => (JSON.parse(new TextDecoder().decode(data)) as { causationId: string }).causationId;
    const keyById = (data: Uint8Array) => (JSON.parse(new TextDecoder().decode(data)) as { eventId: string }).eventId;
    const pipeline: Flow = {
      label: 'catalog pipeline',
      publishSubject: `${prefix}content.play_package.built.v1`,
      subscribe: await orderedSubscriber(js, streams.CATALOG_STREAM, `${prefix}catalog.course_version.published.v1`, keyByCause),
      settle: async () => {
        await jsm!.streams.purge(streams.CONTENT_STREAM);
        // The prefetched messages and their outbox rows finish within seconds.
        await new Promise((resolve) => setTimeout(resolve, 5_000));
      },
    };
    // The limit: the same bytes, stored in a stream and consumed by a durable pull consumer with an
    // explicit ack per message, as the catalog's consumer does — without the database in between.
    const durable = `bench_raw_${id}`;
    await jsm.consumers.add(rawStream, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.New,
    });
    const raw: Flow = {
      settle: () => jsm!.streams.purge(rawStream).then(() => undefined),
      label: 'raw JetStream publish + consume (limit)',
      publishSubject: `${prefix}raw.content.play_package.built.v1`,
      subscribe: async (onEvent) => {
        const messages = await (await js.consumers.get(rawStream, durable)).consume({ max_messages: 1_000 });
        const loop = (async () => {
          for await (const m of messages) {
            onEvent(keyById(m.data));
            m.ack();
          }
        })();
        return async () => {
          await messages.close();
          await loop;
        };
      },
    };

    const levels = (process.env.BENCH_EVENTS_CONCURRENCY ?? '1,8').split(',').map(Number);
    // Warm-up of the limit; each worker warms up with its own first burst (the very first one also
    // creates the courses).
    await runFlow(js, raw, 'burst', COURSES);
    const results: Array<FlowResult & { round: number }> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 ? levels : [...levels].reverse();
      for (const concurrency of order) {
        worker = await startWorker(concurrency);
        const flow = { ...pipeline, label: `${pipeline.label}, consumer concurrency ${concurrency}` };
        await runFlow(js, flow, 'burst', COURSES);
        results.push({ ...(await runFlow(js, flow, 'burst', BURST)), round });
        results.push({ ...(await runFlow(js, flow, 'paced', RATE * DURATION)), round });
        await worker.stop();
        worker = undefined;
      }
      results.push({ ...(await runFlow(js, raw, 'burst', BURST)), round });
      results.push({ ...(await runFlow(js, raw, 'paced', RATE * DURATION)), round });
    }

    heading(
      `events: ${prefix}content.play_package.built.v1 → catalog.course_version.published.v1, drain bound ${DRAIN_BOUND_MS / 1000} s`,
    );
    console.log(
      table(
        ['flow', 'run', '>offered ev/s', '>published', '>delivered', '>delivered ev/s', 'latency p50 / p95 / p99 ms', 'load 1m'],
        results.map((r) => [
          r.label,
          r.mode,
          r.offered,
          r.published,
          r.delivered,
          f(r.rate, 0),
          `${f(percentile(r.latencies, 50))} / ${f(percentile(r.latencies, 95))} / ${f(percentile(r.latencies, 99))}`,
          r.load,
        ]),
      ),
    );
    console.log(
      '\nTargets: ≥ 2,000 events/s sustained, p99 < 100 ms; ratio to the limit (delivered ev/s in the same mode and round):\n',
    );
    const rows: Array<Array<string | number>> = [];
    for (const a of results.filter((r) => r.label !== raw.label)) {
      const b = results.find((r) => r.label === raw.label && r.round === a.round && r.mode === a.mode)!;
      const sustained = a.delivered === a.published && a.rate >= 0.95 * RATE;
      rows.push([
        a.round,
        a.label.replace(`${pipeline.label}, `, ''),
        a.mode,
        f(a.rate, 0),
        f(b.rate, 0),
        f(a.rate / b.rate, 2),
        a.mode.startsWith('paced')
          ? `${sustained ? 'met' : 'missed'} / ${percentile(a.latencies, 99) < 100 && sustained ? 'met' : 'missed'}`
          : 'capacity',
      ]);
    }
    console.log(table(['>round', 'pipeline', 'run', '>pipeline ev/s', '>limit ev/s', '>ratio', 'targets (rate / p99)'], rows));
  } finally {
    await worker?.stop();
    await nc?.close();
    await removeBenchStreams(natsUrl, names);
    await db.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
