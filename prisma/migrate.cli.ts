// `npm run db:migrate`: applies pending migrations to DATABASE_URL, or to the embedded PGlite
// database under DATA_DIR when it is unset.
import { loadConfig } from '../platform/config/config.js';
import { startEmbeddedPostgres } from '../platform/db/database.js';
import { createLogger } from '../platform/logger.js';
import path from 'node:path';
import { applyMigrations } from './migrate.js';

const config = loadConfig();
const logger = createLogger({ level: config.logLevel, name: 'migrate' });
const embedded = config.databaseUrl ? undefined : await startEmbeddedPostgres(path.join(config.dataDir, 'pglite'), logger);
try {
  const applied = await applyMigrations(config.databaseUrl ?? embedded!.url);
  logger.info({ applied }, applied.length ? 'migrations applied' : 'database is up to date');
} finally {
  await embedded?.stop();
}
