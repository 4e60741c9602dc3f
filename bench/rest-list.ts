// `npm run bench -- rest-list`: GET /api/v1/courses?limit=20 through REST-compat (gateway process →
// GraphQL operation → catalog subgraph process → Prisma → Postgres) against the limit, a bare Node
// http server running the same keyset SQL with `pg` (bench/bare-rest.ts). Same database, same
// connections, one run, order flipped every round.
import { pathToFileURL } from 'node:url';
import { canonicalJson } from '../platform/text/canonical-json.js';
import { COURSE_FIELDS } from '../rest-compat/shape.logic.js';
import {
  DURATION,
  LOAD_HEADERS,
  PREWARM,
  cpuPerRequestMeter,
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
import { BENCH_TENANT, seedCourses } from './seed.js';
import { startStack } from './stack.js';

const PATH = '/api/v1/courses?limit=20';

/** The GraphQL operation REST-compat runs for that route (rest-compat/routes.ts), for the layers below it. */
const COURSES = `query RestCourses($first: Int, $after: String) {
  courses(first: $first, after: $after) { edges { cursor node { ${COURSE_FIELDS} } } pageInfo { hasNextPage endCursor } }
}`;

export async function run(): Promise<void> {
  const connectionLevels = (process.env.BENCH_REST_CONNECTIONS ?? '64').split(',').map(Number);
  const stack = await startStack({ seed: (db) => seedCourses(db.url, { courses: 1_000, versionsPerCourse: 1 }) });
  let bare: Proc | undefined;
  let repository: Proc | undefined;
  try {
    const port = await freePort();
    bare = await spawnNode('bare-rest', 'bench/bare-rest.ts', {
      env: { DATABASE_URL: stack.db.url, PORT: String(port), DB_POOL_SIZE: '10' },
      readyUrl: `http://127.0.0.1:${port}/healthz`,
    });
    const token = await stack.keys.token(BENCH_TENANT, 'catalog.read');
    const headers = { authorization: `Bearer ${token}`, 'x-tenant-id': BENCH_TENANT };
    const twenty = (status: number, body: unknown) =>
      status === 200 && (body as { items?: unknown[] }).items?.length === 20 ? undefined : 'not 200 with 20 items';
    const ours = await probe(`${stack.gateway.url}${PATH}`, { headers }, twenty);
    const limit = await probe(`http://127.0.0.1:${port}${PATH}`, { headers }, twenty);
    // Same courses, fields and cursor (canonical JSON: jsonb does not keep key order).
    if (canonicalJson(ours) !== canonicalJson(limit)) throw new Error('REST-compat and the bare server answer differently');

    const graphql = { method: 'POST' as const, headers: { ...headers, 'content-type': 'application/json' } };
    const body = JSON.stringify({ query: COURSES, variables: { first: 20 } });
    // `cpu`: the processes whose CPU a request costs (Postgres's share is the same for every target).
    const targets: Array<{ label: string; url: string; proc: Proc; cpu: Proc[]; post?: boolean }> = [
      {
        label: 'REST-compat (gateway + catalog)',
        url: `${stack.gateway.url}${PATH}`,
        proc: stack.gateway,
        cpu: [stack.gateway, stack.catalog],
      },
      { label: 'bare http + pg (limit)', url: `http://127.0.0.1:${port}${PATH}`, proc: bare, cpu: [bare] },
    ];
    // Where the difference goes: the same page one layer down at a time (BENCH_REST_LAYERS=0 skips).
    if (process.env.BENCH_REST_LAYERS !== '0') {
      targets.push(
        {
          label: 'layer: GraphQL through the gateway',
          url: `${stack.gateway.url}/graphql`,
          proc: stack.gateway,
          cpu: [stack.gateway, stack.catalog],
          post: true,
        },
        {
          label: 'layer: catalog subgraph direct',
          url: stack.catalog.url,
          proc: stack.catalog,
          cpu: [stack.catalog],
          post: true,
        },
      );
      // The page through the catalog's repository (listCourses) behind bare http: the cost of the
      // repository alone, without any GraphQL layer (a pool read since 2026-11-29; Prisma before).
      const repositoryPort = await freePort();
      repository = await spawnNode('bare-rest (repository)', 'bench/bare-rest.ts', {
        env: { DATABASE_URL: stack.db.url, PORT: String(repositoryPort), DB_POOL_SIZE: '10', READ: 'repository' },
        readyUrl: `http://127.0.0.1:${repositoryPort}/healthz`,
      });
      const layerUrl = `http://127.0.0.1:${repositoryPort}${PATH}`;
      if (canonicalJson(await probe(layerUrl, { headers }, twenty)) !== canonicalJson(limit)) {
        throw new Error('the repository layer and the bare server answer differently');
      }
      targets.push({
        label: 'layer: bare http + catalog repository (listCourses)',
        url: layerUrl,
        proc: repository,
        cpu: [repository],
      });
    }
    for (const target of targets) {
      const options = target.post ? { ...graphql, body } : { headers };
      await measure(target.label, { url: target.url, connections: 16, ...options, warmup: 0, duration: PREWARM });
    }
    const rows: Array<LoadResult & { round: number; rss: number; cpuMs: number }> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const connections of connectionLevels) {
        for (const target of round % 2 ? targets : [...targets].reverse()) {
          const rss = sampleRss(target.proc);
          const cpu = cpuPerRequestMeter(target.cpu);
          const options = target.post ? { ...graphql, body } : { headers };
          const result = await measure(target.label, { url: target.url, connections, ...options, beforeMeasuredRun: cpu.start });
          rows.push({ ...result, round, rss: rss.stop().peakMb, cpuMs: await cpu.perRequest(result.requests) });
        }
      }
    }
    heading(`rest-list: GET ${PATH}, 1,000 courses in the tenant, ${DURATION} s per run`);
    console.log(
      table(
        ['>round', ...LOAD_HEADERS, '>RSS peak MB', '>CPU ms / req', 'load 1m'],
        rows.map((r) => [r.round, ...loadResultRow(r, [f(r.rss, 0), f(r.cpuMs, 3)])]),
      ),
    );
    // The performance issue's rows: cold (no response cache) ≥ 33 % of the bare server's RPS and
    // p99 ≤ 3× its p99; warm (RESPONSE_CACHE_ENABLED=true, L1 and a cache Redis) ≥ 1.0× and p99 ≤ its p99.
    const warm = process.env.RESPONSE_CACHE_ENABLED === 'true';
    const goal = warm ? { rps: 1, p99: 1, name: 'rest-list warm' } : { rps: 0.33, p99: 3, name: 'rest-list cold' };
    console.log(
      `\nTargets (${goal.name}${warm ? `, cache Redis ${process.env.REDIS_CACHE_URL ? 'on' : 'off'}` : ''}): ≥ ${f(100 * goal.rps, 0)} % of the limit’s RPS; p99 ≤ ${goal.p99}× the limit’s p99.\n`,
    );
    const ratios: Array<Array<string | number>> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const connections of connectionLevels) {
        const [a, b] = targets
          .slice(0, 2)
          .map((t) => rows.find((r) => r.round === round && r.connections === connections && r.label === t.label)!);
        ratios.push([
          round,
          connections,
          `${f((100 * a.rps) / b.rps, 0)} %`,
          f(a.p99),
          f(a.p99 / b.p99),
          (a.rps >= goal.rps * b.rps ? 'met' : 'missed') + ' / ' + (a.p99 <= goal.p99 * b.p99 ? 'met' : 'missed'),
        ]);
      }
    }
    console.log(
      table(['>round', '>conns', '>RPS ours / limit', '>p99 ours ms', '>p99 ours / limit', 'targets (RPS / p99)'], ratios),
    );
  } finally {
    await repository?.stop();
    await bare?.stop();
    await stack.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
