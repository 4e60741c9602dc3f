// `npm run bench -- gateway`: one nested federated query — 20 courses, 3 versions each (catalog)
// and each course's AI provenance (AI subgraph, an entity fetch on the same courses) — through
//   (a) our gateway (gateway/main.ts: @apollo/gateway, JWT verification, limits, metrics),
//   (b) Hive Gateway (@graphql-hive/gateway, from bench/peers) over the same subgraph processes
//       and the same supergraph,
//   (c) the catalog subgraph directly, for the part it answers alone (the limit: no planning, no
//       second subgraph, no extra hop).
// Same connections, same duration, one run; the order flips every round so drift (other users
// of the machine) does not favour one target. Each gateway is one Node process.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import fsSync from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type autocannon from 'autocannon';
import {
  DURATION,
  LOAD_HEADERS,
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
  spawnNode,
  table,
  type LoadResult,
  type Proc,
} from './lib.js';
import { encodeCursor } from '../subgraphs/catalog/course/course.logic.js';
import { BENCH_TENANT, courseId, seedCourses } from './seed.js';
import { startStack } from './stack.js';

const COURSES = 2_000;
const PAGES = COURSES;
const PEERS = path.join(ROOT, 'bench/peers');
const HIVE_BIN = path.join(PEERS, 'node_modules/@graphql-hive/gateway/dist/bin.js');

const FEDERATED = `query BenchCourses($after: String) {
  courses(first: 20, after: $after) {
    edges { node {
      courseId slug title visibility tags
      versions { courseVersionId versionLabel state sequence durationMinutes }
      aiProvenance(first: 3) { provenanceId status provider model createdAt }
    } }
  }
}`;

/** What the catalog answers alone: the same query without the AI subgraph's field. */
const CATALOG_PART = FEDERATED.replace(/\n\s*aiProvenance[^\n]*/, '');

/**
 * Hive Gateway pulls ~750 packages, so it lives in bench/peers (design.md §3), installed here on
 * first use rather than with the root dependencies.
 */
export function ensurePeers(): void {
  if (fsSync.existsSync(HIVE_BIN)) return;
  console.log('Installing the bench peers (Hive Gateway) into bench/peers/node_modules, once ...');
  const lock = fsSync.existsSync(path.join(PEERS, 'package-lock.json'));
  execFileSync('npm', [lock ? 'ci' : 'install', '--prefix', PEERS, '--no-audit', '--no-fund', '--loglevel=error'], {
    stdio: 'inherit',
    cwd: ROOT,
  });
}

