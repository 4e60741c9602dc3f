import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateEd25519, mintToken, type DevKeyPair } from '../../../platform/auth/dev-keys.js';
import { newId, newUlid } from '../../../platform/ids.js';
import { freePort, processDataDir } from '../../support/child-env.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { eventually } from '../../support/eventually.js';
import { spawnEntry, waitForHttp, type EntryProcess } from '../../support/entry-process.js';
import { privateServicesAvailable, startPrivateNats, type PrivateNats } from '../../support/private-services.js';
import { realService } from '../../support/services.js';
import { startProxy, type Proxy } from '../../support/tcp-proxy.js';

/**
 * Every part run as its own process answers /readyz with what it needs to serve, so a load
 * balancer takes a replica that lost its database out of rotation (issue #22: catalog and AI had
 * none), and the gateway stays ready through a Redis outage because its keyed writes fall back to
 * the database table instead of all answering 503 (issue #24: "ready while every write fails").
 */
interface Report {
  ready: boolean;
  checks: Record<string, { status: string; required: boolean; detail?: string }>;
}

const redisUrl = realService('REDIS_URL');
const runs = Boolean(redisUrl) && privateServicesAvailable('per-part readiness', ['nats-server']);

describe.runIf(runs)('/readyz of each part, as its own process', () => {
  let db: TestDatabase;
  let dbProxy: Proxy;
  let redisProxy: Proxy;
  let nats: PrivateNats;
  let keys: DevKeyPair;
  let dataDir: string;
  const parts: Record<string, { process: EntryProcess; readyz: string }> = {};
  let gatewayUrl = '';

  async function readiness(part: string): Promise<{ status: number; report: Report }> {
    const response = await fetch(parts[part].readyz, { signal: AbortSignal.timeout(5_000) });
    return { status: response.status, report: (await response.json()) as Report };
  }

  function readinessUntil(part: string, status: number) {
    const answers = async () => {
      const last = await readiness(part);
      expect(last.status, JSON.stringify(last.report)).toBe(status);
      return last;
    };
    return eventually(answers, `${part} /readyz to answer ${status}`, { timeoutMs: 30_000, intervalMs: 50 });
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    dbProxy = await startProxy(new URL(db.url));
    redisProxy = await startProxy(new URL(redisUrl!));
    nats = await startPrivateNats();
    keys = await generateEd25519();
    dataDir = processDataDir('part-readiness-');
    const common = {
      DATABASE_URL: dbProxy.url,
      DB_POOL_SIZE: '2',
      DATA_DIR: dataDir,
      AUTH_PUBLIC_KEY: JSON.stringify(keys.publicJwk),
      OTEL_SDK_DISABLED: 'true',
      LOG_LEVEL: 'error',
    };
    const [catalogPort, aiPort, gatewayPort, workerPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const spawnPart = (name: string, entry: string, env: Record<string, string>, readyz: string) => {
      parts[name] = { process: spawnEntry(entry, { ...common, ...env }), readyz };
    };
    spawnPart(
      'catalog',
      'processes/catalog.main.ts',
      { CATALOG_PORT: String(catalogPort) },
      `http://127.0.0.1:${catalogPort}/readyz`,
    );
    spawnPart(
      'ai',
      'processes/ai.main.ts',
      { AI_PORT: String(aiPort), REDIS_URL: redisProxy.url },
      `http://127.0.0.1:${aiPort}/readyz`,
    );
    spawnPart(
      'worker',
      'processes/worker.main.ts',
      { NATS_URL: nats.url, METRICS_PORT: String(workerPort) },
      `http://127.0.0.1:${workerPort}/readyz`,
    );
    spawnPart(
      'gateway',
      'processes/gateway.main.ts',
      {
        PORT: String(gatewayPort),
        REDIS_URL: redisProxy.url,
        CATALOG_URL: `http://127.0.0.1:${catalogPort}/graphql`,
        AI_URL: `http://127.0.0.1:${aiPort}/graphql`,
      },
      `http://127.0.0.1:${gatewayPort}/readyz`,
    );
    gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
    // One at a time: each migrates the same database at start.
    for (const [name, part] of Object.entries(parts)) await waitForHttp(part.process, part.readyz, name);
  });

  afterAll(async () => {
    dbProxy?.restore();
    redisProxy?.restore();
    await Promise.all(Object.values(parts).map((part) => part.process.kill('SIGTERM')));
    await nats?.destroy();
    await Promise.all([dbProxy?.close(), redisProxy?.close()]);
    await db?.close();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('names what each part needs, each check saying whether it is required', async () => {
    const checks = Object.fromEntries(
      await Promise.all(Object.keys(parts).map(async (part) => [part, (await readiness(part)).report.checks] as const)),
    );
    expect(checks.catalog).toEqual({ database: { status: 'up', required: true } });
    expect(checks.ai).toEqual({ database: { status: 'up', required: true }, quota: { status: 'up', required: false } });
    expect(checks.worker).toMatchObject({ database: { status: 'up', required: true }, bus: { status: 'up', required: true } });
    expect(checks.gateway).toMatchObject({
      idempotency: { status: 'up', required: true },
      'subgraph:catalog': { status: 'up', required: false },
      'subgraph:ai': { status: 'up', required: false },
    });
  });

  /** The parts holding a connection named `catalog-ai-<part>` right now. */
  async function namedConnections(): Promise<string[]> {
    const rows = await db.prisma.$queryRawUnsafe<Array<{ name: string }>>(
      'SELECT DISTINCT application_name AS name FROM pg_stat_activity WHERE datname = current_database()',
    );
    return rows
      .map((row) => row.name)
      .filter((name) => name.startsWith('catalog-ai-'))
      .sort();
  }

  it('names the database connections of the catalog, AI and worker in pg_stat_activity', async () => {
    const names = await eventually(async () => {
      // An idle pool connection closes after 10 s: each part's readiness check queries its database,
      // so each holds a connection right now.
      await Promise.all(['catalog', 'ai', 'worker'].map((part) => readiness(part)));
      const found = await namedConnections();
      expect(found).toEqual(expect.arrayContaining(['catalog-ai-ai', 'catalog-ai-catalog', 'catalog-ai-worker']));
      return found;
    }, 'every part to hold a named connection');
    expect(names.length).toBeGreaterThanOrEqual(3);
  });

  it('takes the catalog, AI and worker out of rotation while their database is down, and back when it returns', async () => {
    dbProxy.cut();
    for (const part of ['catalog', 'ai', 'worker']) {
      const down = await readinessUntil(part, 503);
      expect(down.report.checks.database, part).toMatchObject({ status: 'down', required: true });
    }
    dbProxy.restore();
    for (const part of ['catalog', 'ai', 'worker']) await readinessUntil(part, 200);
  });

  it('keeps the gateway ready through a Redis outage, and its keyed writes working', async () => {
    redisProxy.cut();
    const degraded = await eventually(async () => {
      const last = await readiness('gateway');
      expect(last.report.checks.idempotency?.status, JSON.stringify(last.report)).toBe('degraded');
      return last;
    }, 'the gateway to report its idempotency store degraded');
    expect(degraded.status).toBe(200);

    const tenant = newId('tenant');
    const token = await mintToken(keys.privateJwk, { sub: 'svc:readiness', tid: tenant, scope: 'ai.admin' });
    const key = newUlid();
    const send = () =>
      fetch(`${gatewayUrl}/v1/admin/routing-rules`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'x-tenant-id': tenant,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: JSON.stringify({ featureKey: 'portal.triage', primary: { provider: 'mock', model: 'm' }, fallbacks: [] }),
      });
    const created = await send();
    const body = await created.text();
    expect(created.status, body).toBe(201);
    // The record is in the database table now: the repeat replays it.
    const replay = await send();
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.text()).toBe(body);
    // The gateway queries the database only for this fallback: its connection carries its name.
    expect(await namedConnections()).toContain('catalog-ai-gateway');

    redisProxy.restore();
    await eventually(async () => {
      expect((await readiness('gateway')).report.checks.idempotency?.status).toBe('up');
    }, 'the gateway to report Redis back');
  });

  it('takes the gateway out of rotation when neither Redis nor the database can hold a record', async () => {
    redisProxy.cut();
    dbProxy.cut();
    const down = await readinessUntil('gateway', 503);
    expect(down.report.checks.idempotency).toMatchObject({ status: 'down', required: true });
    redisProxy.restore();
    dbProxy.restore();
    await readinessUntil('gateway', 200);
  });
});
