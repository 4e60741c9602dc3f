// `npm run bench -- cache-staleness`: issue #28's staleness row, "p99 <= 250 ms from the event's
// commit to invalidation on every replica, under load". A catalog subgraph, the event worker
// (outbox relay) and two gateway processes with the response cache (L1 + a cache Redis, events on
// NATS), with cached course reads spread over both gateways throughout. Two phases:
// - writes: a writer changes courses at a steady rate through the first gateway; each write
//   commits an outbox row the worker's relay publishes as catalog.course.metadata_updated;
// - direct: as many events of that shape published by the bench straight to NATS, which leaves
//   the relay out: what the path after it costs (the bound of a relay that never waits).
// For each, every replica's response_cache_invalidation_lag_seconds (occurredAt → its invalidation
// done) is read from /metrics, with where the time went (the relay's share from the outbox rows,
// delivery to a NATS subscriber of the bench) and, in the writes phase, independently of the
// histogram, the time from a write's answer to the first fresh answer seen from outside.
//
// NATS and the cache Redis are private to the run (the machine's binaries on free ports): the
// worker creates the production stream names and the gateways follow every `catalog.>` event, so on
// the shared server they would meet other suites' events and streams. So is Postgres, unless
// BENCH_STALENESS_DATABASE=shared: it tracks commit times, so the relay stamps each event with its
// commit and the replicas record response_cache_invalidation_commit_lag_seconds, the objective
// measured from where it starts (occurredAt is set before the commit: an upper bound).
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type autocannon from 'autocannon';
import pg from 'pg';
import { newUlid } from '../platform/ids.js';
import { startPrivateNats, startPrivatePostgres, startPrivateRedis } from '../test/support/private-services.js';
import { LOAD_HEADERS, PREWARM, f, heading, loadResultRow, measure, percentile, table, type LoadResult } from './lib.js';
import { BENCH_TENANT, OTHER_TENANTS, courseId, seedCourses } from './seed.js';
import { startStack, type Stack } from './stack.js';

const SECONDS = Number(process.env.BENCH_STALENESS_SECONDS ?? 20);
const CONNECTIONS = Number(process.env.BENCH_STALENESS_CONNECTIONS ?? 32);
const WRITES_PER_SECOND = Number(process.env.BENCH_STALENESS_WRITES ?? 20);
/** Bench-tenant courses read under load and written by the writer. */
const HOT = 200;
/** Writes in flight at most; a write due beyond it is skipped (and counted), so the rate stays steady. */
const MAX_WRITES_IN_FLIGHT = 20;
const OBJECTIVE_SECONDS = 0.25;
/**
 * The external samples run in tenants of their own, one per kind of write: a mutation through a
 * gateway drops its course and the tenant's lists (docs/operations.md, "Response cache"), and the cache Redis
 * refuses to store an answer whose tag changed less than a second before its read (its margin
 * against clock steps), so in a tenant written through a gateway within the last second nothing
 * sampled would be cached when written.
 */
const SAMPLE_TENANTS = { 'gateway A': OTHER_TENANTS[1], 'catalog subgraph': OTHER_TENANTS[0] } as const;
/** seedCourses with otherTenants: course n belongs to OTHER_TENANTS[floor(n / 2) % 9] when n is odd. */
const sampleCourse = (via: Sample['via'], k: number) => courseId((via === 'gateway A' ? 3 : 1) + 18 * k);
const POLL_MS = 5;
const POLL_DEADLINE_MS = 10_000;

const READ = 'query One($id: ID!) { course(courseId: $id) { courseId title } }';
const WRITE =
  'mutation Write($id: ID!, $input: UpdateCourseMetadataInput!) { updateCourseMetadata(courseId: $id, input: $input) { courseId title } }';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

// ------------------------------------------------------------------ /metrics

interface Histogram {
  /** Cumulative counts by upper bound, +Inf last. */
  buckets: Array<{ le: number; count: number }>;
  count: number;
  sum: number;
}

