// `npm run bench -- gateway`: three federated queries through
//   (a) our gateway (processes/gateway.main.ts: @apollo/gateway, JWT verification, limits, metrics),
//   (b) Hive Gateway (@graphql-hive/gateway, from bench/peers), default JavaScript query planner,
//   (r) Hive Gateway with Hive Router's Rust query planner (`--hive-router-runtime`),
//   (c) the catalog subgraph directly, for the part of the nested query it answers alone (the
//       limit: no planning, no second subgraph, no extra hop),
// all over the same subgraph processes and the same supergraph. The queries:
//   nested    20 courses, 3 versions each (catalog) and each course's AI provenance (an entity
//             fetch to the AI subgraph on the same courses);
//   one-field one course's title: what a gateway costs when the subgraph does almost nothing;
//   wide      50 courses with every field, every version field and every provenance field
//             (~140 KB answers): serialisation and entity merging at size.
// Same connections, same duration; the order flips every round so drift (other users of the
// machine) does not favour one target. Each gateway is one Node process.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type autocannon from 'autocannon';
import {
  cpuMs,
  DURATION,
  HIVE_BIN,
  LOAD_HEADERS,
  ensurePeers,
  PREWARM,
  ROOT,
  ROUNDS,
  f,
  freePort,
  heading,
  loadResultRow,
  measure,
  probe,
  sampleRss,
  settledCpu,
  spawnNode,
  table,
  treeCpuMs,
  type LoadResult,
  type Proc,
} from './lib.js';
import { encodeCursor } from '../subgraphs/catalog/course/course.logic.js';
import { BENCH_TENANT, courseId, seedCourses } from './seed.js';
import { startStack, type Stack } from './stack.js';

const COURSES = 2_000;
const PAGES = COURSES;

const NESTED = `query BenchCourses($after: String) {
  courses(first: 20, after: $after) {
    edges { node {
      courseId slug title visibility tags
      versions { courseVersionId versionLabel state sequence durationMinutes }
      aiProvenance(first: 3) { provenanceId status provider model createdAt }
    } }
  }
}`;

/** What the catalog answers alone: the nested query without the AI subgraph's field. */
const CATALOG_PART = NESTED.replace(/\n\s*aiProvenance[^\n]*/, '');

const ONE_FIELD = `query BenchOneField($after: String) { courses(first: 1, after: $after) { edges { node { title } } } }`;

export const WIDE = `query BenchWide($after: String) {
  courses(first: 50, after: $after) {
    count
    pageInfo { hasNextPage endCursor }
    edges { cursor node {
      courseId tenantId slug title description defaultLocale visibility tags etag sourceDraftId state
      latestVersionLabel createdAt updatedAt
      authors { userId role displayName }
      taxonomy { taxonomyId nodePath }
      cover { assetId }
      localizedTitle { locale text }
      localizedDescription { locale text }
      versions {
        courseVersionId courseId versionLabel publishedBy durationMinutes estimatedReadingMinutes locales
        becameLatest changelog state sequence createdAt
        moduleSummaries { id title lessonCount durationMinutes hasAssessments }
        playPackage { playPackageId sha256 format }
      }
      aiProvenance(first: 3) {
        provenanceId tenantId actorType actorId featureKey status mode templateId templateVersion
        templateHash renderedPromptHash ruleId ruleVersion provider model outputHash inputTokens
        outputTokens moderation reviewState review facilityId specialty subjectRef residency
        legacyBackfill heldTextExpiresAt errorCode latencyMs providerLatencyMs createdAt completedAt
        releasedText
        attempts { provider model attempt outcome latencyMs errorCode }
      }
    } }
  }
}`;

type Edges = Array<{ node: { versions?: unknown[]; aiProvenance?: unknown[] } }>;
const edgesOf = (body: unknown): Edges | undefined => (body as { data?: { courses?: { edges?: Edges } } })?.data?.courses?.edges;

interface Query {
  name: string;
  document: string;
  /** Courses per page, versions and provenance per course the answer must hold before timing. */
  courses: number;
  versions?: number;
  provenance?: number;
}

const QUERIES: Query[] = [
  { name: 'nested', document: NESTED, courses: 20, versions: 3, provenance: 3 },
  { name: 'one-field', document: ONE_FIELD, courses: 1 },
  { name: 'wide', document: WIDE, courses: 50, versions: 3, provenance: 3 },
];

