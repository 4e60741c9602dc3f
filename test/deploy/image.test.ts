import pg from 'pg';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../events/bus/event-bus.js';
import { connectJetStreamBus } from '../../events/bus/jetstream-bus.js';
import { subjectFor } from '../../events/envelope.js';
import { generateEd25519, mintToken, type DevKeyPair } from '../../platform/auth/dev-keys.js';
import { newId, newUlid } from '../../platform/ids.js';
import { silentLogger } from '../../platform/observability/logger.js';
import { builtPayload, consumedEnvelope } from '../integration/catalog/harness.js';
import { freePort } from '../support/child-env.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/eventually.js';
import {
  buildImage,
  ensureBaseImage,
  podmanAvailable,
  removeContainers,
  runContainer,
  runToEnd,
  type Container,
} from '../support/podman.js';
import { startPrivateNats, startPrivateRedis, type PrivateNats, type PrivateRedis } from '../support/private-services.js';
import { realService } from '../support/services.js';
import { startBalancer, type Balancer } from '../support/test-balancer.js';

/**
 * The deployment as a platform team gets it (issue #23), built and run here: the committed
 * Dockerfile built with podman (on a local Node 24 base image, since no registry is reachable),
 * the migration run as its own container, then two replicas of every part in production mode on
 * Postgres, Redis and NATS, the gateways behind a balancer that follows /readyz and each gateway
 * given both subgraph replicas as a list. Under keep-alive load and while play-package events
 * arrive, one replica of each part gets SIGTERM (a rolling restart): every request must be
 * answered, every replica must exit 0, and no event may be lost.
 */
const runs = podmanAvailable() && Boolean(realService('DATABASE_URL'));
const IMAGE = 'localhost/catalog-ai:deploy-test';
const EVENTS = Number(process.env.DEPLOY_TEST_EVENTS ?? 120);
const COURSES = 12;

type Part = 'gateway' | 'catalog' | 'ai' | 'worker';

/** Node code run inside the image: counts the packages and lists what the runtime never loads. */
const LEFTOVERS = `
const fs = require('node:fs'), path = require('node:path');
const found = []; let packages = 0;
(function walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.name === 'package.json') packages += 1;
    const packageRoot = fs.existsSync(path.join(dir, 'package.json'));
    if (entry.isDirectory()) {
      if (entry.name === '@types' || (packageRoot && ['test', 'tests', '__tests__'].includes(entry.name))) found.push(full);
      else walk(full);
    } else if (/\\.(?:test|spec)\\.[cm]?js$|\\.[cm]?ts$/.test(entry.name)) found.push(full);
  }
})('/app/node_modules');
console.log(JSON.stringify({ packages, found: found.slice(0, 20) }));
`;