const LAG = 'response_cache_invalidation_lag_seconds';
/** The same span from the commit the relay stamped (only when the database tracks commit times). */
const COMMIT_LAG = 'response_cache_invalidation_commit_lag_seconds';

function lagHistogram(text: string, metric = LAG): Histogram {
  const buckets: Histogram['buckets'] = [];
  for (const m of text.matchAll(new RegExp(`^${metric}_bucket\\{le="([^"]+)"\\} (\\S+)$`, 'gm'))) {
    buckets.push({ le: m[1] === '+Inf' ? Infinity : Number(m[1]), count: Number(m[2]) });
  }
  const value = (name: string) => Number(new RegExp(`^${metric}_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return { buckets, count: value('count'), sum: value('sum') };
}

function histogramDelta(after: Histogram, before: Histogram): Histogram {
  return {
    buckets: after.buckets.map((b) => ({ le: b.le, count: b.count - (before.buckets.find((x) => x.le === b.le)?.count ?? 0) })),
    count: after.count - before.count,
    sum: after.sum - before.sum,
  };
}

/** The upper bound of the bucket that holds the q-quantile: bucket resolution, no interpolation. */
function quantileBound(h: Histogram, q: number): number {
  const rank = Math.ceil(q * h.count);
  return h.buckets.find((b) => b.count >= rank)?.le ?? Number.NaN;
}

function shareWithin(h: Histogram, le: number): number {
  return (h.buckets.find((b) => b.le === le)?.count ?? Number.NaN) / h.count;
}

function cacheCounts(text: string): Record<'hit' | 'miss' | 'bypass' | 'redisErrors', number> {
  const out = { hit: 0, miss: 0, bypass: 0, redisErrors: 0 };
  for (const m of text.matchAll(/^response_cache_requests_total\{result="(hit|miss|bypass)"\} (\S+)$/gm)) {
    out[m[1] as keyof typeof out] = Number(m[2]);
  }
  out.redisErrors = Number(/^response_cache_redis_errors_total (\S+)$/m.exec(text)?.[1] ?? 0);
  return out;
}

async function metricsText(gatewayUrl: string): Promise<string> {
  const response = await fetch(`${gatewayUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`${gatewayUrl}/metrics answered ${response.status}`);
  return response.text();
}

// ------------------------------------------------------------------ reads and writes

interface Caller {
  read: Record<string, string>;
  admin: Record<string, string>;
}

async function callers(stack: Stack, tenantId: string): Promise<Caller> {
  const base = { 'x-tenant-id': tenantId, 'content-type': 'application/json' };
  return {
    read: { ...base, authorization: `Bearer ${await stack.keys.token(tenantId, 'catalog.read')}` },
    admin: { ...base, authorization: `Bearer ${await stack.keys.token(tenantId, 'catalog.read catalog.admin')}` },
  };
}

async function readTitle(gatewayUrl: string, headers: Record<string, string>, id: string): Promise<string | undefined> {
  const response = await fetch(`${gatewayUrl}/graphql`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query: READ, variables: { id } }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await response.json()) as { data?: { course?: { title?: { en?: string } } } };
  return body.data?.course?.title?.en;
}

/** One updateCourseMetadata to a GraphQL endpoint (a gateway's or the catalog subgraph's); throws unless it applied. */
async function write(endpoint: string, headers: Record<string, string>, id: string, title: string): Promise<void> {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { ...headers, 'idempotency-key': newUlid(), 'if-match': '*' },
    body: JSON.stringify({ query: WRITE, variables: { id, input: { title: { en: title } } } }),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  if (response.status !== 200 || text.includes('"errors"'))
    throw new Error(`write answered ${response.status}: ${text.slice(0, 300)}`);
}

interface WriterResult {
  ok: number;
  failed: number;
  skipped: number;
  latencies: number[];
  firstError?: string;
}

/** Writes hot courses at WRITES_PER_SECOND through `gatewayUrl` for `seconds`, on a fixed schedule. */
async function writeSteadily(gatewayUrl: string, headers: Record<string, string>, seconds: number): Promise<WriterResult> {
  const result: WriterResult = { ok: 0, failed: 0, skipped: 0, latencies: [] };
  const inFlight = new Set<Promise<void>>();
  const start = performance.now();
  const total = Math.floor(seconds * WRITES_PER_SECOND);
  for (let i = 0; i < total; i++) {
    await sleep(start + (i * 1000) / WRITES_PER_SECOND - performance.now());
    if (inFlight.size >= MAX_WRITES_IN_FLIGHT) {
      result.skipped++;
      continue;
    }
    const sent = performance.now();
    const done = write(`${gatewayUrl}/graphql`, headers, courseId(2 * (i % HOT)), `Written ${i}`).then(
      () => {
        result.ok++;
        result.latencies.push(performance.now() - sent);
      },
      (error: unknown) => {
        result.failed++;
        result.firstError ??= String(error);
      },
    );
    inFlight.add(done);
    void done.finally(() => inFlight.delete(done));
  }
  await Promise.all(inFlight);
  return result;
}

// ------------------------------------------------------------------ external samples

interface Sample {
  /** Where the write went: through gateway A (which drops the tenant before answering), or straight to the catalog. */
  via: 'gateway A' | 'catalog subgraph';
  replica: 'A' | 'B';
  /** Write answered → first answer with the new title at this replica (NaN: not within the deadline). */
  ms: number;
  /** Answers with the old title seen first (0: the replica was already fresh when first asked). */
  stalePolls: number;
  courseId: string;
  /** Wall clock when the write was answered (after its commit), to set against its outbox row. */
  answeredAt: number;
}

async function pollFresh(gatewayUrl: string, headers: Record<string, string>, id: string, title: string, since: number) {
  let stalePolls = 0;
  while (performance.now() - since < POLL_DEADLINE_MS) {
    if ((await readTitle(gatewayUrl, headers, id)) === title) return { ms: performance.now() - since, stalePolls };
    stalePolls++;
    await sleep(POLL_MS);
  }
  return { ms: Number.NaN, stalePolls };
}

/**
 * One sampled write: the course is cached on both replicas first, then written, then each replica
 * is polled until it answers the new title.
 */
async function sampleOnce(stack: Stack, caller: Caller, k: number, via: Sample['via']): Promise<Sample[]> {
  const [a, b] = stack.gateways;
  const id = sampleCourse(via, k);
  for (const gateway of [a, b]) for (let i = 0; i < 2; i++) await readTitle(gateway.url, caller.read, id);
  const title = `Sampled ${k}`;
  await write(via === 'gateway A' ? `${a.url}/graphql` : stack.catalog.url, caller.admin, id, title);
  const answered = performance.now();
  const answeredAt = Date.now();
  const [atA, atB] = await Promise.all([a, b].map((g) => pollFresh(g.url, caller.read, id, title, answered)));
  return [
    { via, replica: 'A', courseId: id, answeredAt, ...atA },
    { via, replica: 'B', courseId: id, answeredAt, ...atB },
  ];
}

/** Sampled writes one after another, alternating where they go, until `seconds` have passed. */
async function sampleSteadily(stack: Stack, seconds: number): Promise<Sample[]> {
  const caller = {
    'gateway A': await callers(stack, SAMPLE_TENANTS['gateway A']),
    'catalog subgraph': await callers(stack, SAMPLE_TENANTS['catalog subgraph']),
  };
  const samples: Sample[] = [];
  const end = performance.now() + seconds * 1000;
  for (let k = 0; performance.now() < end; k++) {
    const via = k % 2 ? 'catalog subgraph' : 'gateway A';
    samples.push(...(await sampleOnce(stack, caller[via], Math.floor(k / 2), via)));
  }
  return samples;
}

// ------------------------------------------------------------------ where the time went

/** occurredAt → this subscriber's receipt, per event (what NATS delivery adds to the relay's share). */
function subscribeLags(nc: NatsConnection): { lags: number[]; stop(): void } {
  const lags: number[] = [];
  const subscription = nc.subscribe('catalog.>', {
    callback: (error, message) => {
      if (error) return;
      try {
        const occurredAt = Date.parse(message.json<{ occurredAt?: string }>().occurredAt ?? '');
        if (Number.isFinite(occurredAt)) lags.push(Date.now() - occurredAt);
      } catch {
        // not an envelope: nothing to measure
      }
    },
  });
  return { lags, stop: () => subscription.unsubscribe() };
}

interface OutboxTimes {
  partitionKey: string;
  occurredAt: number;
  publishedAt: number;
  /** When its transaction committed; NaN unless the server tracks commit times. */
  committedAt: number;
}

/** occurredAt, commit and publishedAt (epoch ms) of the outbox rows written since `since`. */
async function outboxTimes(databaseUrl: string, since: Date): Promise<OutboxTimes[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ partitionKey: string; occurred: string; published: string; committed: string | null }>(
      `SELECT "partitionKey", EXTRACT(EPOCH FROM ("envelope"->>'occurredAt')::timestamptz) * 1000 AS occurred,
              EXTRACT(EPOCH FROM "publishedAt") * 1000 AS published,
              CASE WHEN current_setting('track_commit_timestamp') = 'on'
                THEN EXTRACT(EPOCH FROM pg_xact_commit_timestamp(((txid % 4294967296)::text)::xid)) * 1000 END AS committed
         FROM "OutboxEvent" WHERE "publishedAt" IS NOT NULL AND "createdAt" >= $1`,
      [since],
    );
    return rows.map((r) => ({
      partitionKey: r.partitionKey,
      occurredAt: Number(r.occurred),
      publishedAt: Number(r.published),
      committedAt: r.committed === null ? Number.NaN : Number(r.committed),
    }));
  } finally {
    await client.end();
  }
}

