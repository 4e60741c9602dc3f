// `npm run bench -- gateway-cache`: issue #28's warm GraphQL page. One catalog page,
// `courses(first: 20)` with every catalog field of each course and of its versions (no AI field:
// those are never cached), sent by every connection again and again, so every request after the
// first is a hit, through
//   (a) our gateway with the response cache on (RESPONSE_CACHE_ENABLED=true): L1 in the process and
//       L2 in a cache Redis (REDIS_CACHE_URL: the server of REDIS_URL, its own logical database
//       BENCH_CACHE_REDIS_DB, 5 by default, so other users' keys and ours never meet; `off`: no
//       cache Redis, L1 alone),
//   (b) our gateway with it off: the cold path, for reference,
//   (c) Hive Gateway with its response cache (`responseCaching`, its default in-memory store, the
//       session keyed by the Authorization and X-Tenant-Id headers as ours keys by tenant and
//       scopes), on Hive Router's Rust planner when that combination answers and hits, else on the
//       JavaScript one (the table says which).
// Before anything is timed, every door gives the same answer and both caches are seen to hit (the
// catalog subgraph gets no request for repeated queries). Each timed window is bracketed by reads of
// /metrics: our hit ratio hit / (hit + miss) and the catalog requests each target caused; and by
// /proc/<pid>/stat: each gateway's CPU per request.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { WIDE, startHive, type Target } from './gateway.js';
import {
  DURATION,
  LOAD_HEADERS,
  PREWARM,
  ROUNDS,
  WARMUP,
  cpuMs,
  ensurePeers,
  f,
  heading,
  loadResultRow,
  measure,
  probe,
  sampleRss,
  table,
  type LoadResult,
  type Proc,
} from './lib.js';
import { BENCH_TENANT, seedCourses } from './seed.js';
import { startStack, type Stack } from './stack.js';

/** The wide page of bench/gateway.ts (every catalog field of a course and its versions) for 20 courses, without its AI field. */
const PAGE = WIDE.replace('query BenchWide', 'query BenchCachedPage')
  .replace('first: 50', 'first: 20')
  .replace(/\n\s*aiProvenance\(first: 3\) \{[\s\S]*?\n {6}\}/, '');
if (PAGE.includes('aiProvenance') || !PAGE.includes('first: 20'))
  throw new Error('bench/gateway.ts changed its wide page: adapt PAGE');

/**
 * Hive's response cache, keyed per caller: the token carries tenant and scopes (what our key
 * holds), the header names the tenant. 60 s, as our RESPONSE_CACHE_TTL_SECONDS default.
 */
const HIVE_RESPONSE_CACHE = `
  responseCaching: {
    session: (request) => (request.headers.get('authorization') ?? '') + '|' + (request.headers.get('x-tenant-id') ?? ''),
    ttl: 60_000,
  },`;

/** Repeated queries a cache must answer without the catalog before anything is timed. */
const REPEATS = 20;

type Key = Target['key'];

interface Row extends LoadResult {
  round: number;
  key: Key;
  rssPeakMb: number;
  /** CPU ms of the gateway process per answered request (the catalog's, for the cold path, not counted). */
  cpuPerRequest: number;
  /** Deltas over the timed window. */
  window: Counters;
}

interface Counters {
  hit: number;
  miss: number;
  bypass: number;
  invalidations: number;
  catalogRequests: number;
}

/** The sum of a counter's samples (Prometheus text format) whose line contains `match`. */
function scrapeCounter(text: string, name: string, match = ''): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!(line.startsWith(`${name}{`) || line.startsWith(`${name} `)) || !line.includes(match)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

async function metricsText(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`${baseUrl}/metrics answered ${response.status}`);
  return response.text();
}

/** Our cached gateway's cache counters and the catalog's GraphQL requests, now. */
async function readCounters(cachedGatewayUrl: string, catalogBaseUrl: string): Promise<Counters> {
  const [gateway, catalog] = await Promise.all([metricsText(cachedGatewayUrl), metricsText(catalogBaseUrl)]);
  const cache = (result: string) => scrapeCounter(gateway, 'response_cache_requests_total', `result="${result}"`);
  return {
    hit: cache('hit'),
    miss: cache('miss'),
    bypass: cache('bypass'),
    invalidations: scrapeCounter(gateway, 'response_cache_invalidations_total'),
    catalogRequests: scrapeCounter(catalog, 'http_requests_total', 'route="/graphql"'),
  };
}

const minus = (after: Counters, before: Counters): Counters => ({
  hit: after.hit - before.hit,
  miss: after.miss - before.miss,
  bypass: after.bypass - before.bypass,
  invalidations: after.invalidations - before.invalidations,
  catalogRequests: after.catalogRequests - before.catalogRequests,
});

const hitRatio = (c: Counters) => (c.hit + c.miss === 0 ? Number.NaN : c.hit / (c.hit + c.miss));

