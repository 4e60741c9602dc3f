// `schema-ready` (the image's init container, deploy/base/*.yaml): waits until the database at
// DATABASE_URL has every migration of this version applied — the migration Job applies them — and
// exits 0; exits 1 after SCHEMA_WAIT_SECONDS (default 300) with the migrations still missing.
import { ConfigError, envInt } from '../platform/config/env.js';
import { checkedPlatformConfig } from '../platform/config/production.js';
import { reachDatabase } from '../platform/db/database.js';
import { configOrExit, startOrExit } from '../platform/lifecycle/entrypoint.js';
import { createLogger } from '../platform/observability/logger.js';
import { pendingMigrations } from './migrate.js';

const config = configOrExit((env) => {
  const platform = checkedPlatformConfig('schema-ready')(env);
  // Outside production too: schema-ready has no embedded database to wait for.
  if (!platform.databaseUrl) throw new ConfigError('DATABASE_URL', 'must be set: schema-ready checks a real database');
  return { ...platform, databaseUrl: platform.databaseUrl, waitSeconds: envInt(env, 'SCHEMA_WAIT_SECONDS', 300, 1, 86_400) };
});
const logger = createLogger({ level: config.logLevel, name: 'schema-ready' });
await startOrExit(() => reachDatabase(config.databaseUrl));
const deadline = Date.now() + config.waitSeconds * 1000;
let pending = await pendingMigrations(config.databaseUrl);
while (pending.length && Date.now() < deadline) {
  logger.info({ pending }, 'waiting for the migration step');
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  pending = await pendingMigrations(config.databaseUrl);
}
if (pending.length) {
  console.error(`The database schema is still behind after ${config.waitSeconds} s: ${pending.join(', ')} not applied`);
  process.exit(1);
}
logger.info('database schema is up to date');
