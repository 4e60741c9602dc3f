import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import type { PrismaClient } from '../../prisma/generated/client.js';
import { createPrismaClient } from '../../platform/db/database.js';
import { applyMigrations } from '../../prisma/migrate.js';

/**
 * Where a test database lives: `postgres`, the server of DATABASE_URL; `embedded`, the run's
 * embedded Postgres (test/support/embedded-database-setup.ts), the server `npm start` runs with no
 * DATABASE_URL. Both are real Postgres servers, so every suite runs the same way on either.
 */
export type DatabaseKind = 'embedded' | 'postgres';

export interface TestDatabase {
  kind: DatabaseKind;
  url: string;
  prisma: PrismaClient;
  close(): Promise<void>;
}

/** The server this run's databases are made on: DATABASE_URL's when set, else the embedded one. */
export function testDatabaseKind(): DatabaseKind {
  return process.env.DATABASE_URL ? 'postgres' : 'embedded';
}

/** Every suite runs once, on the run's server (the README's `npm test` runs it on the embedded one). */
export function databaseKinds(): DatabaseKind[] {
  return [testDatabaseKind()];
}

/** The URL of the server itself (its `postgres` database), for a session outside the test database. */
export function serverUrl(kind: DatabaseKind = testDatabaseKind()): string {
  if (kind === 'postgres') {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('createTestDatabase("postgres") needs DATABASE_URL');
    return url;
  }
  const url = inject('embeddedDatabaseServerUrl');
  if (!url)
    throw new Error(
      "no embedded test server: the vitest project's globalSetup (test/support/embedded-database-setup.ts) starts it",
    );
  return url;
}

/**
 * A fresh, migrated database for one test file, created on the server of `kind` and dropped on
 * close, so files never see each other's rows.
 */
export async function createTestDatabase(
  kind: DatabaseKind = testDatabaseKind(),
  options: {
    poolSize?: number;
    /** false: an empty database, for a test of the migrations themselves. */
    migrate?: boolean;
    /** Another server than the run's (a bench's private one with settings of its own). */
    serverUrl?: string;
  } = {},
): Promise<TestDatabase> {
  const server = options.serverUrl ?? serverUrl(kind);
  const name = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${name}`;
  if (options.migrate !== false) await applyMigrations(url.toString());
  const prisma = createPrismaClient(url.toString(), options.poolSize ?? 10);
  return {
    kind,
    url: url.toString(),
    prisma,
    close: async () => {
      await prisma.$disconnect();
      const drop = new pg.Client({ connectionString: server });
      await drop.connect();
      await drop.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await drop.end();
    },
  };
}
