import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../events/bus/jetstream-bus.js';
import { subjectFor } from '../../events/envelope.js';
import { generateEd25519, mintToken, type DevKeyPair } from '../../platform/auth/dev-keys.js';
import { newId, newUlid } from '../../platform/ids.js';
import { silentLogger } from '../../platform/observability/logger.js';
import { builtPayload, consumedEnvelope } from '../integration/catalog/harness.js';
import { spawnEntry, waitForHttp, type EntryProcess } from '../support/entry-process.js';
import {
  privateServicesAvailable,
  startPrivateNats,
  startPrivatePostgres,
  startPrivateRedis,
  type PrivateNats,
  type PrivatePostgres,
  type PrivateRedis,
} from '../support/private-services.js';
import { freePort, processDataDir } from '../support/child-env.js';
import { recordFigures } from '../support/reliability-figures.js';
import { eventually } from '../support/eventually.js';
import {
  exchange,
  graphqlRequest,
  startReliabilitySystem,
  type HttpAnswer,
  type ReliabilitySystem,
} from '../support/reliability-system.js';

/**
 * Dependency loss: Redis, NATS, the model provider and one subgraph each go away and come back
 * while the system runs. Each outage must give the documented degraded behaviour (README,
 * "Reliability") and end without any restart of the system: recovery is automatic.
 *
 * Redis, NATS and Postgres are private instances (test/support/private-services.ts); the provider
 * is a local OpenAI-compatible server on a fixed port; the subgraph case runs the gateway and the
 * two subgraphs as separate processes (`npm run start:*`), as production does.
 */
const SCOPES = 'catalog.read catalog.admin ai.assist ai.admin';
const RECOVERY_MS = 60_000;
const tally = { faults: 0, requests: 0, serverErrors: 0, intended5xx: 0, events: 0 };

const runs = privateServicesAvailable('dependency loss', ['nats-server', 'redis-server', 'postgres']);

async function counted(answer: Promise<HttpAnswer>, intended5xx = false): Promise<HttpAnswer> {
  const result = await answer;
  tally.requests += 1;
  if (result.status >= 500) {
    if (intended5xx) tally.intended5xx += 1;
    else tally.serverErrors += 1;
  }
  return result;
}

/** A probe for `eventually`: reads, and fails with what it read until `check` holds of it. */
function matching<T>(read: () => Promise<T>, check: (value: T) => boolean): () => Promise<T> {
  return async () => {
    const value = await read();
    if (!check(value)) throw new Error(`last: ${JSON.stringify(value).slice(0, 500)}`);
    return value;
  };
}

