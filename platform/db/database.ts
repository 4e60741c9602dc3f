import path from 'node:path';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../../prisma/generated/client.js';
import { POSTGRES_LINK } from '../config/link-liveness.js';
import type { Logger } from '../observability/logger.js';
import { reachDependency, STARTUP_REACH_MS } from '../reach-dependency.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';
import { registerPoolReads } from './pool-reads.js';
import { statementName } from './statement-name.logic.js';

export { PrismaClient, Prisma } from '../../prisma/generated/client.js';
export type Db = PrismaClient;
/** The client inside `db.$transaction(async (tx) => ...)`. */
export type Tx = Parameters<Parameters<PrismaClient['$transaction']>[0]>[0] &
  Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;

export interface Database {
  prisma: PrismaClient;
  /** A libpq URL other tools (migrations, raw pg, bench) can use to reach the same database. */
  url: string;
  kind: 'postgres' | 'embedded';
  close(): Promise<void>;
}

/**
 * A Prisma client over pg with `max` connections. With `preparedStatements` (the default) the
 * statements marked by platform/db/prepared.ts run as named prepared statements.
 */
export function createPrismaClient(
  connectionString: string,
  max: number,
  options: { preparedStatements?: boolean; applicationName?: string; logger?: Logger } = {},
): PrismaClient {
  // The adapter types its generator as always naming; undefined (unnamed) is what it sends without one.
  const statementNameGenerator = (query: { sql: string }): string => statementName(query.sql) as string;
  // application_name tells the parts apart in pg_stat_activity (a URL's own ?application_name wins).
  const pool = new pg.Pool({
    connectionString,
    max,
    ...POSTGRES_LINK,
    ...(options.applicationName ? { application_name: options.applicationName } : {}),
  });
  listenForConnectionErrors(pool, options.logger);
  const client = new PrismaClient({
    adapter: new PrismaPg(pool, {
      // The pool is ours (for its listeners) but the client's to end: $disconnect ends it.
      disposeExternalPool: true,
      ...(options.preparedStatements === false ? {} : { statementNameGenerator }),
    }),
  });
  registerPoolReads(client, pool, { named: options.preparedStatements !== false });
  return client;
}

/**
 * A server that ends a session (pg_terminate_backend, a restart, a failover) sends its FATAL error
 * on the socket, and a client with no statement running re-emits it as an `error` event. pg-pool
 * listens only while a client is idle, and the Prisma adapter only once its transaction's
 * `await pool.connect()` has resumed: a client handed over in the same socket read that carries
 * the error had no listener, and the process exited on it (2 runs in 8 of
 * test/faults/database-sessions.test.ts). Every client gets a listener for its whole life; the
 * failed statement is answered 503 where it runs (platform/db/unreachable.ts), and pg-pool drops
 * the client on release (it is no longer queryable) and opens a fresh one.
 */
function listenForConnectionErrors(pool: pg.Pool, logger: Logger | undefined): void {
  pool.on('connect', (client) => {
    client.on('error', (error: Error) => logger?.warn({ err: error.message }, 'database connection lost; the pool replaces it'));
  });
  // What pg-pool reports for an idle client (it has already removed it).
  pool.on('error', () => undefined);
}

/**
 * Opens the database: the Postgres server of DATABASE_URL, or else the embedded Postgres server
 * under DATA_DIR (platform/db/embedded-postgres.ts), reached the same way, with the same pool.
 */
export async function openDatabase(options: {
  databaseUrl?: string;
  dataDir: string;
  poolSize: number;
  logger: Logger;
  /** Marked statements (platform/db/prepared.ts) as named prepared statements; default on. */
  preparedStatements?: boolean;
  /** How this process's connections are named in pg_stat_activity (e.g. catalog-ai-gateway). */
  applicationName?: string;
}): Promise<Database> {
  const prepared = {
    preparedStatements: options.preparedStatements,
    applicationName: options.applicationName,
    logger: options.logger,
  };
  if (options.databaseUrl) {
    await reachDatabase(options.databaseUrl);
    const prisma = createPrismaClient(options.databaseUrl, options.poolSize, prepared);
    return { prisma, url: options.databaseUrl, kind: 'postgres', close: () => prisma.$disconnect() };
  }
  const embedded = await startEmbeddedPostgres({ dir: embeddedClusterDir(options.dataDir), logger: options.logger });
  const prisma = createPrismaClient(embedded.url, options.poolSize, prepared);
  return {
    prisma,
    url: embedded.url,
    kind: 'embedded',
    close: async () => {
      await prisma.$disconnect();
      await embedded.stop();
    },
  };
}

/** The embedded cluster's folder under DATA_DIR. */
export function embeddedClusterDir(dataDir: string): string {
  return path.join(dataDir, 'postgres');
}

/**
 * One connection and `SELECT 1` against DATABASE_URL, bounded: Prisma connects lazily, so without
 * this an unreachable server would surface as a stack trace from the first query (or hang on an
 * address that drops packets).
 */
export async function reachDatabase(url: string): Promise<void> {
  await reachDependency('DATABASE_URL', url, async () => {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: STARTUP_REACH_MS });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
    } finally {
      await client.end().catch(() => undefined);
    }
  });
}
