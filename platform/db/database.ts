import fs from 'node:fs/promises';
import path from 'node:path';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../../prisma/generated/client.js';
import type { Logger } from '../logger.js';
import { reachDependency, STARTUP_REACH_MS } from '../reach-dependency.js';
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
  kind: 'postgres' | 'pglite';
  close(): Promise<void>;
}

/**
 * A Prisma client over pg with `max` connections. With `preparedStatements` (the default) the
 * statements marked by platform/db/prepared.ts run as named prepared statements.
 */
export function createPrismaClient(
  connectionString: string,
  max: number,
  options: { preparedStatements?: boolean; applicationName?: string } = {},
): PrismaClient {
  // The adapter types its generator as always naming; undefined (unnamed) is what it sends without one.
  const statementNameGenerator = (query: { sql: string }): string => statementName(query.sql) as string;
  // application_name tells the parts apart in pg_stat_activity (a URL's own ?application_name wins).
  const pool = { connectionString, max, ...(options.applicationName ? { application_name: options.applicationName } : {}) };
  return new PrismaClient({
    adapter: new PrismaPg(pool, options.preparedStatements === false ? {} : { statementNameGenerator }),
  });
}

/**
 * Opens the database: Postgres when DATABASE_URL is set, otherwise an embedded PGlite under
 * DATA_DIR served over a loopback socket so the very same Prisma pg adapter talks to both.
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
  const prepared = { preparedStatements: options.preparedStatements, applicationName: options.applicationName };
  if (options.databaseUrl) {
    await reachDatabase(options.databaseUrl);
    const prisma = createPrismaClient(options.databaseUrl, options.poolSize, prepared);
    return { prisma, url: options.databaseUrl, kind: 'postgres', close: () => prisma.$disconnect() };
  }
  const embedded = await startEmbeddedPostgres(path.join(options.dataDir, 'pglite'), options.logger);
  // One connection: pglite-socket interleaves the extended-protocol messages of concurrent
  // connections outside a transaction (electric-sql/pglite#1046, "bind message supplies 8
  // parameters, but prepared statement requires 3"). PGlite runs one statement at a time anyway.
  // Unnamed statements only: after a statement fails at execution (a NUL in a text, 22P05)
  // pglite-socket loses its ParseComplete, so pg forgets a named statement PGlite still holds, and
  // every later use of the name fails with 42P05 "prepared statement already exists".
  const prisma = createPrismaClient(embedded.url, 1, { ...prepared, preparedStatements: false });
  return {
    prisma,
    url: embedded.url,
    kind: 'pglite',
    close: async () => {
      await prisma.$disconnect();
      await embedded.stop();
    },
  };
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

export interface EmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

/** PGlite (Postgres compiled to wasm) behind pglite-socket on an OS-assigned loopback port. */
export async function startEmbeddedPostgres(dir: string | undefined, logger: Logger): Promise<EmbeddedPostgres> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGLiteSocketServer } = await import('@electric-sql/pglite-socket');
  if (dir) await fs.mkdir(dir, { recursive: true });
  const db = await PGlite.create(dir ? { dataDir: dir } : {});
  const server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: 16 });
  await server.start();
  const port = Number(server.getServerConn().split(':').pop());
  if (!port) throw new Error('PGlite socket server did not report its port');
  logger.info({ dir: dir ?? 'memory', port }, 'embedded PGlite database started');
  return {
    url: `postgresql://postgres@127.0.0.1:${port}/postgres?sslmode=disable`,
    stop: async () => {
      await server.stop();
      await db.close();
    },
  };
}
