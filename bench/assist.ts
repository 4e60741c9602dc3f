// `npm run bench -- assist` (or `npx tsx bench/assist.ts`): the AI gateway's own overhead on the
// assist path, with the tenant's quota on and then off in the same run.
//
// Starts the AI subgraph as its own process (processes/ai.main.ts) on a throw-away DATA_DIR, routes
// a tenant to the `mock` provider at zero latency, and drives `assist` with autocannon at 1, 10 and
// 100 concurrent connections. Overhead per request = client-measured latency minus the provider
// time the gateway reports for that request (timings.providerMs), so what is left is HTTP, auth,
// quota, template, routing, provenance + audit write.
//
// Database: a temporary database on the server of DATABASE_URL, dropped at the end; embedded PGlite
// when it is not set (then only quota off: the tenant row lives inside the child's database).
// REDIS_URL, when set, backs the quota (enabled for the bench tenant with limits far above the
// load, so its cost is measured but never refuses). BENCH_DURATION_SECONDS (default 10) per level,
// after a 3-second warm-up.
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { generateEd25519, mintToken } from '../platform/auth/dev-keys.js';
import { newUlid } from '../platform/ids.js';
import { createTestDatabase } from '../test/support/database.js';
import { ROUNDS, freePort, heading } from './lib.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LEVELS = (process.env.BENCH_ASSIST_LEVELS ?? '1,10,100').split(',').map(Number);
const DURATION = Number(process.env.BENCH_DURATION_SECONDS ?? 10);
const TENANT = 'ten_01JDBENCH0000000000000000A';

