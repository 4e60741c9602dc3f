// What the assist benches share: the fake OpenAI-compatible upstream, and ours (`npm start`'s
// main.ts, or dist/main.js with BENCH_OURS_BUILT=1) in production mode on a given database, with
// the hosted provider's key in embedded mode's vault file and a tenant whose quota is on.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestDatabase } from '../test/support/database.js';
import { ROOT, freePort, spawnNode, type Keys, type Proc } from './lib.js';

export async function startFakeUpstream(): Promise<{ proc: Proc; url: string }> {
  const port = await freePort();
  const proc = await spawnNode('fake-openai', 'bench/fake-openai.ts', {
    env: { PORT: String(port) },
    readyUrl: `http://127.0.0.1:${port}/healthz`,
  });
  return { proc, url: `http://127.0.0.1:${port}/v1` };
}

export interface OursOptions {
  /** The process's name in logs and profiles (BENCH_CPU_PROF_DIR). */
  name: string;
  /** The checkout to run (default: this one): an older one for a same-run comparison. */
  dir?: string;
  /** The entry to start, relative to `dir` (default: main.ts, or dist/main.js with BENCH_OURS_BUILT=1). */
  entry?: string;
  db: TestDatabase;
  /** DATABASE_URL when it differs from the database's own (e.g. with libpq `options`). */
  databaseUrl?: string;
  keys: Keys;
  upstream: string;
  tenant: string;
  env?: Record<string, string>;
}

export interface Ours {
  proc: Proc;
  /** http://127.0.0.1:<port> */
  base: string;
  /** The variables ours runs with, but PORT: for a layer process of the same configuration. */
  env: Record<string, string | undefined>;
  stop(): Promise<void>;
}

/** Ours in production mode, which needs NATS (no in-process fallback) and Redis (the quota). */
export async function startOurs(options: OursOptions): Promise<Ours> {
  const natsUrl = process.env.NATS_URL;
  const redisUrl = process.env.REDIS_URL;
  if (!natsUrl || !redisUrl)
    throw new Error('ours runs in production mode, which needs NATS_URL and REDIS_URL (bench/README.md)');
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), `bench-${options.name.replace(/\W+/g, '-')}-`));
  // The hosted provider's key, in embedded mode's vault file (the global rule routes to it).
  await fs.mkdir(path.join(dataDir, 'vault'), { recursive: true });
  await fs.writeFile(
    path.join(dataDir, 'vault', 'secrets.json'),
    JSON.stringify({ 'ai/providers/openai-compatible': { api_key: 'sk-bench' } }),
  );
  const [port, catalogPort, aiPort] = [await freePort(), await freePort(), await freePort()];
  const env = {
    DATABASE_URL: options.databaseUrl ?? options.db.url,
    DB_POOL_SIZE: '10',
    REDIS_URL: redisUrl,
    NATS_URL: natsUrl,
    // Its worker relays the audit events to NATS; the streams it consumes belong to other services.
    CREATE_PRODUCER_STREAMS: 'true',
    CATALOG_PORT: String(catalogPort),
    AI_PORT: String(aiPort),
    DATA_DIR: dataDir,
    AUTH_PUBLIC_KEY: options.keys.publicKey,
    OPENAI_BASE_URL: options.upstream,
    OPENAI_MODEL: 'gpt-4o-mini',
    DEMO_DATA: 'false',
    GRAPHIQL_ENABLED: 'false',
    ...options.env,
  };
  // BENCH_OURS_BUILT=1: the production build (`npm run build` first), as a platform team runs it.
  const built = process.env.BENCH_OURS_BUILT === '1';
  const base = `http://127.0.0.1:${port}`;
  const entry = options.entry ?? (built ? 'dist/main.js' : 'main.ts');
  const proc = await spawnNode(options.name, entry, {
    tsx: entry.endsWith('.ts'),
    cwd: options.dir ?? ROOT,
    env: { ...env, PORT: String(port) },
    readyUrl: `${base}/readyz`,
  });
  await options.db.prisma.tenantSettings.upsert({
    where: { tenantId: options.tenant },
    create: { tenantId: options.tenant, quotaEnabled: true, requestsPerMinute: 100_000_000, tokensPerDay: 0 },
    update: { quotaEnabled: true },
  });
  return {
    proc,
    base,
    env,
    stop: async () => {
      await proc.stop();
      await fs.rm(dataDir, { recursive: true, force: true });
    },
  };
}