/** Waits (bounded) until the relay has published every outbox row, so no event of a phase lands in the next one. */
async function outboxDrained(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM "OutboxEvent" WHERE "publishedAt" IS NULL');
      if (Number(rows[0].n) === 0) return;
      await sleep(200);
    }
    throw new Error('the outbox was not drained within 30 s');
  } finally {
    await client.end();
  }
}

/** Waits (bounded) until every replica has recorded as many lags as events were delivered. */
async function settle(stack: Stack, before: Histogram[], delivered: () => number): Promise<Histogram[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const now = await Promise.all(stack.gateways.map(async (g) => lagHistogram(await metricsText(g.url))));
    const deltas = now.map((h, i) => histogramDelta(h, before[i]));
    if (deltas.every((d) => d.count >= delivered()) || Date.now() > deadline) return deltas;
    await sleep(200);
  }
}

// ------------------------------------------------------------------ the run

/** Events of the writer's shape published by the bench straight to NATS (occurredAt = now): the path after the relay alone. */
async function publishSteadily(nc: NatsConnection, seconds: number): Promise<number> {
  const eventType = 'catalog.course.metadata_updated';
  const start = performance.now();
  const total = Math.floor(seconds * WRITES_PER_SECOND);
  for (let i = 0; i < total; i++) {
    await sleep(start + (i * 1000) / WRITES_PER_SECOND - performance.now());
    const id = courseId(2 * (i % HOT));
    const envelope = {
      eventId: `evt_${newUlid()}`,
      eventType,
      eventVersion: 1,
      tenantId: BENCH_TENANT,
      partitionKey: id,
      occurredAt: new Date().toISOString(),
      payload: { courseId: id, changedFields: ['title'] },
    };
    nc.publish(`${eventType}.v1`, JSON.stringify(envelope));
  }
  await nc.flush();
  return total;
}

