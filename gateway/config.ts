import type { PlatformConfig } from '../platform/config/config.js';
import { ConfigError, envBool, envInt, envList, envString, envUrl, type Env } from '../platform/config/env.js';
import { SANDBOX_ORIGINS, type CorsOrigins } from '../platform/http/cors-origins.js';

/** The gateway's configuration slice: where it finds the subgraphs, and its front door's settings. */
export interface GatewaySlice {
  /** Subgraph URLs the gateway calls; default to the local ports when run in one process. */
  catalogUrl: string;
  aiUrl: string;
  gateway: GatewayConfig;
}

export interface GatewayConfig {
  /** The offline schema explorer at /graphiql. */
  graphiql: boolean;
  /** Browser origins allowed to call the gateway (CORS); Apollo Sandbox's by default. */
  corsOrigins: CorsOrigins;
  /** Automatic persisted queries (platform/persisted-queries.ts): every store bounded in bytes. */
  apq: ApqSettings;
  /** Connections the gateway keeps to each subgraph at most (keep-alive); requests beyond wait for one. */
  subgraphMaxConnections: number;
}

export interface ApqSettings {
  ttlSeconds: number;
  /** Larger documents run but are never registered: a registration must not cost much memory. */
  maxDocumentBytes: number;
  /** The in-process store's budget (without REDIS_CACHE_URL). */
  memoryBytes: number;
  /** Keys the Redis store of REDIS_CACHE_URL uses at most: it holds at most slots × maxDocumentBytes. */
  redisSlots: number;
}

/** `*`, or a comma list of exact origins (`https://host[:port]`, no path); unset: Apollo Sandbox's. */
function corsOrigins(env: Env, name: string): CorsOrigins {
  const raw = envString(env, name);
  if (raw === undefined) return [...SANDBOX_ORIGINS];
  if (raw.trim() === '*') return '*';
  const origins = envList(env, name, []);
  for (const origin of origins) {
    if (!isExactOrigin(origin)) {
      throw new ConfigError(
        name,
        `must be * or a comma-separated list of origins such as https://app.example.org, got "${origin}"`,
      );
    }
  }
  return origins;
}

function isExactOrigin(origin: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  return ['http:', 'https:'].includes(parsed.protocol) && parsed.origin === origin;
}

export function loadGatewaySlice(env: Env, platform: Pick<PlatformConfig, 'host' | 'catalogPort' | 'aiPort'>): GatewaySlice {
  // A wildcard bind address is not one the gateway can call: the subgraphs of this host are on loopback.
  const localHost = platform.host === '0.0.0.0' || platform.host === '::' ? '127.0.0.1' : platform.host;
  return {
    catalogUrl: envUrl(env, 'CATALOG_URL', ['http:', 'https:']) ?? `http://${localHost}:${platform.catalogPort}/graphql`,
    aiUrl: envUrl(env, 'AI_URL', ['http:', 'https:']) ?? `http://${localHost}:${platform.aiPort}/graphql`,
    gateway: {
      graphiql: envBool(env, 'GRAPHIQL_ENABLED', true),
      corsOrigins: corsOrigins(env, 'CORS_ORIGINS'),
      apq: {
        ttlSeconds: envInt(env, 'APQ_TTL_SECONDS', 24 * 3600, 60, 30 * 24 * 3600),
        maxDocumentBytes: envInt(env, 'APQ_MAX_DOCUMENT_BYTES', 16 * 1024, 256, 1024 * 1024),
        memoryBytes: envInt(env, 'APQ_MEMORY_BYTES', 16 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024),
        redisSlots: envInt(env, 'APQ_REDIS_SLOTS', 4096, 16, 1_048_576),
      },
      subgraphMaxConnections: envInt(env, 'SUBGRAPH_MAX_CONNECTIONS', 64, 1, 4096),
    },
  };
}