function expectAnswer(query: Query, withProvenance = query.provenance !== undefined) {
  return (status: number, body: unknown): string | undefined => {
    const edges = edgesOf(body);
    if (status !== 200 || (body as { errors?: unknown }).errors) return `status ${status} or errors`;
    if (edges?.length !== query.courses) return `not ${query.courses} courses`;
    if (query.versions !== undefined && edges.some((e) => e.node.versions?.length !== query.versions))
      return `not ${query.versions} versions per course`;
    if (withProvenance && edges.some((e) => e.node.aiProvenance?.length !== query.provenance))
      return 'the AI subgraph field is not filled';
    return undefined;
  };
}

/** `extraConfig`: more members of Hive's `gatewayConfig` object, as JavaScript source (gateway-cache.ts). */
export async function startHive(
  catalogUrl: string,
  aiUrl: string,
  dir: string,
  planner: 'javascript' | 'rust',
  extraConfig = '',
): Promise<Proc & { url: string }> {
  // The committed supergraph names placeholder URLs (our gateway maps names at start); Hive reads
  // URLs from the file, so it gets a copy pointing at the running subgraphs.
  const sdl = (await fs.readFile(path.join(ROOT, 'gateway/supergraph.graphql'), 'utf8'))
    .replace('http://catalog.subgraph.invalid/graphql', catalogUrl)
    .replace('http://ai.subgraph.invalid/graphql', aiUrl);
  const supergraph = path.join(dir, 'supergraph.graphql');
  await fs.writeFile(supergraph, sdl);
  // The subgraphs authenticate every request themselves, so the peer forwards the same two headers
  // our gateway forwards; nothing else is configured (defaults, as a team adopting it would start).
  const config = path.join(dir, 'gateway.config.mjs');
  await fs.writeFile(
    config,
    `export const gatewayConfig = {
  propagateHeaders: {
    fromClientToSubgraphs: ({ request }) => ({
      authorization: request.headers.get('authorization') ?? undefined,
      'x-tenant-id': request.headers.get('x-tenant-id') ?? undefined,
    }),
  },${extraConfig}
};\n`,
  );
  const port = await freePort();
  const args = ['supergraph', supergraph, '--port', String(port), '--host', '127.0.0.1', '-c', pathToFileURL(config).pathname];
  // Hive Router's query planner (Rust, in process through napi) instead of the JavaScript one.
  if (planner === 'rust') args.push('--hive-router-runtime');
  const proc = await spawnNode(planner === 'rust' ? 'hive-gateway-rust' : 'hive-gateway', HIVE_BIN, {
    tsx: false,
    cwd: dir,
    args,
    readyUrl: `http://127.0.0.1:${port}/readiness`,
  });
  return Object.assign(proc, { url: `http://127.0.0.1:${port}/graphql` });
}

/**
 * Every request asks for a random one of ~2,000 pages (same document, same plan, different rows):
 * with one identical request from every connection, Hive Gateway's in-flight deduplication would
 * merge concurrent requests into one subgraph call and measure a cache, not the gateway.
 */
function randomPages(query: string, headers: Record<string, string>): autocannon.Request[] {
  return [
    {
      method: 'POST',
      headers,
      setupRequest: (request) => ({
        ...request,
        body: JSON.stringify({ query, variables: { after: encodeCursor(courseId(Math.floor(Math.random() * (PAGES - 20)))) } }),
      }),
    },
  ];
}

export interface Target {
  key: 'a' | 'b' | 'r' | 'c';
  label: string;
  url: string;
  proc: Proc;
}

interface Row extends LoadResult {
  round: number;
  query: string;
  key: Target['key'];
  rssPeakMb: number;
  cpu: CpuPerPage;
}

/** CPU time per page served during a measured run, ms, by process (the target, each subgraph, Postgres). */
interface CpuPerPage {
  /** Pages counted where they end for every target: the catalog subgraph's answers (one per page). */
  pages: number;
  target: number;
  catalog: number;
  ai: number;
  postgres: number;
}

/**
 * Reads the CPU of every process a page costs, around a measured run: the target (the gateway, or
 * the catalog for the limit row), both subgraphs and the Postgres backends of the bench database.
 * Both readings wait until the processes are idle, so the pages still in flight when autocannon
 * stops are counted with the CPU they cost. Same-run req/s depends on what else runs on the
 * machine; CPU per page much less, and it splits a page's cost between the gateway and the subgraphs.
 */