interface Phase<T> {
  loads: LoadResult[];
  hitRatios: number[];
  /** response_cache_redis_errors_total during the phase, per replica. */
  redisErrors: number[];
  /** Per replica, this phase's observations only. */
  lags: Histogram[];
  /** The same from the commit (events the relay stamped: the writes phase, on a server tracking commit times). */
  commitLags: Histogram[];
  /** occurredAt → delivered to the bench's own subscriber, ms. */
  delivered: number[];
  driven: T;
}

interface Reads {
  headers: Record<string, string>;
  requests: autocannon.Request[];
}

function readLoad(reads: Reads, url: string, duration: number, label: string): Promise<LoadResult> {
  return measure(label, {
    url: `${url}/graphql`,
    method: 'POST',
    headers: reads.headers,
    requests: reads.requests,
    connections: CONNECTIONS / 2,
    warmup: 0,
    duration,
  });
}

/** The read load on both replicas for SECONDS while `drive` changes things; what each replica recorded meanwhile. */
async function underReadLoad<T>(stack: Stack, nc: NatsConnection, reads: Reads, drive: () => Promise<T>): Promise<Phase<T>> {
  const before = await Promise.all(stack.gateways.map((g) => metricsText(g.url)));
  const subscriber = subscribeLags(nc);
  await nc.flush();
  const [loads, driven] = await Promise.all([
    Promise.all(stack.gateways.map((g, i) => readLoad(reads, g.url, SECONDS, `reads at gateway ${'AB'[i]}`))),
    drive(),
  ]);
  const after = await Promise.all(stack.gateways.map((g) => metricsText(g.url)));
  await outboxDrained(stack.db.url);
  const lags = await settle(
    stack,
    before.map((text) => lagHistogram(text)),
    () => subscriber.lags.length,
  );
  // Recorded in the same turn as the occurredAt lag (response-cache.ts invalidate): settled with it.
  const settled = await Promise.all(stack.gateways.map((g) => metricsText(g.url)));
  const commitLags = settled.map((text, i) =>
    histogramDelta(lagHistogram(text, COMMIT_LAG), lagHistogram(before[i], COMMIT_LAG)),
  );
  subscriber.stop();
  const hitRatios = after.map((text, i) => {
    const [x, y] = [cacheCounts(text), cacheCounts(before[i])];
    return (x.hit - y.hit) / (x.hit - y.hit + x.miss - y.miss);
  });
  const redisErrors = after.map((text, i) => cacheCounts(text).redisErrors - cacheCounts(before[i]).redisErrors);
  return { loads, hitRatios, redisErrors, lags, commitLags, delivered: subscriber.lags, driven };
}

