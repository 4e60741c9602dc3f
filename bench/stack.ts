// The system under test as production runs it: each part its own process (catalog subgraph, AI
// subgraph, gateway + REST-compat replicas, event worker) on a fresh Postgres database, so a peer
// gateway can be pointed at the very same subgraphs and every process's CPU and memory can be told
// apart.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestDatabase } from '../test/support/database.js';
import { benchKeys, freePort, freshDatabase, spawnNode, type Keys, type Proc } from './lib.js';

export interface Stack {
  db: TestDatabase;
  keys: Keys;
  catalog: Proc & { url: string };
  ai?: Proc & { url: string };
  gateway: Proc & { url: string };
  /**
   * Another gateway process over the same subgraphs and database, with `env` on top of the stack's
   * (e.g. the response cache on beside one with it off); stopped with the stack.
   */
  addGateway(name: string, env: Record<string, string>): Promise<Proc & { url: string }>;
  /** Every gateway replica (`gateway` is the first). */
  gateways: Array<Proc & { url: string }>;
  /** The event worker (outbox relay, consumers), when asked for; `url` is its ops port. */
  worker?: Proc & { url: string };
  stop(): Promise<void>;
}

export interface StackOptions {
  /** Also start the AI subgraph (the gateway then serves fields of both). */
  ai?: boolean;
  /** Extra variables for every process, e.g. QUERY_MAX_COST. */
  env?: Record<string, string>;
  /** Node flags per part, e.g. { gateway: ['--cpu-prof', '--cpu-prof-dir=...'] }. */
  nodeArgs?: Partial<Record<'catalog' | 'ai' | 'gateway', string[]>>;
  /** Seeds the database before any process starts. */
  seed?: (db: TestDatabase) => Promise<void>;
  dbPoolSize?: number;
  /** Gateway replicas, each its own process on its own port (default 1). */
  gateways?: number;
  /** Also start the event worker (processes/worker.main.ts), which relays the outbox to NATS_URL. */
  worker?: boolean;
  /** The Postgres server the fresh database is created on, when not DATABASE_URL's. */
  databaseServerUrl?: string;
}

/**
 * BENCH_OURS_BUILT=1: our processes run from the production build (`npm run build` first), as a
 * platform team runs them (plain node, no tsx); otherwise from source, as `npm start` does.
 */
function ourEntry(part: 'catalog' | 'ai' | 'gateway' | 'worker'): { entry: string; tsx: boolean } {
  return process.env.BENCH_OURS_BUILT === '1'
    ? { entry: `dist/processes/${part}.main.js`, tsx: false }
    : { entry: `processes/${part}.main.ts`, tsx: true };
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const db = await freshDatabase(undefined, options.databaseServerUrl);
  const keys = await benchKeys();
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-stack-'));
  const procs: Proc[] = [];
  const stop = async () => {
    for (const proc of procs.reverse()) await proc.stop();
    await db.close();
    await fs.rm(dataDir, { recursive: true, force: true });
  };
  try {
    await options.seed?.(db);
    const common = {
      DATABASE_URL: db.url,
      // Three processes share one Postgres with other users of this machine (max_connections 100).
      DB_POOL_SIZE: String(options.dbPoolSize ?? 10),
      AUTH_PUBLIC_KEY: keys.publicKey,
      DATA_DIR: dataDir,
      GRAPHIQL_ENABLED: 'false',
      // Production mode refuses the embedded fallbacks (issue #23): the parts get the machine's
      // NATS and Redis, as deployed. A scenario's own env may override them.
      ...requiredService('NATS_URL'),
      ...requiredService('REDIS_URL'),
      ...options.env,
    };
    const catalogPort = await freePort();
    const catalog = Object.assign(
      await spawnNode('catalog', ourEntry('catalog').entry, {
        tsx: ourEntry('catalog').tsx,
        env: { ...common, CATALOG_PORT: String(catalogPort) },
        nodeArgs: options.nodeArgs?.catalog,
        readyUrl: `http://127.0.0.1:${catalogPort}/healthz`,
      }),
      { url: `http://127.0.0.1:${catalogPort}/graphql` },
    );
    procs.push(catalog);
    let ai: (Proc & { url: string }) | undefined;
    const aiPort = await freePort();
    if (options.ai) {
      ai = Object.assign(
        await spawnNode('ai', ourEntry('ai').entry, {
          tsx: ourEntry('ai').tsx,
          // The gateway scenarios read provenance, they never assist: no model provider, knowingly.
          env: { ...common, AI_PORT: String(aiPort), AI_ALLOW_MOCK_PROVIDER: 'true' },
          nodeArgs: options.nodeArgs?.ai,
          readyUrl: `http://127.0.0.1:${aiPort}/healthz`,
        }),
        { url: `http://127.0.0.1:${aiPort}/graphql` },
      );
      procs.push(ai);
    }
    let worker: (Proc & { url: string }) | undefined;
    if (options.worker) {
      const opsPort = await freePort();
      worker = Object.assign(
        await spawnNode('worker', ourEntry('worker').entry, {
          tsx: ourEntry('worker').tsx,
          env: { ...common, METRICS_PORT: String(opsPort) },
          // Ready once its streams exist and the relay runs.
          readyUrl: `http://127.0.0.1:${opsPort}/readyz`,
        }),
        { url: `http://127.0.0.1:${opsPort}` },
      );
      procs.push(worker);
    }
    const gateways: Array<Proc & { url: string }> = [];
    const addGateway = async (name: string, env: Record<string, string>) => {
      const port = await freePort();
      const gateway = Object.assign(
        await spawnNode(name, ourEntry('gateway').entry, {
          tsx: ourEntry('gateway').tsx,
          env: {
            ...common,
            PORT: String(port),
            CATALOG_URL: catalog.url,
            AI_URL: ai?.url ?? `http://127.0.0.1:${aiPort}/graphql`,
            ...env,
          },
          nodeArgs: options.nodeArgs?.gateway,
          readyUrl: `http://127.0.0.1:${port}/healthz`,
        }),
        { url: `http://127.0.0.1:${port}` },
      );
      procs.push(gateway);
      return gateway;
    };
    for (let i = 0; i < (options.gateways ?? 1); i++)
      gateways.push(await addGateway(i === 0 ? 'gateway' : `gateway-${i + 1}`, {}));
    return { db, keys, catalog, ai, gateway: gateways[0], gateways, addGateway, worker, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A real service the production-mode parts need, from the bench's environment (bench/README.md). */
function requiredService(name: 'NATS_URL' | 'REDIS_URL'): Record<string, string> {
  const url = process.env[name];
  if (!url) throw new Error(`the stack runs in production mode, which needs ${name}: export it (bench/README.md)`);
  return { [name]: url };
}
