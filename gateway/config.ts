import type { PlatformConfig } from '../platform/config/config.js';
import { ConfigError, envBool, envInt, envList, envOneOf, envString, envUrl, type Env } from '../platform/config/env.js';
import { SANDBOX_ORIGINS, type CorsOrigins } from '../platform/config/cors-origins.js';
import type { ResultShaping } from './result-shaping/result-shaping.js';

/** The gateway's configuration slice: where it finds the subgraphs, and its front door's settings. */
export interface GatewaySlice {
  /**
   * The replicas of each subgraph the gateway calls (one URL each; a balancer's URL is one
   * replica); default to the local ports when run in one process.
   */
  catalogUrls: readonly string[];
  aiUrls: readonly string[];
  gateway: GatewayConfig;
}

export interface GatewayConfig {
  /** The offline schema explorer at /graphiql. */
  graphiql: boolean;
  /**
   * Whether Apollo Gateway's usage reporting to Apollo is off. Apollo reads only its own variable
   * (APOLLO_TELEMETRY_DISABLED); the image and `npm start` set it, and a gateway started without it
   * says so at start (nothing here writes the environment).
   */
  apolloTelemetryDisabled: boolean;
  /** Browser origins allowed to call the gateway (CORS); Apollo Sandbox's by default. */
  corsOrigins: CorsOrigins;
  /** CORS_ALLOW_ANY_ORIGIN: `CORS_ORIGINS=*` is refused in production without it (warned about with it). */
  corsAllowAnyOrigin: boolean;
  /** Automatic persisted queries (platform/graphql/persisted-queries.ts): every store bounded in bytes. */
  apq: ApqSettings;
  /** Connections the gateway keeps to each subgraph at most (keep-alive); requests beyond wait for one. */
  subgraphMaxConnections: number;
  /** How long one attempt of a query fetch waits for a subgraph's whole answer. */
  subgraphTimeoutMs: number;
  /** The same for a mutation: longer, since an assist waits for its model provider. */
  subgraphMutationTimeoutMs: number;
  /** First back-off of a replica that failed; doubled per consecutive failure, up to 30 times it. */
  subgraphReplicaBackoffMs: number;
  /** How often each replica of a subgraph list is asked /readyz (0: only after a failure). */
  subgraphReadinessIntervalMs: number;
  /** The response cache of catalog reads (docs/operations.md, "Response cache"); off by default. */
  responseCache: ResponseCacheConfig;
  /**
   * Who copies the subgraphs' merged answers into the client's answer (gateway/result-shaping/result-shaping.ts):
   * ours by default, Apollo Gateway's own with `apollo` (the same answers; ours costs a third of the CPU).
   */
  resultShaping: ResultShaping;
}