describe.runIf(runs)('the container image, deployed as two replicas of every part', () => {
  let db: TestDatabase;
  let nats: PrivateNats;
  let redis: PrivateRedis;
  let keys: DevKeyPair;
  let bus: EventBus;
  let balancer: Balancer;
  let env: Record<string, string>;
  const containers: Record<string, Container> = {};
  const readyUrls: Record<string, string> = {};
  const tenant = newId('tenant');
  let published = 0;

  async function start(part: Part, replica: number, extra: Record<string, string>, opsPort: number) {
    const name = `catalog-ai-test-${part}-${replica}-${process.pid}`;
    containers[`${part}-${replica}`] = await runContainer(IMAGE, name, [part], {
      ...env,
      ...extra,
      METRICS_PORT: String(opsPort),
    });
    readyUrls[`${part}-${replica}`] = `http://127.0.0.1:${opsPort}/readyz`;
  }

  async function publishBuilt(i: number) {
    const envelope = consumedEnvelope('built', builtPayload(tenant, `course-${i % COURSES}`, `1.${Math.floor(i / COURSES)}.0`));
    await bus.publish(subjectFor('content.play_package.built', 1), Buffer.from(JSON.stringify(envelope)), {
      msgId: envelope.eventId,
    });
    published += 1;
  }

  beforeAll(async () => {
    const base = await ensureBaseImage();
    await buildImage(IMAGE, base);
    [db, nats, redis, keys] = await Promise.all([
      createTestDatabase('postgres', { migrate: false }),
      startPrivateNats(),
      startPrivateRedis(),
      generateEd25519(),
    ]);
    env = {
      DATABASE_URL: db.url,
      NATS_URL: nats.url,
      REDIS_URL: redis.url,
      AUTH_PUBLIC_KEY: JSON.stringify(keys.publicJwk),
      // No model provider here: the mock serves, knowingly (production refuses it otherwise).
      AI_ALLOW_MOCK_PROVIDER: 'true',
      // The test plays the content service, so its stream must exist.
      CREATE_PRODUCER_STREAMS: 'true',
      DB_POOL_SIZE: '3',
      SHUTDOWN_DRAIN_MS: '3000',
      LOG_LEVEL: 'warn',
    };
  }, 60 * 60_000);

  afterAll(async () => {
    await balancer?.close();
    await bus?.close();
    await removeContainers(Object.values(containers).map((c) => c.name));
    await Promise.all([nats?.destroy(), redis?.destroy()]);
    await db?.close();
  });

  it('refuses to start any part in production mode without a verification key, naming the variable', async () => {
    for (const part of ['gateway', 'catalog', 'ai', 'worker']) {
      const { code, output } = await runToEnd(IMAGE, [part], { DATABASE_URL: db.url });
      expect(code, `${part}: ${output}`).toBe(2);
      expect(output, part).toContain('AUTH_JWKS_URL or AUTH_PUBLIC_KEY must be set when NODE_ENV=production');
    }
  });

  it('holds no development-only packages, third-party test suites or TypeScript files', async () => {
    // Run by the image's own Node: lists what deploy/prune-node-modules.mjs should have removed.
    const { code, output } = await runToEnd(IMAGE, ['-e', LEFTOVERS], {}, { entrypoint: 'node' });
    expect(code, output).toBe(0);
    const leftovers = JSON.parse(output) as { packages: number; found: string[] };
    expect(leftovers.packages).toBeGreaterThan(100);
    expect(leftovers.found).toEqual([]);
  });

  it('runs the migration as a step of its own, and a part waits for it', async () => {
    const before = await runToEnd(IMAGE, ['schema-ready'], { ...env, SCHEMA_WAIT_SECONDS: '1' });
    expect(before.code, before.output).toBe(1);
    const migrate = await runToEnd(IMAGE, ['migrate'], env);
    expect(migrate.code, migrate.output).toBe(0);
    const again = await runToEnd(IMAGE, ['migrate'], env);
    expect(again.code, again.output).toBe(0);
    const after = await runToEnd(IMAGE, ['schema-ready'], env);
    expect(after.code, after.output).toBe(0);
  });

  it('serves the README first query from the containers once an event has built a course', async () => {
    const ports = {
      catalog: [await freePort(), await freePort()],
      ai: [await freePort(), await freePort()],
      gateway: [await freePort(), await freePort()],
    };
    const subgraphs = {
      CATALOG_URL: ports.catalog.map((p) => `http://127.0.0.1:${p}/graphql`).join(','),
      AI_URL: ports.ai.map((p) => `http://127.0.0.1:${p}/graphql`).join(','),
    };
    for (const replica of [1, 2]) {
      await start('worker', replica, {}, await freePort());
      await start('catalog', replica, { CATALOG_PORT: String(ports.catalog[replica - 1]) }, await freePort());
      await start('ai', replica, { AI_PORT: String(ports.ai[replica - 1]) }, await freePort());
      await start('gateway', replica, { PORT: String(ports.gateway[replica - 1]), ...subgraphs }, await freePort());
    }
    for (const [name, url] of Object.entries(readyUrls)) {
      await eventually(
        async () => {
          const answer = await fetch(url);
          expect(answer.status, `${name}: ${await answer.text()}`).toBe(200);
        },
        `${name} to be ready`,
        { timeoutMs: 180_000, intervalMs: 500 },
      );
    }
    balancer = await startBalancer(
      ports.gateway.map((p) => `http://127.0.0.1:${p}`),
      { intervalMs: 200 },
    );
    bus = await connectJetStreamBus(nats.url, { logger: silentLogger });
    await publishBuilt(0);

    const token = await mintToken(keys.privateJwk, { sub: 'svc:deploy', tid: tenant, scope: 'catalog.read' });
    const answer = await eventually(
      async () => {
        const response = await fetch(`${balancer.url}/graphql`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'x-tenant-id': tenant, 'content-type': 'application/json' },
          body: JSON.stringify({ query: '{ courses(first: 5) { edges { node { courseId slug title } } } }' }),
        });
        const json = (await response.json()) as { data?: { courses: { edges: Array<{ node: { slug: string } }> } } };
        expect(json.data?.courses.edges.map((edge) => edge.node.slug)).toEqual(['course-0']);
        return json;
      },
      'the course built by the event',
      { timeoutMs: 60_000 },
    );
    expect(answer.data?.courses.edges[0].node.slug).toBe('course-0');
  });

  it('answers every request and loses no event while one replica of each part is stopped with SIGTERM', async () => {
    const clients = new Agent({ connections: 8, keepAliveTimeout: 10_000 });
    const outcomes: Record<string, number> = {};
    const count = (what: string) => (outcomes[what] = (outcomes[what] ?? 0) + 1);
    const reader = await mintToken(keys.privateJwk, { sub: 'svc:deploy', tid: tenant, scope: 'catalog.read' });
    let stop = false;

    const request = async (i: number) => {
      const write = i % 4 === 0;
      let headers: Record<string, string> = {
        authorization: `Bearer ${reader}`,
        'x-tenant-id': tenant,
        'content-type': 'application/json',
      };
      let path = i % 2 ? '/graphql' : '/api/v1/courses?limit=5';
      let body: string | undefined =
        i % 2 ? JSON.stringify({ query: '{ courses(first: 5) { edges { node { courseId } } } }' }) : undefined;
      if (write) {
        const writer = newId('tenant');
        const token = await mintToken(keys.privateJwk, { sub: 'svc:deploy', tid: writer, scope: 'ai.admin' });
        headers = {
          authorization: `Bearer ${token}`,
          'x-tenant-id': writer,
          'content-type': 'application/json',
          'idempotency-key': newUlid(),
        };
        path = '/v1/admin/routing-rules';
        body = JSON.stringify({ featureKey: 'portal.triage', primary: { provider: 'mock', model: 'm' }, fallbacks: [] });
      }
      const method = body === undefined ? 'GET' : 'POST';
      const outcome = await fetch(`${balancer.url}${path}`, { method, headers, body, dispatcher: clients }).then(
        async (response) => {
          await response.arrayBuffer();
          return String(response.status);
        },
        (error: Error) => `error ${(error.cause as { code?: string } | undefined)?.code ?? error.message}`,
      );
      count(outcome);
    };
    const client = async (id: number) => {
      for (let i = id; !stop; i += 8) await request(i);
    };
    const load = Promise.all(Array.from({ length: 8 }, (_, id) => client(id)));
    const events = (async () => {
      for (let i = 1; i < EVENTS; i++) await publishBuilt(i);
    })();

    const exits: Record<string, number> = {};
    for (const part of ['gateway', 'catalog', 'ai', 'worker'] as const) {
      exits[part] = await containers[`${part}-1`].stop('SIGTERM');
    }
    await events;
    stop = true;
    await load;
    await clients.close();

    const logs = Object.fromEntries(await Promise.all(Object.entries(containers).map(async ([k, c]) => [k, await c.logs()])));
    expect(exits, JSON.stringify(logs).slice(0, 4000)).toEqual({ gateway: 0, catalog: 0, ai: 0, worker: 0 });
    const failed = Object.entries(outcomes).filter(([status]) => !['200', '201'].includes(status));
    expect(failed, JSON.stringify(outcomes)).toEqual([]);
    expect(balancer.failures()).toBe(0);

    // Every event reached the catalog once: one version per built event, none missing.
    const client2 = new pg.Client({ connectionString: db.url });
    await client2.connect();
    try {
      await eventually(
        async () => {
          const { rows } = await client2.query<{ n: string }>('SELECT count(*) AS n FROM "CourseVersion" WHERE "tenantId" = $1', [
            tenant,
          ]);
          expect(Number(rows[0].n)).toBe(published);
        },
        'every built event to be a course version',
        { timeoutMs: 120_000, intervalMs: 500 },
      );
    } finally {
      await client2.end();
    }
  });
});