async function startHive(catalogUrl: string, aiUrl: string, dir: string): Promise<Proc & { url: string }> {
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
  },
};\n`,
  );
  const port = await freePort();
  const proc = await spawnNode('hive-gateway', HIVE_BIN, {
    tsx: false,
    cwd: dir,
    args: ['supergraph', supergraph, '--port', String(port), '--host', '127.0.0.1', '-c', pathToFileURL(config).pathname],
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

interface Row extends LoadResult {
  round: number;
  rssPeakMb: number;
}

export async function run(): Promise<void> {
  ensurePeers();
  const connectionLevels = (process.env.BENCH_GATEWAY_CONNECTIONS ?? '16,64').split(',').map(Number);
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-gateway-'));
  const stack = await startStack({
    ai: true,
    seed: (db) => seedCourses(db.url, { courses: COURSES, versionsPerCourse: 3, provenancePerCourse: 3 }),
  });
  let hive: (Proc & { url: string }) | undefined;
  try {
    hive = await startHive(stack.catalog.url, stack.ai!.url, dir);
    const token = await stack.keys.token(BENCH_TENANT, 'catalog.read ai.read');
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-tenant-id': BENCH_TENANT };
    const federated = JSON.stringify({ query: FEDERATED, variables: { after: encodeCursor(courseId(100)) } });
    const catalogOnly = JSON.stringify({ query: CATALOG_PART, variables: { after: encodeCursor(courseId(100)) } });

    // Same answer from every door before anything is timed.
    const expectFull = (status: number, body: unknown) => {
      const edges = (
        body as { data?: { courses?: { edges?: Array<{ node: { versions: unknown[]; aiProvenance?: unknown[] } }> } } }
      )?.data?.courses?.edges;
      if (status !== 200 || (body as { errors?: unknown }).errors) return `status ${status} or errors`;
      if (edges?.length !== 20 || edges.some((e) => e.node.versions.length !== 3)) return 'not 20 courses with 3 versions each';
      return undefined;
    };
    const ours = (await probe(
      `${stack.gateway.url}/graphql`,
      { method: 'POST', headers, body: federated },
      expectFull,
    )) as object;
    const theirs = (await probe(hive.url, { method: 'POST', headers, body: federated }, expectFull)) as object;
    if (JSON.stringify(ours) !== JSON.stringify(theirs)) throw new Error('our gateway and Hive Gateway answer differently');
    const provenance = (ours as { data: { courses: { edges: Array<{ node: { aiProvenance: unknown[] } }> } } }).data.courses
      .edges;
    if (provenance.some((e) => e.node.aiProvenance.length !== 3)) throw new Error('the AI subgraph field is not filled');
    await probe(stack.catalog.url, { method: 'POST', headers, body: catalogOnly }, expectFull);

    const targets: Array<{ label: string; url: string; query: string; proc: Proc }> = [
      { label: '(a) our gateway', url: `${stack.gateway.url}/graphql`, query: FEDERATED, proc: stack.gateway },
      { label: '(b) Hive Gateway', url: hive.url, query: FEDERATED, proc: hive },
      { label: '(c) catalog subgraph direct (limit)', url: stack.catalog.url, query: CATALOG_PART, proc: stack.catalog },
    ];
    for (const target of targets) {
      await measure(target.label, {
        url: target.url,
        connections: 16,
        requests: randomPages(target.query, headers),
        warmup: 0,
        duration: PREWARM,
      });
    }
    const rows: Row[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 === 1 ? targets : [...targets].reverse();
      for (const connections of connectionLevels) {
        for (const target of order) {
          const rss = sampleRss(target.proc);
          const result = await measure(target.label, {
            url: target.url,
            connections,
            requests: randomPages(target.query, headers),
          });
          rows.push({ ...result, round, rssPeakMb: rss.stop().peakMb });
        }
      }
    }

    heading(`gateway: 20 courses × 3 versions + aiProvenance(first: 3), ${DURATION} s per run`);
    console.log(
      table(
        ['>round', ...LOAD_HEADERS, '>RSS peak MB', 'load 1m'],
        rows.map((r) => [r.round, ...loadResultRow(r, [f(r.rssPeakMb, 0)])]),
      ),
    );
    console.log('\nRatios within each round and concurrency (ours / Hive; ours / limit):\n');
    const ratioRows: Array<Array<string | number>> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const connections of connectionLevels) {
        const pick = (prefix: string) =>
          rows.find((r) => r.round === round && r.connections === connections && r.label.startsWith(prefix))!;
        const [a, b, c] = [pick('(a)'), pick('(b)'), pick('(c)')];
        ratioRows.push([
          round,
          connections,
          f(a.rps / b.rps, 2),
          f(a.p95 / b.p95, 2),
          f(a.rps / c.rps, 2),
          a.rps >= b.rps && a.p95 <= b.p95 ? 'met' : 'missed',
        ]);
      }
    }
    console.log(
      table(
        ['>round', '>conns', '>RPS ours/Hive', '>p95 ours/Hive', '>RPS ours/limit', 'target (RPS ≥ Hive, p95 ≤ Hive)'],
        ratioRows,
      ),
    );
  } finally {
    await hive?.stop();
    await stack.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
