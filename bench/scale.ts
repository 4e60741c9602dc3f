// `npm run bench -- scale`: does latency stay flat as the tenant grows? The same stack (gateway +
// catalog processes) measured while the bench tenant grows to 1k, 100k and (BENCH_SCALE_1M=1)
// 1M courses, with as many courses again spread over nine other tenants and interleaved with its
// ids (10 tenants, the bench tenant's rows never one contiguous key range). At each size:
//   - GET /api/v1/courses?limit=20 (first page) and a page from the middle of the tenant (cursor),
//   - GraphQL course(courseId) for random courses of the tenant,
//   - the plans Postgres picks for both statements (index scans, rows and buffers touched).
// Then the outbox relay draining a backlog of 100k unpublished rows to JetStream (NATS_URL).
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { encodeCursor } from '../subgraphs/catalog/course/course.logic.js';
import { COURSE_FIELDS } from '../rest-compat/shape.logic.js';
import {
  DURATION,
  LOAD_HEADERS,
  f,
  freePort,
  freshDatabase,
  heading,
  loadResultRow,
  measure,
  probe,
  spawnNode,
  table,
  type LoadResult,
  type Proc,
} from './lib.js';
import { BENCH_TENANT, courseId, seedCourses } from './seed.js';
import { startStack } from './stack.js';
import { benchStreams, removeBenchStreams } from './streams.js';

const CONNECTIONS = Number(process.env.BENCH_SCALE_CONNECTIONS ?? 8);
const BACKLOG = Number(process.env.BENCH_SCALE_BACKLOG ?? 100_000);
const RELAY_BOUND_MS = Number(process.env.BENCH_SCALE_RELAY_SECONDS ?? 300) * 1000;

/** Bench-tenant course k is course n = 2k (the odd ones belong to the other nine tenants). */
const tenantCourse = (k: number) => courseId(2 * k);

async function plan(url: string, sql: string, params: unknown[]): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, params);
    const root = (rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode; 'Execution Time': number }>)[0];
    const nodes: string[] = [];
    const walk = (node: PlanNode) => {
      const removed = node['Rows Removed by Filter'] ? `, ${node['Rows Removed by Filter']} filtered out` : '';
      nodes.push(
        `${node['Node Type']}${node['Index Name'] ? ` on ${node['Index Name']}` : ''} (${node['Actual Rows']} rows${removed})`,
      );
      for (const child of node.Plans ?? []) walk(child);
    };
    walk(root.Plan);
    const buffers = (root.Plan['Shared Hit Blocks'] ?? 0) + (root.Plan['Shared Read Blocks'] ?? 0);
    return `${nodes.join(' → ')}; ${buffers} buffers; ${root['Execution Time'].toFixed(2)} ms`;
  } finally {
    await client.end();
  }
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Rows Removed by Filter'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

// The statements the catalog's repository sends (Prisma, course.repo.ts), as plain SQL.
const LIST_SQL = `SELECT * FROM "Course" WHERE "tenantId" = $1 AND ($2::text IS NULL OR id > $2) ORDER BY id ASC LIMIT 21`;
/** The relay's batch statement (events/publish/outbox-relay.ts) without the cross-database refinement of its horizon. */
const RELAY_SQL = `SELECT id FROM "OutboxEvent" WHERE "publishedAt" IS NULL AND txid < (pg_snapshot_xmin(pg_current_snapshot())::text::bigint) ORDER BY id LIMIT 100`;
const BY_ID_SQL = `SELECT * FROM "Course" WHERE "tenantId" = $1 AND id = ANY($2::text[])`;