function cpuMeter(stack: Stack, target: Target) {
  const read = async () => {
    await settledCpu([target.proc, stack.catalog, stack.ai!]);
    const backends = await backendPids(stack);
    return {
      target: treeCpuMs(target.proc.pid),
      catalog: treeCpuMs(stack.catalog.pid),
      ai: treeCpuMs(stack.ai!.pid),
      postgres: new Map(backends.map((pid) => [pid, cpuMs([pid])])),
      pages: await answeredByCatalog(stack.catalog.url),
    };
  };
  let first: Awaited<ReturnType<typeof read>> | undefined;
  return {
    start: async () => {
      first = await read();
    },
    stop: async (): Promise<CpuPerPage> => {
      const last = await read();
      const pages = last.pages - first!.pages;
      // Backends that ended or started between the readings are left out (the pools keep theirs).
      let postgres = 0;
      for (const [pid, ms] of last.postgres) postgres += first!.postgres.has(pid) ? ms - first!.postgres.get(pid)! : 0;
      return {
        pages,
        target: target.key === 'c' ? 0 : (last.target - first!.target) / pages,
        catalog: (last.catalog - first!.catalog) / pages,
        ai: (last.ai - first!.ai) / pages,
        postgres: postgres / pages,
      };
    },
  };
}

async function backendPids(stack: Stack): Promise<number[]> {
  const rows = await stack.db.prisma.$queryRaw<Array<{ pid: number }>>`
    SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`;
  return rows.map((row) => row.pid);
}

/** The catalog's POST answers so far (its /metrics): one per page, whichever gateway asked. */
async function answeredByCatalog(graphqlUrl: string): Promise<number> {
  const text = await (await fetch(new URL('/metrics', graphqlUrl))).text();
  let count = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('http_requests_total{') && line.includes('method="POST"')) count += Number(line.split(' ').at(-1));
  }
  return count;
}

/** Same answer from every door before anything is timed; our answer is the reference. */
async function checkAnswers(query: Query, gateways: Target[], catalog: Target, headers: Record<string, string>) {
  const body = JSON.stringify({ query: query.document, variables: { after: encodeCursor(courseId(100)) } });
  const answers: string[] = [];
  for (const target of gateways) {
    const answer = await probe(target.url, { method: 'POST', headers, body }, expectAnswer(query));
    answers.push(JSON.stringify(answer));
  }
  answers.forEach((answer, index) => {
    if (answer !== answers[0]) throw new Error(`${query.name}: ${gateways[index]!.label} answers differently from ours`);
  });
  console.log(`${query.name}: the same ${(answers[0]!.length / 1024).toFixed(1)} KB answer from every gateway`);
  if (query.name === 'nested') {
    const catalogBody = JSON.stringify({ query: CATALOG_PART, variables: { after: encodeCursor(courseId(100)) } });
    await probe(catalog.url, { method: 'POST', headers, body: catalogBody }, expectAnswer(query, false));
  }
}

/**
 * The targets a query is timed on: the three gateways, and the catalog alone for the nested query
 * (its catalog part) and the one-field query (all of it is the catalog's: the gateway's own cost).
 */
const targetsFor = (query: Query, gateways: Target[], catalog: Target) =>
  query.name === 'nested' || query.name === 'one-field' ? [...gateways, catalog] : gateways;

const documentFor = (query: Query, target: Target) =>
  target.key === 'c' && query.name === 'nested' ? CATALOG_PART : query.document;

async function timeRounds(
  stack: Stack,
  queries: Query[],
  gateways: Target[],
  catalog: Target,
  headers: Record<string, string>,
  connectionLevels: number[],
): Promise<Row[]> {
  const rows: Row[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const query of queries) {
      const targets = targetsFor(query, gateways, catalog);
      const order = round % 2 === 1 ? targets : [...targets].reverse();
      for (const connections of connectionLevels) {
        for (const target of order) {
          const rss = sampleRss(target.proc);
          const cpu = cpuMeter(stack, target);
          const result = await measure(`${target.label} · ${query.name}`, {
            url: target.url,
            connections,
            requests: randomPages(documentFor(query, target), headers),
            beforeMeasuredRun: cpu.start,
          });
          const rssPeakMb = rss.stop().peakMb;
          rows.push({ ...result, round, query: query.name, key: target.key, rssPeakMb, cpu: await cpu.stop() });
        }
      }
    }
  }
  return rows;
}