/** BENCH_CACHE_REDIS_DB=off: no cache Redis, L1 alone (what the L2 check costs a hit). */
function cacheRedisUrl(): string | undefined {
  if (process.env.BENCH_CACHE_REDIS_DB === 'off') return undefined;
  const state = process.env.REDIS_URL;
  if (!state) throw new Error('gateway-cache needs REDIS_URL (the cache Redis is a logical database on its server)');
  const url = new URL(state);
  url.pathname = `/${process.env.BENCH_CACHE_REDIS_DB ?? '5'}`;
  return url.toString();
}

const twentyCourses = (status: number, body: unknown) => {
  const edges = (body as { data?: { courses?: { edges?: Array<{ node: { versions?: unknown[] } }> } } })?.data?.courses?.edges;
  if (status !== 200 || (body as { errors?: unknown }).errors) return `status ${status} or errors`;
  if (edges?.length !== 20 || edges.some((e) => e.node.versions?.length !== 3)) return 'not 20 courses with 3 versions each';
  return undefined;
};

interface Probe {
  headers: Record<string, string>;
  body: string;
  catalogBaseUrl: string;
}

async function ask(url: string, p: Probe): Promise<string> {
  return JSON.stringify(await probe(url, { method: 'POST', headers: p.headers, body: p.body }, twentyCourses));
}

async function catalogRequests(p: Probe): Promise<number> {
  return scrapeCounter(await metricsText(p.catalogBaseUrl), 'http_requests_total', 'route="/graphql"');
}

/** Undefined when `REPEATS` repeated queries reached the catalog zero times after one to fill the cache. */
async function repeatsMissTheCatalog(url: string, p: Probe): Promise<string | undefined> {
  await ask(url, p);
  const before = await catalogRequests(p);
  for (let i = 0; i < REPEATS; i++) await ask(url, p);
  const reached = (await catalogRequests(p)) - before;
  return reached === 0 ? undefined : `${reached} of ${REPEATS} repeated queries reached the catalog`;
}

/** Hive with its response cache, on the Rust planner if it answers and hits with it, else on the JS one. */
async function startHiveCached(stack: Stack, p: Probe, dir: string): Promise<{ hive: Proc & { url: string }; planner: string }> {
  // No AI field is asked: the AI subgraph is not started, and its URL in the supergraph is never called.
  const aiUrl = 'http://127.0.0.1:9/graphql';
  for (const planner of ['rust', 'javascript'] as const) {
    let hive: (Proc & { url: string }) | undefined;
    try {
      hive = await startHive(stack.catalog.url, aiUrl, dir, planner, HIVE_RESPONSE_CACHE);
      const problem = await repeatsMissTheCatalog(hive.url, p);
      if (!problem) return { hive, planner };
      console.log(`Hive Gateway (${planner} planner) with its response cache: ${problem}`);
    } catch (error) {
      console.log(`Hive Gateway (${planner} planner) with its response cache failed: ${(error as Error).message.slice(0, 500)}`);
    }
    await hive?.stop();
  }
  throw new Error('Hive Gateway with its response cache neither answered nor hit, on either planner');
}

/** Same answer from every door (our cached one twice: the miss that stored it, then the hit). */
async function checkBeforeTiming(targets: Target[], p: Probe, cachedGatewayUrl: string): Promise<void> {
  const reference = await ask(p.catalogBaseUrl + '/graphql', p);
  for (const target of targets) {
    for (const attempt of [1, 2]) {
      if ((await ask(target.url, p)) !== reference) {
        throw new Error(`${target.label} (request ${attempt}) answers differently from the catalog subgraph`);
      }
    }
  }
  const before = await readCounters(cachedGatewayUrl, p.catalogBaseUrl);
  const problem = await repeatsMissTheCatalog(targets.find((t) => t.key === 'a')!.url, p);
  const seen = minus(await readCounters(cachedGatewayUrl, p.catalogBaseUrl), before);
  if (problem || seen.hit < REPEATS) throw new Error(`our response cache does not hit: ${problem ?? ''} ${JSON.stringify(seen)}`);
  console.log(
    `Same ${(reference.length / 1024).toFixed(1)} KB answer from every door; ${REPEATS} repeated queries: ` +
      `0 catalog requests through ours (hits ${seen.hit}, misses ${seen.miss}) and through Hive`,
  );
}

async function timeOne(target: Target, round: number, connections: number, p: Probe, cachedGatewayUrl: string): Promise<Row> {
  const load = { url: target.url, method: 'POST' as const, headers: p.headers, body: p.body, connections };
  // The warm-up is its own run, so the counters below bracket the timed window alone.
  if (WARMUP > 0) await measure(target.label, { ...load, duration: WARMUP, warmup: 0 });
  const before = await readCounters(cachedGatewayUrl, p.catalogBaseUrl);
  const rss = sampleRss(target.proc);
  const cpuBefore = cpuMs([target.proc.pid]);
  const result = await measure(target.label, { ...load, warmup: 0 });
  const cpuPerRequest = (cpuMs([target.proc.pid]) - cpuBefore) / result.requests;
  const rssPeakMb = rss.stop().peakMb;
  const window = minus(await readCounters(cachedGatewayUrl, p.catalogBaseUrl), before);
  return { ...result, round, key: target.key, rssPeakMb, cpuPerRequest, window };
}