async function measureSize(
  stack: Awaited<ReturnType<typeof startStack>>,
  size: number,
): Promise<{ results: LoadResult[]; plans: string[] }> {
  const token = await stack.keys.token(BENCH_TENANT, 'catalog.read');
  const headers = { authorization: `Bearer ${token}`, 'x-tenant-id': BENCH_TENANT };
  const middle = encodeCursor(tenantCourse(Math.floor(size / 2)));
  const twenty = (status: number, body: unknown) =>
    status === 200 && (body as { items?: unknown[] }).items?.length === 20 ? undefined : 'not 200 with 20 items';
  await probe(`${stack.gateway.url}/api/v1/courses?limit=20&cursor=${middle}`, { headers }, twenty);
  const query = `query ScaleCourse($courseId: ID!) { course(courseId: $courseId) { ${COURSE_FIELDS} } }`;
  const gqlHeaders = { ...headers, 'content-type': 'application/json' };
  const randomCourse: import('autocannon').Request[] = [
    {
      method: 'POST',
      path: '/graphql',
      headers: gqlHeaders,
      setupRequest: (request) => ({
        ...request,
        body: JSON.stringify({ query, variables: { courseId: tenantCourse(Math.floor(Math.random() * size)) } }),
      }),
    },
  ];
  await probe(
    `${stack.gateway.url}/graphql`,
    { method: 'POST', headers: gqlHeaders, body: JSON.stringify({ query, variables: { courseId: tenantCourse(size - 1) } }) },
    (status, body) => (status === 200 && (body as { data?: { course?: unknown } }).data?.course ? undefined : 'course not found'),
  );
  const label = (what: string) => `${what} @ ${size.toLocaleString('en')}`;
  const results = [
    await measure(label('rest-list first page'), {
      url: `${stack.gateway.url}/api/v1/courses?limit=20`,
      headers,
      connections: CONNECTIONS,
    }),
    await measure(label('rest-list middle page'), {
      url: `${stack.gateway.url}/api/v1/courses?limit=20&cursor=${middle}`,
      headers,
      connections: CONNECTIONS,
    }),
    await measure(label('course(courseId) random'), { url: stack.gateway.url, requests: randomCourse, connections: CONNECTIONS }),
  ];
  const mid = tenantCourse(Math.floor(size / 2));
  const plans = [
    `list, first page @ ${size}: ${await plan(stack.db.url, LIST_SQL, [BENCH_TENANT, null])}`,
    `list, middle page @ ${size}: ${await plan(stack.db.url, LIST_SQL, [BENCH_TENANT, mid])}`,
    `by id @ ${size}: ${await plan(stack.db.url, BY_ID_SQL, [BENCH_TENANT, [tenantCourse(Math.floor(size / 3))]])}`,
  ];
  return { results, plans };
}

