import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyMigrations } from '../../prisma/migrate.js';
import { createTestDatabase, databaseKinds, type TestDatabase } from '../support/database.js';

describe.each(databaseKinds())('migrations on %s', (kind) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(kind);
  });
  afterAll(async () => db?.close());

  it('records every migration once and re-running applies nothing', async () => {
    const rows = await db.prisma.$queryRawUnsafe<{ migration_name: string; checksum: string }[]>(
      'SELECT migration_name, checksum FROM "_prisma_migrations" ORDER BY migration_name',
    );
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => /^[0-9a-f]{64}$/.test(r.checksum))).toBe(true);
    expect(await applyMigrations(db.url)).toEqual([]);
  });
});