interface RunFigures {
  writes: Phase<{ writer: WriterResult; samples: Sample[] }>;
  /** occurredAt → publishedAt of the writes phase's outbox rows, ms. */
  outbox: OutboxTimes[];
  direct: Phase<number>;
}

async function measureRun(stack: Stack, nc: NatsConnection): Promise<RunFigures> {
  const hot = await callers(stack, BENCH_TENANT);
  const reads: Reads = {
    headers: hot.read,
    // A random hot course per request: connections walking the same list in step would all miss
    // the same course at once after each invalidation.
    requests: [
      {
        setupRequest: (request) => ({
          ...request,
          body: JSON.stringify({ query: READ, variables: { id: courseId(2 * Math.floor(Math.random() * HOT)) } }),
        }),
      },
    ],
  };
  // Warm: every hot course cached on both replicas (and the processes past their first minute).
  await Promise.all(stack.gateways.map((g, i) => readLoad(reads, g.url, PREWARM, `prewarm ${i}`)));
  const since = new Date(Date.now() - 1_000);
  const writes = await underReadLoad(stack, nc, reads, async () => {
    const [writer, samples] = await Promise.all([
      writeSteadily(stack.gateway.url, hot.admin, SECONDS),
      sampleSteadily(stack, SECONDS),
    ]);
    return { writer, samples };
  });
  const outbox = await outboxTimes(stack.db.url, since);
  const direct = await underReadLoad(stack, nc, reads, () => publishSteadily(nc, SECONDS));
  return { writes, outbox, direct };
}

function msRow(label: string, values: number[]): Array<string | number> {
  const sorted = [...values].sort((x, y) => x - y);
  return [label, sorted.length, f(percentile(sorted, 50)), f(percentile(sorted, 99)), f(sorted.at(-1) ?? Number.NaN)];
}