export async function waitForHealth(url: string, child: ChildProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the AI subgraph exited with code ${child.exitCode}`);
    const ok = await fetch(url, { signal: AbortSignal.timeout(1000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('the AI subgraph did not become healthy in time');
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Routes the token's tenant's `portal.triage` to the mock provider (a routing rule made through the subgraph). */
export async function routeToMock(base: string, headers: Record<string, string>): Promise<void> {
  const rule = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { ...headers, 'idempotency-key': newUlid() },
    body: JSON.stringify({
      query: `mutation { createRoutingRule(input: { featureKey: "portal.triage", primary: { provider: "mock", model: "mock-1" }, fallbacks: [] }) { ruleId } }`,
    }),
  }).then((r) => r.json() as Promise<{ errors?: unknown }>);
  if (rule.errors) throw new Error(`could not route the bench tenant to mock: ${JSON.stringify(rule.errors)}`);
}

export interface LevelResult {
  connections: number;
  requests: number;
  rps: number;
  errors: number;
  latency: number[];
  provider: number[];
  overhead: number[];
  serverTotal: number[];
}

export async function runLevel(
  url: string,
  headers: Record<string, string>,
  body: string,
  connections: number,
  duration: number,
): Promise<LevelResult> {
  const latency: number[] = [];
  const provider: number[] = [];
  const overhead: number[] = [];
  const serverTotal: number[] = [];
  let errors = 0;
  const result = await autocannon({
    url,
    method: 'POST',
    headers,
    body,
    // The subgraph's door refuses a mutation without an Idempotency-Key; each request is a new one.
    requests: [{ setupRequest: (request) => ({ ...request, headers: { ...request.headers, 'idempotency-key': newUlid() } }) }],
    connections,
    pipelining: 1,
    duration,
    setupClient(client) {
      let chunks: Buffer[] = [];
      client.on('body', (chunk: Buffer) => chunks.push(chunk));
      client.on('response', (status: number, _bytes: number, responseTime: number) => {
        const text = Buffer.concat(chunks).toString('utf8');
        chunks = [];
        let timings: { providerMs: number; totalMs: number } | undefined;
        try {
          timings = JSON.parse(text)?.data?.assist?.timings;
        } catch {
          timings = undefined;
        }
        if (status !== 200 || !timings) {
          errors++;
          return;
        }
        latency.push(responseTime);
        provider.push(timings.providerMs);
        serverTotal.push(timings.totalMs);
        overhead.push(Math.max(0, responseTime - timings.providerMs));
      });
    },
  });
  const sort = (values: number[]) => values.sort((a, b) => a - b);
  return {
    connections,
    requests: latency.length,
    rps: result.requests.average,
    errors: errors + result.errors + result.timeouts,
    latency: sort(latency),
    provider: sort(provider),
    overhead: sort(overhead),
    serverTotal: sort(serverTotal),
  };
}

export async function run(): Promise<void> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-ai-'));
  const keys = await generateEd25519();
  const port = await freePort();
  // A fresh database on the DATABASE_URL server (dropped at the end), else embedded PGlite.
  const database = process.env.DATABASE_URL ? await createTestDatabase('postgres') : undefined;
  const databaseUrl = database?.url;

  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    AI_PORT: String(port),
    LOG_LEVEL: 'warn',
    // As the other scenarios run every process: production mode, no trace export.
    NODE_ENV: 'production',
    OTEL_SDK_DISABLED: 'true',
    // Production refuses the mock provider unless told it is meant (platform/config/production.logic.ts).
    AI_ALLOW_MOCK_PROVIDER: 'true',
    // Production takes no development key from DATA_DIR.
    AUTH_PUBLIC_KEY: JSON.stringify(keys.publicJwk),
  };
  delete env.DATABASE_URL;
  delete env.OPENAI_BASE_URL;
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  const nodeArgs = process.env.BENCH_CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`] : [];
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', path.join(ROOT, 'processes/ai.main.ts')], {
    cwd: ROOT,
    env,
    // Kept, not printed: at the end of each level autocannon drops its connections mid-request and
    // the subgraph logs every one as an error, which would bury the tables.
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const record = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-16 * 1024);
  };
  child.stdout?.on('data', record);
  child.stderr?.on('data', record);
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(`${base}/v1/ai/health`, child).catch((error: Error) => {
      throw new Error(`${error.message}\n${output}`);
    });
    const token = await mintToken(keys.privateJwk, {
      sub: 'svc-bench',
      tid: TENANT,
      scope: 'ai.assist ai.admin',
      ttlSeconds: 900,
    });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-tenant-id': TENANT };

    await routeToMock(base, headers);

    const body = JSON.stringify({
      query: `mutation A($input: AssistInput!) { assist(input: $input) { provenanceId status provider timings { totalMs providerMs queueMs } } }`,
      variables: {
        input: {
          featureKey: 'portal.triage',
          variables: { message: 'I have had a headache for two days.' },
          context: { facilityId: 'fac-bench', specialty: 'general' },
        },
      },
    });
    // Quota on and off at each level, alternating which goes first so neither always runs on the
    // colder process; the subgraph caches tenant settings for AI_CONFIG_CACHE_MS (2 s), which the
    // 3-second warm-up of each measurement outlasts. One longer warm-up first (JIT, pools).
    const setQuota = async (quota: boolean) => {
      if (!database) return;
      await database.prisma.tenantSettings.upsert({
        where: { tenantId: TENANT },
        create: { tenantId: TENANT, quotaEnabled: quota, requestsPerMinute: 100_000_000, tokensPerDay: 0 },
        update: { quotaEnabled: quota },
      });
    };
    await runLevel(`${base}/graphql`, headers, body, 10, 10);
    const results: Array<LevelResult & { quota: boolean; round: number }> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [index, connections] of LEVELS.entries()) {
        const phases = database ? ((index + round) % 2 === 1 ? [true, false] : [false, true]) : [false];
        for (const quota of phases) {
          await setQuota(quota);
          await runLevel(`${base}/graphql`, headers, body, connections, 3);
          results.push({ ...(await runLevel(`${base}/graphql`, headers, body, connections, DURATION)), quota, round });
        }
      }
    }
    results.sort((a, b) => a.round - b.round || Number(b.quota) - Number(a.quota) || a.connections - b.connections);

    const f = (n: number) => (Number.isNaN(n) ? '-' : n.toFixed(1));
    const store = process.env.REDIS_URL ? 'Redis' : 'in-memory';
    heading(
      `assist with the mock provider at zero latency: ${DURATION}s per level; database ${databaseUrl ? 'Postgres' : 'embedded PGlite'}; quota store ${store}`,
    );
    console.log(
      '| round | quota | concurrent | requests | req/s | errors | latency p50 / p95 / p99 ms | provider p50 / p99 ms | overhead p50 / p95 / p99 ms | in-gateway totalMs p50 / p95 / p99 |',
    );
    console.log('|---:|---|---:|---:|---:|---:|---|---|---|---|');
    for (const r of results) {
      console.log(
        `| ${r.round} | ${r.quota ? 'on' : 'off'} | ${r.connections} | ${r.requests} | ${f(r.rps)} | ${r.errors} | ${f(percentile(r.latency, 50))} / ${f(percentile(r.latency, 95))} / ${f(percentile(r.latency, 99))} | ${f(percentile(r.provider, 50))} / ${f(percentile(r.provider, 99))} | ${f(percentile(r.overhead, 50))} / ${f(percentile(r.overhead, 95))} / ${f(percentile(r.overhead, 99))} | ${f(percentile(r.serverTotal, 50))} / ${f(percentile(r.serverTotal, 95))} / ${f(percentile(r.serverTotal, 99))} |`,
      );
    }
    for (const target of results.filter((r) => r.quota && r.connections === 10)) {
      const p95 = percentile(target.overhead, 95);
      console.log(
        `\nTarget (round ${target.round}): p95 overhead ≤ 5 ms at 10 concurrent with quota on: ${f(p95)} ms, ${p95 <= 5 ? 'met' : 'missed'}.`,
      );
    }
    // Issue #18's row: the quota (two Redis scripts per request) costs at most a tenth of the throughput.
    for (const on of results.filter((r) => r.quota)) {
      const off = results.find((r) => !r.quota && r.round === on.round && r.connections === on.connections);
      if (!off) continue;
      const ratio = on.rps / off.rps;
      console.log(
        `Quota on / off, round ${on.round}, ${on.connections} concurrent: ${f(on.rps)} / ${f(off.rps)} req/s = ${(100 * ratio).toFixed(0)} % (target ≥ 90 %: ${ratio >= 0.9 ? 'met' : 'missed'})`,
      );
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)));
    await database?.close();
    await fs.rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await run();
