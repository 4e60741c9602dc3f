import fs from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateEd25519 } from '../../../platform/auth/dev-keys.js';
import { openPlatform, SchemaBehindError } from '../../../platform/lifecycle/bootstrap.js';
import { loadPlatformConfig } from '../../../platform/config/config.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { databaseSchema, readMigrations } from '../../../prisma/migrate.js';
import { freePort, processDataDir } from '../../support/child-env.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { spawnEntry } from '../../support/entry-process.js';

/**
 * Migrations are a step of their own in production (issue #23: every process migrated at start, so
 * a rollout of N replicas raced N migrators): with MIGRATE_ON_START off a part only checks the
 * schema, and one that finds it behind refuses to serve with a message naming the migration step.
 */
describe('the schema at start, with MIGRATE_ON_START=false', () => {
  let db: TestDatabase;
  let dataDir: string;
  let publicKey = '';
  const onTeardown: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = processDataDir('schema-on-start-');
    publicKey = JSON.stringify((await generateEd25519()).publicJwk);
  });
  afterAll(async () => {
    for (const teardown of onTeardown) await teardown();
    await db?.close();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const config = () =>
    loadPlatformConfig({ DATABASE_URL: db.url, MIGRATE_ON_START: 'false', AUTH_PUBLIC_KEY: publicKey, DATA_DIR: dataDir });

  it('opens an up-to-date database without writing to it', async () => {
    const platform = await openPlatform(config(), 'check', { schema: databaseSchema, logger: silentLogger });
    await platform.database.close();
    expect(await databaseSchema.pending(db.url)).toEqual([]);
  });

  it('refuses a database one migration behind, naming it and the step that applies it', async () => {
    const last = (await readMigrations()).at(-1)!.name;
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query('UPDATE "_prisma_migrations" SET rolled_back_at = now() WHERE migration_name = $1', [last]);
    await client.end();
    const opened = openPlatform(config(), 'check', { schema: databaseSchema, logger: silentLogger });
    await expect(opened).rejects.toBeInstanceOf(SchemaBehindError);
    await expect(opened).rejects.toThrow(new RegExp(`1 migration\\(s\\) not applied \\(${last}\\).*db:migrate.*migrate`));
  });

  it('stops a gateway process on an empty database with that one line and exit 1; `npm run db:migrate` then brings it up to date', async () => {
    const empty = await createTestDatabase(undefined, { migrate: false });
    onTeardown.push(() => empty.close());
    const all = (await readMigrations()).length;
    const gateway = spawnEntry('processes/gateway.main.ts', {
      DATABASE_URL: empty.url,
      MIGRATE_ON_START: 'false',
      AUTH_PUBLIC_KEY: publicKey,
      DATA_DIR: dataDir,
      PORT: String(await freePort()),
      OTEL_SDK_DISABLED: 'true',
    });
    const code = await Promise.race([
      gateway.exited,
      new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 90_000).unref()),
    ]);
    if (code === 'running') await gateway.kill('SIGKILL');
    expect(code, gateway.output()).toBe(1);
    expect(gateway.output()).toContain(`The database schema is behind this version: ${all} migration(s) not applied`);
    expect(gateway.output()).not.toMatch(/^\s+at /m);

    const migrate = spawnEntry('prisma/migrate.cli.ts', { DATABASE_URL: empty.url, DATA_DIR: dataDir });
    expect(await migrate.exited, migrate.output()).toBe(0);
    expect(await databaseSchema.pending(empty.url)).toEqual([]);
  });
});