async function timeRounds(targets: Target[], connections: number, p: Probe, cachedGatewayUrl: string): Promise<Row[]> {
  const rows: Row[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const target of round % 2 === 1 ? targets : [...targets].reverse()) {
      rows.push(await timeOne(target, round, connections, p, cachedGatewayUrl));
    }
  }
  return rows;
}

function report(rows: Row[], hivePlanner: string, redisUrl: string | undefined): void {
  heading(
    `gateway-cache: the warm catalog page (courses(first: 20), every catalog field and version), the same request on every connection, ${DURATION} s per run`,
  );
  console.log(
    `Hive Gateway: ${hivePlanner} planner, response cache in memory; ours: ${redisUrl ? `L1 + L2 in ${redisUrl}` : 'L1 alone (BENCH_CACHE_REDIS_DB=off)'}.\n`,
  );
  console.log(
    table(
      [
        '>round',
        ...LOAD_HEADERS,
        '>catalog requests',
        '>our hit ratio (hit / miss)',
        '>invalidations',
        '>RSS peak MB',
        'load 1m',
      ],
      rows.map((r) => [
        r.round,
        ...loadResultRow(r, [
          f(r.cpuPerRequest, 2),
          r.window.catalogRequests,
          r.key === 'a' ? `${f(100 * hitRatio(r.window), 3)} % (${r.window.hit} / ${r.window.miss})` : '',
          r.key === 'a' ? r.window.invalidations : '',
          f(r.rssPeakMb, 0),
        ]),
      ]),
    ),
  );
  console.log('\nRatios within each round (target, issue #28: ours cached ≥ 1.5× Hive cached req/s):\n');
  const ratioRows = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const pick = (key: Key) => rows.find((r) => r.round === round && r.key === key)!;
    const [a, b, c] = [pick('a'), pick('b'), pick('c')];
    ratioRows.push([
      round,
      f(a.rps / c.rps, 2),
      f(a.cpuPerRequest / c.cpuPerRequest, 2),
      `${f(a.p50 / c.p50, 2)} / ${f(a.p95 / c.p95, 2)} / ${f(a.p99 / c.p99, 2)}`,
      f(a.rps / b.rps, 2),
      a.rps >= 1.5 * c.rps ? 'met' : 'missed',
    ]);
  }
  console.log(
    table(
      [
        '>round',
        '>req/s ours cached / Hive cached',
        '>CPU per request ours / Hive',
        'p50 / p95 / p99 ours / Hive',
        '>req/s ours cached / ours cold',
        'target',
      ],
      ratioRows,
    ),
  );
}

export async function run(): Promise<void> {
  ensurePeers();
  const connections = Number(process.env.BENCH_GATEWAY_CACHE_CONNECTIONS ?? 32);
  const redisUrl = cacheRedisUrl();
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-gateway-cache-'));
  // The stack's gateway is (b), cache off; (a) is a second gateway process beside it.
  const stack = await startStack({
    // ~22,000 fields by the cost walk's count (lists without a bound count as 10 items), over the
    // 20,000 default: raised as bench/gateway.ts does for its wide page.
    env: { ...(redisUrl ? { REDIS_CACHE_URL: redisUrl } : {}), QUERY_MAX_COST: '100000' },
    seed: (db) => seedCourses(db.url, { courses: 200, versionsPerCourse: 3 }),
  });
  let hive: Proc | undefined;
  try {
    const cached = await stack.addGateway('gateway-cached', { RESPONSE_CACHE_ENABLED: 'true' });
    const token = await stack.keys.token(BENCH_TENANT, 'catalog.read');
    const p: Probe = {
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-tenant-id': BENCH_TENANT },
      body: JSON.stringify({ query: PAGE }),
      catalogBaseUrl: stack.catalog.url.replace(/\/graphql$/, ''),
    };
    const started = await startHiveCached(stack, p, dir);
    hive = started.hive;
    const targets: Target[] = [
      { key: 'a', label: '(a) ours, response cache on', url: `${cached.url}/graphql`, proc: cached },
      { key: 'b', label: '(b) ours, cache off (cold)', url: `${stack.gateway.url}/graphql`, proc: stack.gateway },
      { key: 'c', label: `(c) Hive Gateway cached, ${started.planner} planner`, url: started.hive.url, proc: started.hive },
    ];
    await checkBeforeTiming(targets, p, cached.url);
    for (const target of targets) {
      await measure(target.label, {
        url: target.url,
        method: 'POST',
        headers: p.headers,
        body: p.body,
        connections: 16,
        warmup: 0,
        duration: PREWARM,
      });
    }
    report(await timeRounds(targets, connections, p, cached.url), started.planner, redisUrl);
  } finally {
    await hive?.stop();
    await stack.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
