import type { PlatformConfig } from './config.js';
import { ConfigError } from './env.js';

/** What a part cannot run without in production, beyond a database and a token verification key. */
export interface ProductionNeeds {
  /** NATS (the worker; the catalog, which replays dead letters). */
  bus?: boolean;
  /** Redis (the AI subgraph: per-tenant quotas shared by every replica). */
  redis?: boolean;
}

/**
 * With NODE_ENV=production no development fallback is ever taken: a part whose real service is not
 * configured refuses to start, naming the variable (issue #23: a production gateway without AUTH_*
 * wrote a development key and trusted tokens signed by it). Each missing variable is named, with
 * what it would have fallen back to.
 */
export function requireRealServices(config: PlatformConfig, needs: ProductionNeeds = {}): void {
  if (!config.production) return;
  const missing: Array<[variable: string, fallback: string]> = [];
  if (!config.databaseUrl) missing.push(['DATABASE_URL', 'an embedded PGlite database under DATA_DIR']);
  if (!config.auth.jwksUrl && !config.auth.publicKey) {
    missing.push(['AUTH_JWKS_URL or AUTH_PUBLIC_KEY', 'a development signing key generated under DATA_DIR']);
  }
  if (needs.bus && !config.natsUrl) missing.push(['NATS_URL', 'an in-process event bus no other process can reach']);
  if (needs.redis && !config.redisUrl) missing.push(['REDIS_URL', 'quotas counted in this process only']);
  if (missing.length === 0) return;
  const list = missing.map(([variable, fallback]) => `${variable} (else: ${fallback})`).join('; ');
  throw new ConfigError(
    missing[0][0],
    `must be set when NODE_ENV=production, which never uses a development fallback. Missing: ${list}`,
  );
}