/** 100k unpublished outbox rows, then the relay of a fresh worker drains them to JetStream. */
async function relayBacklog(): Promise<Array<Array<string | number>>> {
  const natsUrl = process.env.NATS_URL;
  if (!natsUrl) return [['(skipped: set NATS_URL)', '-', '-', '-', '-']];
  const streams = benchStreams();
  const db = await freshDatabase();
  let worker: Proc | undefined;
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const seeded = Date.now();
    await client.query(`
      INSERT INTO "OutboxEvent" ("eventId", "eventType", "eventVersion", subject, "tenantId", "partitionKey", envelope, headers)
      SELECT e.id, 'catalog.course.metadata_updated', 1, 'catalog.course.metadata_updated.v1', '${BENCH_TENANT}', c.id,
             jsonb_build_object('eventId', e.id, 'eventType', 'catalog.course.metadata_updated', 'eventVersion', 1,
               'schemaUri', 'schemas://catalog/course/metadata_updated/v1', 'tenantId', '${BENCH_TENANT}', 'partitionKey', c.id,
               'occurredAt', now(), 'ingestedAt', now(), 'correlationId', e.id, 'causationId', e.id,
               'source', jsonb_build_object('service', 'catalog', 'instance', 'bench', 'commit', 'bench'),
               'actor', jsonb_build_object('type', 'system', 'id', 'bench'), 'retentionClass', 'operational', 'dataResidency', 'EU',
               'payload', jsonb_build_object('courseId', c.id, 'changedFields', jsonb_build_array('title'),
                 'next', jsonb_build_object('title', jsonb_build_object('en', 'Course ' || n)))),
             '{}'::jsonb
      FROM generate_series(0, ${BACKLOG - 1}) AS n,
           LATERAL (SELECT upper(lpad(to_hex(n), 26, '0')) AS id) e,
           LATERAL (SELECT 'crs_' || upper(lpad(to_hex(n % 5000), 26, '0')) AS id) c`);
    await client.query('ANALYZE "OutboxEvent"');
    const seedSeconds = (Date.now() - seeded) / 1000;
    const relayPlanBefore = await plan(db.url, RELAY_SQL, []);
    const metricsPort = await freePort();
    const started = Date.now();
    worker = await spawnNode('event-worker', 'bench/events-worker.ts', {
      env: {
        DATABASE_URL: db.url,
        NATS_URL: natsUrl,
        DB_POOL_SIZE: '4',
        METRICS_PORT: String(metricsPort),
        ...streams.env,
      },
      readyUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    });
    let left = BACKLOG;
    while (left > 0 && Date.now() - started < RELAY_BOUND_MS) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      left = Number((await client.query(`SELECT count(*) AS n FROM "OutboxEvent" WHERE "publishedAt" IS NULL`)).rows[0].n);
    }
    const { rows } = await client.query(
      `SELECT count(*) AS n, extract(epoch FROM max("publishedAt") - min("publishedAt")) AS seconds FROM "OutboxEvent" WHERE "publishedAt" IS NOT NULL`,
    );
    const published = Number(rows[0].n);
    const seconds = Number(rows[0].seconds) || Number.NaN;
    // Autovacuum would have analyzed the table by now in production; do it, then plan the idle poll.
    await client.query('ANALYZE "OutboxEvent"');
    const relayPlanAfter = await plan(db.url, RELAY_SQL, []);
    return [
      [BACKLOG, f(seedSeconds, 0), published, f(seconds, 1), f(published / seconds, 0), `with the backlog: ${relayPlanBefore}`],
      ['', '', '', '', '', `drained, idle poll: ${relayPlanAfter}`],
    ];
  } finally {
    await worker?.stop();
    await client.end();
    // The worker created its bench streams on the shared server; nothing else uses them.
    await removeBenchStreams(natsUrl, streams);
    await db.close();
  }
}

export async function run(): Promise<void> {
  const sizes = [1_000, 100_000, ...(process.env.BENCH_SCALE_1M === '1' ? [1_000_000] : [])];
  const stack = await startStack();
  const results: LoadResult[] = [];
  const plans: string[] = [];
  const seeding: Array<Array<string | number>> = [];
  try {
    let seeded = 0;
    for (const size of sizes) {
      const started = Date.now();
      await seedCourses(stack.db.url, { courses: size, from: seeded, otherTenants: true });
      seeding.push([size.toLocaleString('en'), (2 * size).toLocaleString('en'), f((Date.now() - started) / 1000, 0)]);
      seeded = size;
      const measured = await measureSize(stack, size);
      results.push(...measured.results);
      plans.push(...measured.plans);
    }
  } finally {
    await stack.stop();
  }
  const relay = await relayBacklog();

  heading(`scale: ${CONNECTIONS} connections, ${DURATION} s per run, bench tenant + 9 others (as many courses again)`);
  console.log(table(['>bench-tenant courses', '>rows in Course', '>seed s'], seeding));
  console.log();
  console.log(
    table(
      [...LOAD_HEADERS, 'load 1m'],
      results.map((r) => loadResultRow(r)),
    ),
  );
  console.log('\nGrowth from the smallest to the largest size (target: within 2x):\n');
  const kinds = ['rest-list first page', 'rest-list middle page', 'course(courseId) random'];
  console.log(
    table(
      ['what', '>p50 ×', '>p95 ×', '>req/s ×'],
      kinds.map((kind) => {
        const of = results.filter((r) => r.label.startsWith(kind));
        const [a, b] = [of[0], of.at(-1)!];
        return [kind, f(b.p50 / a.p50, 2), f(b.p95 / a.p95, 2), f(b.rps / a.rps, 2)];
      }),
    ),
  );
  console.log('\nPlans (EXPLAIN ANALYZE, BUFFERS):\n');
  for (const line of plans) console.log(`- ${line}`);
  console.log('\nOutbox relay, backlog drained to JetStream:\n');
  console.log(table(['>backlog rows', '>seed s', '>published', '>first→last publish s', '>rows/s', 'relay batch plan'], relay));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
