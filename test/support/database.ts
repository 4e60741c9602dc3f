import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { PrismaClient } from '../../prisma/generated/client.js';
import { createPrismaClient, startEmbeddedPostgres } from '../../platform/db/database.js';
import { silentLogger } from '../../platform/logger.js';
import { applyMigrations } from '../../prisma/migrate.js';

export interface TestDatabase {
  kind: 'pglite' | 'postgres';
  url: string;
  prisma: PrismaClient;
  close(): Promise<void>;
}

/**
 * A fresh, migrated database for one test file: an in-memory PGlite, or a new database created on
 * the Postgres server of DATABASE_URL (dropped on close), so files never see each other's rows.
 */
export async function createTestDatabase(
  kind: 'pglite' | 'postgres',
  options: {
    poolSize?: number;
    /** false: an empty database, for a test of the migrations themselves. */
    migrate?: boolean;
  } = {},
): Promise<TestDatabase> {
  if (kind === 'pglite') {
    const embedded = await startEmbeddedPostgres(undefined, silentLogger);
    if (options.migrate !== false) await applyMigrations(embedded.url);
    // One connection and unnamed statements, as in platform/db/database.ts (electric-sql/pglite#1046).
    const prisma = createPrismaClient(embedded.url, 1, { preparedStatements: false });
    return {
      kind,
      url: embedded.url,
      prisma,
      close: async () => {
        await prisma.$disconnect();
        await embedded.stop();
      },
    };
  }
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) throw new Error('createTestDatabase("postgres") needs DATABASE_URL');
  const name = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  if (options.migrate !== false) await applyMigrations(url.toString());
  const prisma = createPrismaClient(url.toString(), options.poolSize ?? 10);
  return {
    kind,
    url: url.toString(),
    prisma,
    close: async () => {
      await prisma.$disconnect();
      const drop = new pg.Client({ connectionString: serverUrl });
      await drop.connect();
      await drop.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await drop.end();
    },
  };
}

/** The database kinds a suite should run on: PGlite always, Postgres when DATABASE_URL is set. */
export function databaseKinds(): Array<'pglite' | 'postgres'> {
  return process.env.DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];
}