function lagRows(phase: string, lags: Histogram[]): Array<Array<string | number>> {
  return lags.flatMap((h, i) =>
    h.count === 0
      ? []
      : [
          [
            phase,
            'AB'[i],
            h.count,
            quantileBound(h, 0.5),
            quantileBound(h, 0.99),
            f(h.sum / h.count, 3),
            `${f(100 * shareWithin(h, OBJECTIVE_SECONDS), 1)} %`,
            quantileBound(h, 0.99) <= OBJECTIVE_SECONDS ? 'met' : 'missed',
          ],
        ],
  );
}

function readRows(phase: string, p: Phase<unknown>): Array<Array<string | number>> {
  return p.loads.map((l, i) => [phase, ...loadResultRow(l, [`${f(100 * p.hitRatios[i], 1)} %`, p.redisErrors[i]])]);
}

/** The samples written straight to the catalog, set against their outbox rows: the time before the commit and after it. */
function sampleSpans(r: RunFigures): Array<Array<string | number>> {
  const written = r.writes.driven.samples.filter((x) => x.via === 'catalog subgraph' && x.replica === 'A');
  const pairs = written.flatMap((x) => {
    const row = r.outbox.find((o) => o.partitionKey === x.courseId);
    return row ? [{ sample: x, row }] : [];
  });
  return [
    msRow(
      'samples written to the catalog: occurredAt → write answered (≥ the rest of its transaction)',
      pairs.map((p) => p.sample.answeredAt - p.row.occurredAt),
    ),
    msRow(
      'samples written to the catalog: write answered → published by the relay (≤ the wait after the commit)',
      pairs.map((p) => p.row.publishedAt - p.sample.answeredAt),
    ),
  ];
}

function sampleRows(samples: Sample[]): Array<Array<string | number>> {
  const rows: Array<Array<string | number>> = [];
  for (const via of ['gateway A', 'catalog subgraph'] as const) {
    for (const replica of ['A', 'B'] as const) {
      const s = samples.filter((x) => x.via === via && x.replica === replica);
      const fresh = s.map((x) => x.ms).filter(Number.isFinite);
      const [, n, median, , max] = msRow('', fresh);
      rows.push([
        `write to ${via}, read at ${replica}`,
        n,
        median,
        max,
        s.filter((x) => x.stalePolls > 0).length,
        s.length - fresh.length,
      ]);
    }
  }
  return rows;
}