function report(rows: Row[], queries: Query[], connectionLevels: number[]): void {
  heading(`gateway: nested, one-field and wide queries, ${DURATION} s per run, Node ${process.version}`);
  console.log(
    table(
      ['>round', ...LOAD_HEADERS, '>RSS peak MB', 'load 1m'],
      rows.map((r) => [r.round, ...loadResultRow(r, [f(r.rssPeakMb, 0)])]),
    ),
  );
  console.log(
    "\nCPU per page, ms (user + system; pages counted at the catalog, in flight ones included; Postgres: the bench database's backends):\n",
  );
  console.log(
    table(
      ['>round', 'target', '>pages', '>target', '>catalog', '>AI subgraph', '>Postgres', '>sum'],
      rows.map((r) => {
        const { pages, target, catalog, ai, postgres } = r.cpu;
        return [r.round, r.label, pages, f(target), f(catalog), f(ai), f(postgres), f(target + catalog + ai + postgres)];
      }),
    ),
  );
  console.log('\nRatios within each round, query and concurrency (ours / Hive JS planner; ours / Hive Rust planner):\n');
  const ratioRows: Array<Array<string | number>> = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const query of queries) {
      for (const connections of connectionLevels) {
        const pick = (key: Target['key']) =>
          rows.find((r) => r.round === round && r.query === query.name && r.connections === connections && r.key === key)!;
        const [a, b, r] = [pick('a'), pick('b'), pick('r')];
        const catalogAlone = rows.find(
          (x) => x.round === round && x.query === query.name && x.connections === connections && x.key === 'c',
        );
        const limit = catalogAlone ? f(a.rps / catalogAlone.rps, 2) : '';
        // The performance issue's rows: ≥ 1.25× Hive Gateway on the Rust planner, p95 no worse.
        const met = a.rps >= 1.25 * r.rps && a.p95 <= r.p95;
        ratioRows.push([
          round,
          query.name,
          connections,
          f(a.rps / b.rps, 2),
          f(a.rps / r.rps, 2),
          f(a.p95 / r.p95, 2),
          limit,
          met ? 'met' : 'missed',
        ]);
      }
    }
  }
  console.log(
    table(
      [
        '>round',
        'query',
        '>conns',
        '>RPS ours/Hive JS',
        '>RPS ours/Hive Rust',
        '>p95 ours/Hive Rust',
        '>RPS ours/limit',
        'target (RPS ≥ 1.25× Rust, p95 ≤ Rust)',
      ],
      ratioRows,
    ),
  );
}

export async function run(): Promise<void> {
  ensurePeers();
  const connectionLevels = (process.env.BENCH_GATEWAY_CONNECTIONS ?? '32').split(',').map(Number);
  const only = process.env.BENCH_GATEWAY_QUERIES?.split(',');
  const queries = only ? QUERIES.filter((q) => only.includes(q.name)) : QUERIES;
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-gateway-'));
  const stack = await startStack({
    ai: true,
    // The wide query resolves ~64,000 fields by the cost walk's count (lists without a bound count
    // as 10 items), over the 20,000 default: an analyst who needs it raises the limit, as here.
    env: { QUERY_MAX_COST: '100000' },
    seed: (db) => seedCourses(db.url, { courses: COURSES, versionsPerCourse: 3, provenancePerCourse: 3 }),
  });
  const peers: Array<Proc & { url: string }> = [];
  try {
    const hiveJs = await startHive(stack.catalog.url, stack.ai!.url, dir, 'javascript');
    peers.push(hiveJs);
    const hiveRust = await startHive(stack.catalog.url, stack.ai!.url, dir, 'rust');
    peers.push(hiveRust);
    const token = await stack.keys.token(BENCH_TENANT, 'catalog.read ai.assist');
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-tenant-id': BENCH_TENANT };
    const gateways: Target[] = [
      { key: 'a', label: '(a) our gateway', url: `${stack.gateway.url}/graphql`, proc: stack.gateway },
      { key: 'b', label: '(b) Hive Gateway, JS planner', url: hiveJs.url, proc: hiveJs },
      { key: 'r', label: '(r) Hive Gateway, Rust planner', url: hiveRust.url, proc: hiveRust },
    ];
    const catalog: Target = {
      key: 'c',
      label: '(c) catalog subgraph direct (limit)',
      url: stack.catalog.url,
      proc: stack.catalog,
    };
    for (const query of queries) await checkAnswers(query, gateways, catalog, headers);

    for (const query of queries) {
      for (const target of targetsFor(query, gateways, catalog)) {
        await measure(`${target.label} · ${query.name}`, {
          url: target.url,
          connections: 16,
          requests: randomPages(documentFor(query, target), headers),
          warmup: 0,
          duration: PREWARM,
        });
      }
    }
    const rows = await timeRounds(stack, queries, gateways, catalog, headers, connectionLevels);
    report(rows, queries, connectionLevels);
  } finally {
    for (const peer of peers) await peer.stop();
    await stack.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
