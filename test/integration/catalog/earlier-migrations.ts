import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { applyMigrations, MIGRATIONS_DIR } from '../../../prisma/migrate.js';

/**
 * Migrates the database only up to (not including) `migration`, so a test can write rows as an
 * older release did before applying the rest. Returns the function that removes the temporary
 * folder of migrations.
 */
export async function applyMigrationsBefore(databaseUrl: string, migration: string): Promise<() => void> {
  const earlier = fs.mkdtempSync(path.join(os.tmpdir(), 'migrations-'));
  for (const name of fs.readdirSync(MIGRATIONS_DIR)) {
    if (name < migration) fs.cpSync(path.join(MIGRATIONS_DIR, name), path.join(earlier, name), { recursive: true });
  }
  await applyMigrations(databaseUrl, earlier);
  return () => fs.rmSync(earlier, { recursive: true, force: true });
}
