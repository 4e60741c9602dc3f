import { createTokenVerifier, type TokenVerifier } from './auth/verifier.js';
import { ensureDevKeyPair } from './auth/dev-keys.js';
import type { PlatformConfig } from './config/config.js';
import { openDatabase, type Database } from './db/database.js';
import { createLogger, type Logger } from './logger.js';

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

/** Brings a database up to the schema the code expects; answers the names of the steps it applied. */
export type Migrate = (databaseUrl: string) => Promise<string[]>;

/**
 * Opens what every process needs: logger, database (migrated by the entry point's `migrate`: the
 * migrations belong to prisma/, above this floor), token verifier.
 */
export async function openPlatform(config: PlatformConfig, name: string, deps: { migrate: Migrate }): Promise<Platform> {
  const logger = createLogger({ level: config.logLevel, name });
  logger.info({ node: process.version, pid: process.pid }, `starting ${name} on Node ${process.version}`);
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.dbPoolSize,
    preparedStatements: config.dbPreparedStatements,
    logger,
  });
  const applied = await deps.migrate(database.url);
  if (applied.length) logger.info({ applied }, 'database migrations applied');
  const verifier = await createVerifierFromConfig(config, logger);
  return { config, logger, database, verifier };
}
