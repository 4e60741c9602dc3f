import { createHash } from 'node:crypto';
import net from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { generateEd25519, mintToken } from '../../../platform/auth/dev-keys.js';
import { createTokenVerifier } from '../../../platform/auth/verifier.js';
import { loadSystemConfig } from '../../../processes/config.js';
import type { RunningServer } from '../../../platform/graphql/subgraph-server.js';
import { newId } from '../../../platform/ids.js';
import { createLogger } from '../../../platform/observability/logger.js';
import { createMetrics, type Metrics } from '../../../platform/observability/metrics.js';
import { slottedRedisCache } from '../../../platform/graphql/persisted-queries.js';
import { startTelemetry } from '../../../platform/observability/telemetry.js';
import { startCatalogSubgraph } from '../../../subgraphs/catalog/server.js';
import { gatewaySettings, startGateway, type GatewaySettings } from '../../../gateway/gateway.js';
import { subgraphChecks } from '../../../gateway/subgraph-calls/readiness.js';
import type { Exchange } from '../../../platform/http/pipeline.js';
import { createDatabaseIdempotencyStore } from '../../../platform/idempotency/database-store.js';
import type { StringKeyValueCache } from '../../../platform/graphql/persisted-queries.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { realService } from '../../support/services.js';

/**
 * The gateway's operational surface over real HTTP: one catalog subgraph on a test database, the AI
 * subgraph deliberately absent (its URL is a closed port), limits set low enough to hit.
 */
const TENANT = newId('tenant');
const JWT_SHAPE = /eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/;
const PROMPT = 'Summarise the chart of patient Jane Roe, MRN 99812';
const SECRET = 'sk-live-0123456789abcdefXYZ';

let db: TestDatabase;
let catalog: RunningServer;
type TestGateway = Awaited<ReturnType<typeof startGateway>>;
let gateway: TestGateway;
let metrics: Metrics;
let token: string;
let deadAiUrl: string;
let verifier: Awaited<ReturnType<typeof createTokenVerifier>>;
const logLines: string[] = [];

