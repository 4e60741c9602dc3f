// `npm run db:migrate`: applies pending migrations to DATABASE_URL, or (development only) to the
// embedded database under DATA_DIR when it is unset; with NODE_ENV=production an unset DATABASE_URL
// exits 2 naming it, before anything is written (issue #32).
import path from 'node:path';
import { checkedPlatformConfig } from '../platform/config/production.js';
import { reachDatabase, startEmbeddedPostgres } from '../platform/db/database.js';
import { configOrExit, startOrExit } from '../platform/entrypoint.js';
import { createLogger } from '../platform/logger.js';
import { applyMigrations } from './migrate.js';

const config = configOrExit(checkedPlatformConfig('migrate'));
const logger = createLogger({ level: config.logLevel, name: 'migrate' });
if (config.databaseUrl) await startOrExit(() => reachDatabase(config.databaseUrl!));
const embedded = config.databaseUrl ? undefined : await startEmbeddedPostgres(path.join(config.dataDir, 'pglite'), logger);
try {
  const applied = await applyMigrations(config.databaseUrl ?? embedded!.url);
  logger.info({ applied }, applied.length ? 'migrations applied' : 'database is up to date');
} finally {
  await embedded?.stop();
}
