import { createTokenVerifier, type TokenVerifier } from '../auth/verifier.js';
import { ensureDevKeyPair } from '../auth/dev-keys.js';
import type { PlatformConfig } from '../config/config.js';
import { ConfigError } from '../config/env.js';
import { openDatabase, type Database } from '../db/database.js';
import { createLogger, type Logger } from '../observability/logger.js';

/**
 * The token verifier of the configuration: the identity provider's keys when configured, else
 * the development key pair under DATA_DIR (embedded default, logged loudly).
 */
export async function createVerifierFromConfig(config: PlatformConfig, logger: Logger): Promise<TokenVerifier> {
  const common = {
    issuer: config.auth.issuer,
    audience: config.auth.audience,
    maxTokenLifetimeSeconds: config.auth.maxTokenLifetimeSeconds,
    clockToleranceSeconds: config.auth.clockToleranceSeconds,
  };
  if (config.auth.jwksUrl || config.auth.publicKey) {
    return createTokenVerifier({ ...common, jwksUrl: config.auth.jwksUrl, publicKey: config.auth.publicKey });
  }
  // Defence in depth: the process loaders already refuse this combination (config/production.ts).
  if (config.production) throw new ConfigError('AUTH_JWKS_URL', 'or AUTH_PUBLIC_KEY must be set when NODE_ENV=production');
  const keys = await ensureDevKeyPair(config.dataDir);
  logger.warn('AUTH_JWKS_URL / AUTH_PUBLIC_KEY not set: verifying tokens with the development key under DATA_DIR');
  return createTokenVerifier({ ...common, publicKey: JSON.stringify(keys.publicJwk) });
}

export interface Platform {
  config: PlatformConfig;
  logger: Logger;
  database: Database;
  verifier: TokenVerifier;
}

/**
 * What a process can do about its database's schema (prisma/migrate.ts, above this floor): `apply`
 * the pending migrations (answers their names), or list those still `pending`.
 */
export interface SchemaSteps {
  apply(databaseUrl: string): Promise<string[]>;
  pending(databaseUrl: string): Promise<string[]>;
}

/** The schema is behind the code and this process does not migrate: it refuses to serve. */
export class SchemaBehindError extends Error {
  override name = 'SchemaBehindError';
  constructor(pending: string[]) {
    super(
      `The database schema is behind this version: ${pending.length} migration(s) not applied (${pending.join(', ')}). ` +
        "Run the migration step first (`npm run db:migrate`, or the image's `migrate` command), or set MIGRATE_ON_START=true.",
    );
  }
}

/**
 * Opens what every process needs: logger, database (migrated at start when MIGRATE_ON_START, else
 * checked: a schema behind the code stops the start), token verifier.
 */
export async function openPlatform(
  config: PlatformConfig,
  name: string,
  deps: { schema: SchemaSteps; logger?: Logger },
): Promise<Platform> {
  const logger = deps.logger ?? createLogger({ level: config.logLevel, name });
  logger.info({ node: process.version, pid: process.pid }, `starting ${name} on Node ${process.version}`);
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.dbPoolSize,
    preparedStatements: config.dbPreparedStatements,
    applicationName: `catalog-ai-${name}`,
    logger,
  });
  try {
    await bringSchemaUpToDate(config, database.url, deps.schema, logger);
  } catch (error) {
    await database.close().catch(() => undefined);
    throw error;
  }
  const verifier = await createVerifierFromConfig(config, logger);
  return { config, logger, database, verifier };
}

async function bringSchemaUpToDate(config: PlatformConfig, url: string, schema: SchemaSteps, logger: Logger): Promise<void> {
  if (config.migrateOnStart) {
    const applied = await schema.apply(url);
    if (applied.length) logger.info({ applied }, 'database migrations applied');
    return;
  }
  const pending = await schema.pending(url);
  if (pending.length) throw new SchemaBehindError(pending);
}