async function closedPortUrl(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/graphql`;
}

function settings(): GatewaySettings {
  const defaults = gatewaySettings(loadSystemConfig({}));
  return {
    ...defaults,
    maxBodyBytes: 4096,
    limits: { ...defaults.limits, maxDepth: 6, maxCost: 200 },
    drainMs: 5_000,
    subgraphMaxConnections: 16,
  };
}

async function startTestGateway(apqCache?: StringKeyValueCache): Promise<TestGateway> {
  const destination = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return startGateway({
    host: '127.0.0.1',
    port: 0,
    subgraphUrls: { catalog: catalog.url, ai: deadAiUrl },
    verifier,
    logger: createLogger({ level: 'debug', destination }),
    settings: settings(),
    metrics,
    apqCache,
    idempotency: createDatabaseIdempotencyStore(db.prisma, { ttlSeconds: 300, leaseSeconds: 60 }),
    readiness: async () => {
      const checks = await subgraphChecks({ catalog: catalog.url, ai: deadAiUrl });
      return { ready: true, checks };
    },
  });
}

async function graphql(base: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'x-tenant-id': TENANT, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      data?: Record<string, unknown> | null;
      errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
    },
  };
}

beforeAll(async () => {
  startTelemetry({ serviceName: 'gateway-ops-test' });
  db = await createTestDatabase();
  const keys = await generateEd25519();
  verifier = await createTokenVerifier({
    publicKey: JSON.stringify(keys.publicJwk),
    maxTokenLifetimeSeconds: 900,
    clockToleranceSeconds: 5,
  });
  token = await mintToken(keys.privateJwk, { sub: 'svc:ops-test', tid: TENANT, scope: 'catalog.read ai.assist' });
  metrics = createMetrics({ defaultMetrics: false });
  const config = loadSystemConfig({ HOST: '127.0.0.1', DATA_DIR: '.data/ops-test' });
  catalog = await startCatalogSubgraph(
    { config, db: db.prisma, verifier, logger: createLogger({ level: 'silent' }), metrics },
    0,
  );
  deadAiUrl = await closedPortUrl();
  gateway = await startTestGateway();
});

afterAll(async () => {
  await gateway?.close();
  await catalog?.close();
  await db?.close();
});

describe('query limits', () => {
  it('refuses an operation nested deeper than the limit with 400 query.too_deep', async () => {
    const deep = '{ courses(first: 1) { edges { node { versions { course { versions { courseVersionId } } } } } } }';
    const { status, body } = await graphql(gateway.url, { query: deep });
    expect(status).toBe(400);
    expect(body.errors?.[0].extensions).toMatchObject({ code: 'query.too_deep', limit: 'depth', found: 7, max: 6 });
  });

  it('refuses an operation whose lists could resolve too many fields with 400 query.too_costly', async () => {
    const costly = '{ courses(first: 100) { edges { node { courseId slug } } } }';
    const { status, body } = await graphql(gateway.url, { query: costly });
    expect(status).toBe(400);
    expect(body.errors?.[0].extensions).toMatchObject({ code: 'query.too_costly', limit: 'cost', max: 200 });
    const ok = await graphql(gateway.url, { query: '{ courses(first: 5) { edges { node { courseId slug } } } }' });
    expect(ok.status).toBe(200);
    expect(ok.body.errors).toBeUndefined();
  });

  it("exempts the service's own operations (REST-compat's documents), never a client's", async () => {
    const costly = '{ courses(first: 100) { edges { node { courseId slug } } } }';
    const exchange = {
      req: { headers: { authorization: `Bearer ${token}`, 'x-tenant-id': TENANT } },
      principal: await verifier.verify(token),
      requestId: 'req_trusted',
      trace: {
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        traceId: '0af7651916cd43dd8448eb211c80319c',
      },
    } as unknown as Exchange;
    const trusted = await gateway.execute({ query: costly }, exchange, { trusted: true });
    expect(trusted.errors).toBeUndefined();
    expect(trusted.data).toEqual({ courses: { edges: [] } });
    const untrusted = await gateway.execute({ query: costly }, exchange);
    expect(untrusted.errors?.[0].extensions).toMatchObject({ code: 'query.too_costly' });
  });

  it('refuses a body over MAX_BODY_BYTES with 413 request.payload_too_large', async () => {
    const padding = ' '.repeat(5000);
    const { status, body } = await graphql(
      gateway.url,
      `{"query":"{ courses(first: 1) { edges { node { courseId } } } }"${padding}}`,
    );
    expect(status).toBe(413);
    expect(body.errors?.[0].extensions).toMatchObject({ code: 'request.payload_too_large' });
  });
});

describe('automatic persisted queries', () => {
  const query = 'query PersistedCourses { courses(first: 2) { edges { node { courseId } } } }';
  const persisted = { persistedQuery: { version: 1, sha256Hash: createHash('sha256').update(query).digest('hex') } };

  it('asks for the query once, then answers from the hash alone', async () => {
    const first = await graphql(gateway.url, { extensions: persisted });
    expect(first.body.errors?.[0].extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    const registered = await graphql(gateway.url, { query, extensions: persisted });
    expect(registered.status).toBe(200);
    expect(registered.body.data).toEqual({ courses: { edges: [] } });
    const byHash = await graphql(gateway.url, { extensions: persisted });
    expect(byHash.status).toBe(200);
    expect(byHash.body).toEqual({ data: { courses: { edges: [] } } });
  });

  it('refuses a hash that does not match the query sent with it', async () => {
    const wrong = { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } };
    const { status, body } = await graphql(gateway.url, { query, extensions: wrong });
    expect(status).toBe(400);
    expect(body.errors?.[0].message).toMatch(/sha does not match/i);
  });

  const redisUrl = realService('REDIS_URL');
  it.runIf(redisUrl)('shares registered queries between gateway replicas through Redis', async () => {
    const redis = new Redis(redisUrl!, { maxRetriesPerRequest: 1 });
    const prefix = `apq-test:${newId('request')}:`;
    const cache = () => slottedRedisCache(redis, { prefix, slots: 64, defaultTtlSeconds: 60 });
    const a = await startTestGateway(cache());
    const b = await startTestGateway(cache());
    try {
      const shared = 'query SharedPersisted { courses(first: 1) { edges { node { courseId } } } }';
      const extensions = { persistedQuery: { version: 1, sha256Hash: createHash('sha256').update(shared).digest('hex') } };
      expect((await graphql(b.url, { extensions })).body.errors?.[0].extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
      expect((await graphql(a.url, { query: shared, extensions })).status).toBe(200);
      expect((await graphql(b.url, { extensions })).body).toEqual({ data: { courses: { edges: [] } } });
      const keys = await redis.keys(`${prefix}*`);
      expect(keys.length).toBe(1);
      expect(await redis.ttl(keys[0])).toBeGreaterThan(0);
    } finally {
      await a.close();
      await b.close();
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    }
  });
});

describe('a subgraph down', () => {
  it('still answers the fields of the subgraph that is up, with subgraph.unavailable for the rest', async () => {
    const query =
      '{ courses(first: 1) { edges { node { courseId } } } provenance(provenanceId: "prv_01JD0000000000000000000000") { provenanceId } }';
    const { status, body } = await graphql(gateway.url, { query });
    expect(status).toBe(200);
    expect(body.data).toEqual({ courses: { edges: [] }, provenance: null });
    expect(body.errors).toHaveLength(1);
    expect(body.errors?.[0]).toMatchObject({
      message: expect.stringContaining('ai service is unavailable'),
      extensions: { code: 'subgraph.unavailable', serviceName: 'ai' },
    });
  });

  it('reports it on /readyz without turning the gateway unready', async () => {
    const response = await fetch(`${gateway.url}/readyz`);
    const report = (await response.json()) as {
      ready: boolean;
      checks: Record<string, { status: string; required: boolean; detail?: string }>;
    };
    expect(response.status).toBe(200);
    expect(report.checks['subgraph:catalog']).toEqual({ status: 'up', required: false });
    expect(report.checks['subgraph:ai']).toMatchObject({
      status: 'down',
      required: false,
      detail: expect.stringContaining('subgraph.unavailable'),
    });
  });
});

describe('metrics and logs', () => {
  it('serves request, operation, subgraph and limit metrics at GET /metrics', async () => {
    await graphql(gateway.url, { query: 'query MetricsProbe { courses(first: 1) { edges { node { courseId } } } }' });
    const response = await fetch(`${gateway.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    expect(text).toMatch(/^http_requests_total\{service="gateway",method="POST",route="\/graphql",status="200"\} \d+$/m);
    expect(text).toMatch(/^http_requests_total\{service="gateway",method="POST",route="\/graphql",status="413"\} 1$/m);
    expect(text).toMatch(
      /^http_request_duration_seconds_count\{service="catalog",method="POST",route="\/graphql",status="200"\} \d+$/m,
    );
    expect(text).toMatch(
      /^graphql_operation_duration_seconds_count\{service="gateway",operation="other",type="query",outcome="ok"\} \d+$/m,
    );
    expect(text).toMatch(/^subgraph_fetch_duration_seconds_count\{subgraph="catalog",outcome="ok"\} \d+$/m);
    expect(text).toMatch(/^subgraph_fetch_duration_seconds_count\{subgraph="ai",outcome="unavailable"\} \d+$/m);
    expect(text).toMatch(/^graphql_limit_rejections_total\{limit="depth"\} 1$/m);
    expect(text).toMatch(
      /^graphql_operation_errors_total\{service="gateway",operation="other",code="subgraph.unavailable"\} 1$/m,
    );
  });

  it('logs each request with its request id, trace id and tenant, and never the token, prompt or secret it carried', async () => {
    const requestId = newId('request');
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    await graphql(
      gateway.url,
      { query: 'query WithPrompt($prompt: ID!) { course(courseId: $prompt) { courseId } }', variables: { prompt: PROMPT } },
      { 'x-request-id': requestId, traceparent: `00-${traceId}-b7ad6b7169203331-01`, 'x-api-key': SECRET },
    );
    // A request that fails authentication still leaves its access line, without the token.
    await graphql(
      gateway.url,
      { query: '{ courses(first: 1) { edges { node { courseId } } } }' },
      { authorization: `Bearer ${token}x` },
    );
    const lines = logLines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const access = lines.find((line) => line.msg === 'request' && line.requestId === requestId);
    expect(access).toMatchObject({ requestId, traceId, tenantId: TENANT, method: 'POST', route: '/graphql' });
    expect(lines.some((line) => line.msg === 'request' && line.status === 401)).toBe(true);
    const all = logLines.join('\n');
    expect(all).not.toMatch(JWT_SHAPE);
    expect(all).not.toContain(token.slice(-20));
    expect(all).not.toContain(PROMPT);
    expect(all).not.toContain(SECRET);
  });
});
