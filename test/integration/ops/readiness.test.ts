import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateEd25519 } from '../../../platform/auth/dev-keys.js';
import { loadSystemConfig } from '../../../processes/config.js';
import { startSystem, type System } from '../../../processes/system.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { eventually } from '../../support/eventually.js';
import { inProcessSystemEnv } from '../../support/in-process-system.js';
import { startProxy, type Proxy } from '../../support/tcp-proxy.js';

/**
 * /readyz of the whole system while its required database goes away and comes back: a TCP proxy
 * between the process and the database is cut and restored.
 */

interface Report {
  ready: boolean;
  checks: Record<string, { status: string; required: boolean; detail?: string }>;
}

let db: TestDatabase;
let proxy: Proxy;
let system: System;
let dataDir: string;

async function readiness(): Promise<{ status: number; report: Report }> {
  const response = await fetch(`${system.gatewayUrl}/readyz`);
  return { status: response.status, report: (await response.json()) as Report };
}

function readinessUntil(status: number): Promise<{ status: number; report: Report }> {
  const answers = async () => {
    const last = await readiness();
    expect(last.status, JSON.stringify(last.report)).toBe(status);
    return last;
  };
  return eventually(answers, `/readyz to answer ${status}`, { timeoutMs: 20_000, intervalMs: 10 });
}

beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await startProxy(new URL(db.url));
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'readiness-'));
  const keys = await generateEd25519();
  const config = loadSystemConfig(inProcessSystemEnv(dataDir, keys, { DATABASE_URL: proxy.url, DB_POOL_SIZE: '2' }));
  system = await startSystem(config);
});

afterAll(async () => {
  proxy?.restore();
  await system?.stop();
  await proxy?.close();
  await db?.close();
  if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
});

describe('/readyz', () => {
  it('is ready with every dependency listed as up, each saying whether it is required', async () => {
    const { status, report } = await readiness();
    expect(status).toBe(200);
    expect(report.ready).toBe(true);
    expect(report.checks.database).toEqual({ status: 'up', required: true });
    expect(report.checks['subgraph:catalog']).toEqual({ status: 'up', required: false });
    expect(report.checks['subgraph:ai']).toEqual({ status: 'up', required: false });
  });

  it('turns unready (503) while the required database is down, and ready again when it is back', async () => {
    proxy.cut();
    const down = await readinessUntil(503);
    expect(down.status).toBe(503);
    expect(down.report.ready).toBe(false);
    expect(down.report.checks.database).toMatchObject({ status: 'down', required: true, detail: expect.any(String) });
    // The process itself is alive and says so.
    expect((await fetch(`${system.gatewayUrl}/healthz`)).status).toBe(200);

    proxy.restore();
    const up = await readinessUntil(200);
    expect(up.status).toBe(200);
    expect(up.report.checks.database).toEqual({ status: 'up', required: true });
  });
});