function report(r: RunFigures): void {
  heading(
    `cache-staleness: two gateway replicas with the response cache (L1 + cache Redis), ${CONNECTIONS} read connections split over both, ${SECONDS} s per phase`,
  );
  console.log(
    `Phases: **writes**: ${WRITES_PER_SECOND} updateCourseMetadata/s through A (each commits an outbox row the worker's relay publishes); **direct**: as many events of the same shape published by the bench straight to NATS (no outbox, no relay). Reads: course(courseId) over ${HOT} cached courses of the writer's tenant (a write through A drops its course and the tenant's lists).\n`,
  );
  console.log(
    table(
      ['phase', ...LOAD_HEADERS, '>hit ratio', '>cache Redis errors', 'load 1m'],
      [...readRows('writes', r.writes), ...readRows('direct', r.direct)],
    ),
  );
  const w = r.writes.driven.writer;
  const latencies = [...w.latencies].sort((x, y) => x - y);
  console.log(
    `\nWriter: ${w.ok} applied, ${w.failed} failed, ${w.skipped} skipped (over ${MAX_WRITES_IN_FLIGHT} in flight); answer p50 / p99 ${f(percentile(latencies, 50))} / ${f(percentile(latencies, 99))} ms${w.firstError ? `; first error: ${w.firstError}` : ''}. Direct: ${r.direct.driven} events published.\n`,
  );
  console.log(
    `response_cache_invalidation_lag_seconds per replica (occurredAt → invalidation done), quantiles at bucket resolution (the upper bound of the bucket holding them):\n`,
  );
  console.log(
    table(
      ['phase', 'replica', '>events', '>p50 ≤ s', '>p99 ≤ s', '>mean s', '>share ≤ 250 ms', 'p99 ≤ 250 ms'],
      [...lagRows('writes', r.writes.lags), ...lagRows('direct', r.direct.lags)],
    ),
  );
  const stamped = r.writes.commitLags.some((h) => h.count > 0);
  console.log(
    stamped
      ? `\nresponse_cache_invalidation_commit_lag_seconds per replica (the commit the relay stamped → invalidation done: the objective's own measure; the direct phase's events have no outbox row, so no commit):\n`
      : '\nresponse_cache_invalidation_commit_lag_seconds: nothing recorded (the database server does not track commit times; BENCH_STALENESS_DATABASE=private, the default, starts one that does).\n',
  );
  if (stamped) {
    console.log(
      table(
        ['phase', 'replica', '>events', '>p50 ≤ s', '>p99 ≤ s', '>mean s', '>share ≤ 250 ms', 'p99 ≤ 250 ms'],
        lagRows('writes', r.writes.commitLags),
      ),
    );
  }
  const committed = r.outbox.filter((o) => Number.isFinite(o.committedAt));
  console.log('\nWhere the time went (exact, ms, every event of the phase):\n');
  console.log(
    table(
      ['span', '>events', '>p50', '>p99', '>max'],
      [
        msRow(
          'writes: occurredAt → published by the relay (outbox row publishedAt)',
          r.outbox.map((o) => o.publishedAt - o.occurredAt),
        ),
        ...(committed.length
          ? [
              msRow(
                'writes: occurredAt → commit (the rest of the transaction)',
                committed.map((o) => o.committedAt - o.occurredAt),
              ),
              msRow(
                'writes: commit → published by the relay',
                committed.map((o) => o.publishedAt - o.committedAt),
              ),
            ]
          : []),
        ...sampleSpans(r),
        msRow('writes: occurredAt → delivered to a NATS subscriber of the bench', r.writes.delivered),
        msRow('direct: occurredAt → delivered to a NATS subscriber of the bench', r.direct.delivered),
      ],
    ),
  );
  console.log(
    `\nFrom outside, independently of the histogram, during the writes phase (in two tenants the writer leaves alone, one per kind of write): a course cached on both replicas, written, then each replica polled every ${POLL_MS} ms; ms from the write's answer to that replica's first fresh answer:\n`,
  );
  console.log(
    table(
      ['sample', '>n', '>median', '>max', '>samples that answered stale first', '>not fresh in 10 s'],
      sampleRows(r.writes.driven.samples),
    ),
  );
}

export async function run(): Promise<void> {
  // A Postgres of the run's own that tracks commit times, so the relay stamps them and the replicas
  // measure from the commit (the machine's server does not track them; `shared` uses it anyway).
  const postgres =
    (process.env.BENCH_STALENESS_DATABASE ?? 'private') === 'private'
      ? await startPrivatePostgres('postgres_staleness', { track_commit_timestamp: 'on' })
      : undefined;
  const nats = await startPrivateNats();
  const cacheRedis = await startPrivateRedis(['--maxmemory', '256mb', '--maxmemory-policy', 'allkeys-lru']);
  let stack: Stack | undefined;
  let nc: NatsConnection | undefined;
  try {
    stack = await startStack({
      seed: (db) => seedCourses(db.url, { courses: 1_000, otherTenants: true }),
      gateways: 2,
      worker: true,
      databaseServerUrl: postgres?.url,
      env: {
        NATS_URL: nats.url,
        REDIS_CACHE_URL: cacheRedis.url,
        RESPONSE_CACHE_ENABLED: 'true',
        // The worker creates the streams on this private server (no producer creates them here).
        CREATE_PRODUCER_STREAMS: 'true',
      },
    });
    nc = await connect({ servers: nats.url });
    report(await measureRun(stack, nc));
  } finally {
    await nc?.close();
    await stack?.stop();
    await cacheRedis.destroy();
    await nats.destroy();
    await postgres?.destroy();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