export interface ResponseCacheConfig {
  enabled: boolean;
  /** L1: bytes of answers this process keeps at most. */
  memoryBytes: number;
  /** The safety net: no entry lives longer, whatever invalidation does. */
  ttlSeconds: number;
  /** Larger answers are not cached. */
  maxEntryBytes: number;
  /** L2: keys of the cache Redis (REDIS_CACHE_URL) it uses at most (slots × maxEntryBytes bytes). */
  redisSlots: number;
  /** L1: bytes of one tenant's answers this process keeps at most (its oldest go first). */
  tenantMemoryBytes: number;
  /** L2: keys one tenant's answers use at most, a window of the slots chosen by its id. */
  tenantRedisSlots: number;
  /** How long cached answers are still served once the catalog event feed is lost. */
  feedGraceMs: number;
  /** Sweep rounds of the cache Redis (deleting invalidated entries' bytes) start at least this far apart. */
  sweepIntervalMs: number;
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

function responseCacheConfig(env: Env): ResponseCacheConfig {
  const memoryBytes = envInt(env, 'RESPONSE_CACHE_MEMORY_BYTES', 32 * 1024 * 1024, 64 * 1024, 4 * 1024 * 1024 * 1024);
  const redisSlots = envInt(env, 'RESPONSE_CACHE_REDIS_SLOTS', 16_384, 16, 4_194_304);
  return {
    enabled: envBool(env, 'RESPONSE_CACHE_ENABLED', false),
    memoryBytes,
    ttlSeconds: envInt(env, 'RESPONSE_CACHE_TTL_SECONDS', 60, 1, 24 * 3600),
    maxEntryBytes: envInt(env, 'RESPONSE_CACHE_MAX_ENTRY_BYTES', 256 * 1024, 1024, 16 * 1024 * 1024),
    redisSlots,
    // A quarter of L1 and a sixteenth of L2 by default: no tenant can push every other one out.
    tenantMemoryBytes: envInt(env, 'RESPONSE_CACHE_TENANT_MEMORY_BYTES', Math.floor(memoryBytes / 4), 64 * 1024, memoryBytes),
    tenantRedisSlots: envInt(env, 'RESPONSE_CACHE_TENANT_REDIS_SLOTS', Math.floor(redisSlots / 16), 1, redisSlots),
    feedGraceMs: envInt(env, 'RESPONSE_CACHE_FEED_GRACE_MS', 5_000, 0, 60_000),
    // At most 5 s: an erased person's bytes must be gone within 10 s of the GDPR event.
    sweepIntervalMs: envInt(env, 'RESPONSE_CACHE_SWEEP_INTERVAL_MS', 1_000, 0, 5_000),
  };
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

/** What the production check needs of this slice (platform/config/production.logic.ts). */
export function gatewayProductionFacts(slice: GatewaySlice): { corsOrigins: CorsOrigins; corsAllowAnyOrigin: boolean } {
  return { corsOrigins: slice.gateway.corsOrigins, corsAllowAnyOrigin: slice.gateway.corsAllowAnyOrigin };
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

/**
 * A comma list of `http(s)://` URLs, each one replica of a subgraph. Every item is checked, and a
 * repeated one refused: listing a replica twice would silently double its share of the traffic.
 */
function replicaUrls(env: Env, name: string, fallback: string): string[] {
  const urls = envList(env, name, [fallback]);
  if (urls.length === 0) return [fallback];
  for (const [index, url] of urls.entries()) {
    envUrl({ [name]: url }, name, ['http:', 'https:']);
    if (urls.indexOf(url) !== index) throw new ConfigError(name, `lists ${url} twice`);
  }
  return urls;
}

export function loadGatewaySlice(env: Env, platform: Pick<PlatformConfig, 'host' | 'catalogPort' | 'aiPort'>): GatewaySlice {
  // A wildcard bind address is not one the gateway can call: the subgraphs of this host are on loopback.
  const localHost = platform.host === '0.0.0.0' || platform.host === '::' ? '127.0.0.1' : platform.host;
  return {
    catalogUrls: replicaUrls(env, 'CATALOG_URL', `http://${localHost}:${platform.catalogPort}/graphql`),
    aiUrls: replicaUrls(env, 'AI_URL', `http://${localHost}:${platform.aiPort}/graphql`),
    gateway: {
      graphiql: envBool(env, 'GRAPHIQL_ENABLED', true),
      apolloTelemetryDisabled: ['true', '1'].includes(env.APOLLO_TELEMETRY_DISABLED ?? ''),
      corsOrigins: corsOrigins(env, 'CORS_ORIGINS'),
      corsAllowAnyOrigin: envBool(env, 'CORS_ALLOW_ANY_ORIGIN', false),
      apq: {
        ttlSeconds: envInt(env, 'APQ_TTL_SECONDS', 24 * 3600, 60, 30 * 24 * 3600),
        maxDocumentBytes: envInt(env, 'APQ_MAX_DOCUMENT_BYTES', 16 * 1024, 256, 1024 * 1024),
        memoryBytes: envInt(env, 'APQ_MEMORY_BYTES', 16 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024),
        redisSlots: envInt(env, 'APQ_REDIS_SLOTS', 4096, 16, 1_048_576),
      },
      subgraphMaxConnections: envInt(env, 'SUBGRAPH_MAX_CONNECTIONS', 64, 1, 4096),
      subgraphTimeoutMs: envInt(env, 'SUBGRAPH_TIMEOUT_MS', 15_000, 100, 600_000),
      // Above AI_ASSIST_DEADLINE_MS (60 s by default), so the AI subgraph answers an assist that
      // ran out of time itself, with its provenance, before the gateway gives up on it.
      subgraphMutationTimeoutMs: envInt(env, 'SUBGRAPH_MUTATION_TIMEOUT_MS', 90_000, 100, 600_000),
      subgraphReplicaBackoffMs: envInt(env, 'SUBGRAPH_REPLICA_BACKOFF_MS', 1_000, 50, 60_000),
      // Well under SHUTDOWN_DRAIN_MS (5 s in production): a draining replica leaves rotation first.
      subgraphReadinessIntervalMs: envInt(env, 'SUBGRAPH_READINESS_INTERVAL_MS', 1_000, 0, 60_000),
      responseCache: responseCacheConfig(env),
      resultShaping: envOneOf<ResultShaping>(env, 'GATEWAY_RESULT_SHAPING', ['lean', 'apollo'], 'lean'),
    },
  };
}
