// `npm run db:migrate`: applies pending migrations to DATABASE_URL, or (development only) to the
// embedded Postgres under DATA_DIR when it is unset; with NODE_ENV=production an unset DATABASE_URL
// exits 2 naming it, before anything is written.
import { checkedPlatformConfig } from '../platform/config/production.js';
import { embeddedClusterDir, reachDatabase } from '../platform/db/database.js';
import { startEmbeddedPostgres } from '../platform/db/embedded-postgres.js';
import { configOrExit, startOrExit } from '../platform/lifecycle/entrypoint.js';
import { createLogger } from '../platform/observability/logger.js';
import { applyMigrations } from './migrate.js';

const config = configOrExit(checkedPlatformConfig('migrate'));
const logger = createLogger({ level: config.logLevel, name: 'migrate' });
if (config.databaseUrl) await startOrExit(() => reachDatabase(config.databaseUrl!));
const embedded = config.databaseUrl
  ? undefined
  : await startOrExit(() => startEmbeddedPostgres({ dir: embeddedClusterDir(config.dataDir), logger }));
try {
  const applied = await applyMigrations(config.databaseUrl ?? embedded!.url);
  logger.info({ applied }, applied.length ? 'migrations applied' : 'database is up to date');
} finally {
  await embedded?.stop();
}