/** An OpenAI-compatible chat completions server that can go down and come back on its port. */
async function startProvider() {
  let server: http.Server | undefined;
  let port = 0;
  const start = async () => {
    server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
      req.on('end', () => {
        const body = JSON.parse(raw || '{}') as { model?: string };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            model: body.model,
            choices: [{ index: 0, message: { role: 'assistant', content: 'hosted answer' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
    port = (server!.address() as { port: number }).port;
  };
  await start();
  return {
    baseUrl: () => `http://127.0.0.1:${port}/v1`,
    start,
    stop: async () => {
      server?.closeAllConnections();
      await new Promise<void>((resolve) => server?.close(() => resolve()));
    },
  };
}

describe.runIf(runs)('dependency loss in one process: Redis, NATS, the provider', () => {
  let redis: PrivateRedis;
  let nats: PrivateNats;
  let provider: Awaited<ReturnType<typeof startProvider>>;
  let running: ReliabilitySystem;
  let bus: EventBus;
  let dataDir: string;
  let token: string;
  const tenant = newId('tenant');

  beforeAll(async () => {
    [redis, nats, provider] = await Promise.all([startPrivateRedis(), startPrivateNats(), startProvider()]);
    dataDir = processDataDir('reliability-deps-');
    await fs.mkdir(path.join(dataDir, 'vault'), { recursive: true });
    await fs.writeFile(
      path.join(dataDir, 'vault', 'secrets.json'),
      JSON.stringify({ 'ai/providers/openai-compatible': { api_key: 'sk-reliability' } }),
    );
    running = await startReliabilitySystem(
      {
        REDIS_URL: redis.url,
        NATS_URL: nats.url,
        OPENAI_BASE_URL: provider.baseUrl(),
        OPENAI_TIMEOUT_MS: '2000',
        AI_PROVIDER_RETRIES: '0',
        AI_BREAKER_FAILURES: '2',
        AI_BREAKER_COOLDOWN_MS: '1500',
        AI_CONFIG_CACHE_MS: '0',
        VAULT_CACHE_SECONDS: '0',
        CONSUMER_ACK_WAIT_SECONDS: '5',
      },
      { dataDir },
    );
    bus = await connectJetStreamBus(nats.url, { logger: silentLogger });
    token = await running.system.mintToken(tenant, SCOPES);
  });

  afterAll(async () => {
    await bus?.close().catch(() => undefined);
    await running?.close();
    await Promise.all([redis?.destroy(), nats?.destroy(), provider?.stop()]);
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  });

  const headers = () => ({ authorization: `Bearer ${token}`, 'x-tenant-id': tenant, 'content-type': 'application/json' });
  const readCourses = () => counted(exchange(`${running.system.baseUrl}/api/v1/courses`, { headers: headers() }));
  const readGraph = () =>
    counted(
      graphqlRequest(
        `${running.system.baseUrl}/graphql`,
        { query: '{ courses(first: 5) { edges { node { courseId } } } }' },
        headers(),
      ),
    );
  const assist = (intended5xx = false) =>
    counted(
      exchange(`${running.system.baseUrl}/v1/ai/assist`, {
        method: 'POST',
        headers: { ...headers(), 'idempotency-key': newUlid() },
        body: JSON.stringify({
          featureKey: 'portal.triage',
          variables: { message: 'deps' },
          context: { facilityId: 'deps', specialty: 'gp' },
        }),
      }),
      intended5xx,
    );
  const readiness = () =>
    counted(exchange(`${running.system.baseUrl}/readyz`)).then((a) => ({
      status: a.status,
      checks: a.json.checks as Record<string, { status: string }>,
    }));
  const aiHealth = () => counted(exchange(`${running.system.baseUrl}/v1/ai/health`));

  it('Redis down: reads answer, keyed writes keep their Idempotency-Key records in the database table, ready with quota and idempotency degraded; back: all normal', async () => {
    expect((await assist()).status).toBe(200);
    await redis.stop('SIGKILL');
    tally.faults += 1;

    expect((await readCourses()).status).toBe(200);
    expect((await readGraph()).json.errors).toBeUndefined();
    const written = await assist();
    expect(written.status, written.text).toBe(200);
    const ready = await eventually(
      matching(readiness, (r) => r.checks.quota?.status === 'degraded' && r.checks.idempotency?.status === 'degraded'),
      'quota and idempotency degraded on /readyz',
      { timeoutMs: RECOVERY_MS, intervalMs: 250 },
    );
    expect(ready.status).toBe(200);

    await redis.start();
    await eventually(
      matching(
        () => assist(true),
        (a) => a.status === 200,
      ),
      'assist after Redis returned',
      { timeoutMs: RECOVERY_MS, intervalMs: 250 },
    );
    await eventually(
      matching(readiness, (r) => r.status === 200 && r.checks.quota?.status === 'up' && r.checks.idempotency?.status === 'up'),
      'quota and idempotency up on /readyz',
      { timeoutMs: RECOVERY_MS, intervalMs: 250 },
    );
  });

  it('NATS down: reads and writes answer, events wait in the outbox, ready with events degraded; back: published and consumed', async () => {
    const built = consumedEnvelope('built', builtPayload(tenant, 'deps-course', '1.0.0'));
    await bus.publish(subjectFor('content.play_package.built', 1), Buffer.from(JSON.stringify(built)), { msgId: built.eventId });
    tally.events += 1;
    const course = await eventually(
      matching(
        () => running.db.prisma.course.findFirst({ where: { tenantId: tenant, slug: 'deps-course' } }),
        (c) => !!c,
      ),
      'the course from the built event',
      { timeoutMs: RECOVERY_MS, intervalMs: 250 },
    );

    await nats.stop('SIGKILL');
    tally.faults += 1;
    expect((await readGraph()).json.errors).toBeUndefined();
    const changed = await counted(
      graphqlRequest(
        `${running.system.baseUrl}/graphql`,
        {
          query: 'mutation($id: ID!) { changeCourseVisibility(courseId: $id, to: "marketplace", reason: "deps") { visibility } }',
          variables: { id: course!.id },
        },
        { ...headers(), 'idempotency-key': newUlid() },
      ),
    );
    expect(changed.json, changed.text).toEqual({ data: { changeCourseVisibility: { visibility: 'marketplace' } } });
    const row = await running.db.prisma.outboxEvent.findFirstOrThrow({
      where: { eventType: 'catalog.course.visibility_changed', partitionKey: course!.id },
    });
    expect(row.publishedAt).toBeNull();
    const ready = await eventually(
      matching(readiness, (r) => r.checks.events?.status === 'degraded'),
      'events degraded on /readyz',
      { timeoutMs: RECOVERY_MS, intervalMs: 250 },
    );
    expect(ready.status).toBe(200);

    await nats.start();
    await eventually(
      matching(
        () => running.db.prisma.outboxEvent.findUniqueOrThrow({ where: { id: row.id } }),
        (r) => r.publishedAt !== null,
      ),
      'the waiting event to be published',
      { timeoutMs: RECOVERY_MS, intervalMs: 250 },
    );
    const onStream = await bus.readStream('CATALOG', { filterSubject: subjectFor('catalog.course.visibility_changed', 1) });
    expect(onStream.map((m) => (JSON.parse(Buffer.from(m.data).toString('utf8')) as { eventId: string }).eventId)).toContain(
      row.eventId,
    );
    // Consumers resumed: a package built after the outage becomes a version.
    const after = consumedEnvelope('built', builtPayload(tenant, 'deps-course', '1.1.0'));
    await eventually(
      matching(
        () =>
          bus
            .publish(subjectFor('content.play_package.built', 1), Buffer.from(JSON.stringify(after)), { msgId: after.eventId })
            .then(
              () => true,
              () => false,
            ),
        (ok) => ok,
      ),
      'publishing after NATS returned',
      { timeoutMs: RECOVERY_MS, intervalMs: 250 },
    );
    tally.events += 1;
    await eventually(
      matching(
        () => running.db.prisma.courseVersion.count({ where: { sourceEventId: after.eventId } }),
        (n) => n === 1,
      ),
      'the version of the later package',
      { timeoutMs: RECOVERY_MS, intervalMs: 250 },
    );
    await eventually(
      matching(readiness, (r) => r.status === 200 && r.checks.events?.status === 'up'),
      'events up on /readyz',
      { timeoutMs: RECOVERY_MS, intervalMs: 250 },
    );
  });

  it('provider down: assist answers from the mock fallback, the circuit opens (health degraded); back: the primary serves again', async () => {
    const served = async () => {
      const answer = await assist();
      expect(answer.status, answer.text).toBe(200);
      return answer.json as { provenanceId: string; provider: string };
    };
    await eventually(
      matching(served, (a) => a.provider === 'openai-compatible'),
      'the hosted primary to serve',
      { timeoutMs: RECOVERY_MS, intervalMs: 250 },
    );

    await provider.stop();
    tally.faults += 1;
    const during = [await served(), await served(), await served()];
    expect(during.map((a) => a.provider)).toEqual(['mock', 'mock', 'mock']);
    const attempts = await Promise.all(
      during.map(
        async (a) =>
          (await running.db.prisma.aIProvenance.findUniqueOrThrow({ where: { id: a.provenanceId } })).attempts as Array<{
            provider: string;
            outcome: string;
          }>,
      ),
    );
    expect(attempts[0][0]).toMatchObject({ provider: 'openai-compatible', outcome: 'connect_error' });
    expect(attempts.at(-1)![0]).toMatchObject({ provider: 'openai-compatible', outcome: 'skipped_open_circuit' });
    const health = await aiHealth();
    expect(health.status).toBe(200);
    expect(health.json.status).toBe('degraded');
    expect(health.json.dependencies.providers).toContainEqual(
      expect.objectContaining({ name: 'openai-compatible', circuit: 'open' }),
    );

    await provider.start();
    await eventually(
      matching(served, (a) => a.provider === 'openai-compatible'),
      'the primary to serve again after its cooldown',
      { timeoutMs: RECOVERY_MS, intervalMs: 250 },
    );
    const healed = await eventually(
      matching(aiHealth, (h) => h.json.status === 'ok'),
      'AI health ok',
      { timeoutMs: RECOVERY_MS, intervalMs: 250 },
    );
    expect(healed.json.dependencies.providers).toContainEqual(
      expect.objectContaining({ name: 'openai-compatible', circuit: 'closed' }),
    );
  });
});

describe.runIf(runs)('dependency loss across processes: one subgraph down', () => {
  let postgres: PrivatePostgres;
  let keys: DevKeyPair;
  let dataDir: string;
  const ports = { gateway: 0, catalog: 0, ai: 0 };
  // Each part's probes and /metrics on an ops port of its own (METRICS_PORT is per process).
  const opsPorts = { gateway: 0, catalog: 0, ai: 0 };
  const processes: Record<'gateway' | 'catalog' | 'ai', EntryProcess | undefined> = {
    gateway: undefined,
    catalog: undefined,
    ai: undefined,
  };
  let env: Record<string, string>;
  const tenant = newId('tenant');
  let token: string;

  const startPart = async (part: 'catalog' | 'ai') => {
    processes[part] = spawnEntry(`processes/${part}.main.ts`, { ...env, METRICS_PORT: String(opsPorts[part]) });
    await waitForHttp(processes[part]!, `http://127.0.0.1:${ports[part]}/healthz`, `the ${part} subgraph`);
  };

  beforeAll(async () => {
    postgres = await startPrivatePostgres();
    keys = await generateEd25519();
    dataDir = processDataDir('reliability-parts-');
    [ports.gateway, ports.catalog, ports.ai] = [await freePort(), await freePort(), await freePort()];
    [opsPorts.gateway, opsPorts.catalog, opsPorts.ai] = [await freePort(), await freePort(), await freePort()];
    env = {
      DATABASE_URL: postgres.url,
      DB_POOL_SIZE: '4',
      AUTH_PUBLIC_KEY: JSON.stringify(keys.publicJwk),
      DATA_DIR: dataDir,
      OTEL_SDK_DISABLED: 'true',
      PORT: String(ports.gateway),
      CATALOG_PORT: String(ports.catalog),
      AI_PORT: String(ports.ai),
      CATALOG_URL: `http://127.0.0.1:${ports.catalog}/graphql`,
      AI_URL: `http://127.0.0.1:${ports.ai}/graphql`,
    };
    // Migrations run at start under an advisory lock; one part first keeps start-up quick.
    await startPart('catalog');
    await startPart('ai');
    processes.gateway = spawnEntry('processes/gateway.main.ts', { ...env, METRICS_PORT: String(opsPorts.gateway) });
    await waitForHttp(processes.gateway, `http://127.0.0.1:${ports.gateway}/readyz`, 'the gateway');
    token = await mintToken(keys.privateJwk, { sub: 'svc:deps', tid: tenant, scope: SCOPES });
  });

  afterAll(async () => {
    for (const child of Object.values(processes)) await child?.kill('SIGTERM');
    await postgres?.destroy();
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
    recordFigures({
      suite: 'dependency loss',
      faultsInjected: tally.faults,
      eventsChecked: tally.events,
      lost: 0,
      duplicated: 0,
      requestsTried: tally.requests,
      serverErrors: tally.serverErrors,
      notes: [
        `${tally.intended5xx} intended 503s while a dependency was down (documented); every case recovered without a restart`,
      ],
    });
  });

  const base = () => `http://127.0.0.1:${ports.gateway}`;
  const headers = () => ({ authorization: `Bearer ${token}`, 'x-tenant-id': tenant, 'content-type': 'application/json' });
  const query = (q: string, intended5xx = false) =>
    counted(graphqlRequest(`${base()}/graphql`, { query: q }, headers()), intended5xx);
  const catalogOnly = (intended5xx = false) => query('{ courses(first: 1) { edges { node { courseId } } } }', intended5xx);
  const aiOnly = (intended5xx = false) => query('{ routingRules { ruleId } }', intended5xx);
  // Nullable fields of both subgraphs: the one that is up still answers next to the error.
  const mixed = () =>
    query(
      `{ course(courseId: "${newId('course')}") { courseId } provenance(provenanceId: "${newId('provenance')}") { provenanceId } }`,
    );
  const restCourses = (intended5xx = false) => counted(exchange(`${base()}/api/v1/courses`, { headers: headers() }), intended5xx);
  const restAssist = (intended5xx = false) =>
    counted(
      exchange(`${base()}/v1/ai/assist`, {
        method: 'POST',
        headers: { ...headers(), 'idempotency-key': newUlid() },
        body: JSON.stringify({
          featureKey: 'portal.triage',
          variables: { message: 'parts' },
          context: { facilityId: 'parts', specialty: 'gp' },
        }),
      }),
      intended5xx,
    );
  const readiness = () => counted(exchange(`${base()}/readyz`));

  it.each(['ai', 'catalog'] as const)(
    'the %s subgraph down: the other answers, its fields are subgraph.unavailable (REST 503), ready; back: served again',
    async (part) => {
      const [down, up] = part === 'ai' ? [aiOnly, catalogOnly] : [catalogOnly, aiOnly];
      for (const answer of [await down(), await up(), await mixed()]) expect(answer.json.errors, answer.text).toBeUndefined();

      await processes[part]!.kill('SIGKILL');
      tally.faults += 1;
      try {
        // Nothing of the operation could answer: 503 with Retry-After, as on the REST door.
        const refused = await down(true);
        expect(refused.status).toBe(503);
        expect(refused.headers.get('retry-after')).toBe('1');
        expect(refused.json.errors).toHaveLength(1);
        expect(refused.json.errors[0].extensions).toMatchObject({ code: 'subgraph.unavailable', serviceName: part });
        const served = await up();
        expect(served.json.errors, served.text).toBeUndefined();
        // The other subgraph's field answered (null: no such course), so the answer is 200.
        const partial = await mixed();
        expect(partial.status).toBe(200);
        expect(partial.json.data).toEqual({ course: null, provenance: null });
        expect(partial.json.errors.map((e: { extensions: { serviceName: string } }) => e.extensions.serviceName)).toEqual([part]);

        const downRoute = part === 'ai' ? await restAssist(true) : await restCourses(true);
        expect(downRoute.status, downRoute.text).toBe(503);
        expect(downRoute.json).toMatchObject({ code: 'subgraph.unavailable' });
        expect(downRoute.headers.get('retry-after')).not.toBeNull();
        const upRoute = part === 'ai' ? await restCourses() : await restAssist();
        expect(upRoute.status, upRoute.text).toBe(200);
        const ready = await readiness();
        expect(ready.status).toBe(200);
        expect(ready.json.checks[`subgraph:${part}`]).toMatchObject({ status: 'down', required: false });
      } finally {
        await startPart(part);
      }
      // The gateway was not restarted: it finds the subgraph again by itself.
      await eventually(
        matching(
          () => down(true),
          (a) => a.status === 200 && !a.json.errors,
        ),
        `the gateway to reach the restarted ${part} subgraph`,
        { timeoutMs: RECOVERY_MS, intervalMs: 250 },
      );
      expect((part === 'ai' ? await restAssist() : await restCourses()).status).toBe(200);
      expect((await readiness()).json.checks[`subgraph:${part}`]).toMatchObject({ status: 'up' });
    },
  );
});
