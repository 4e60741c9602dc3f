import os from 'node:os';
import path from 'node:path';
import { envBool, envInt, envKeyValuePairs, envOneOf, envRatio, envString, envUrl, type Env } from './env.js';

import { ConfigError } from './env.js';

export { ConfigError, type Env } from './env.js';

/**
 * The configuration every process shares, parsed once from the environment at start and
 * validated: where it listens, the database / NATS / Redis it reaches, token verification,
 * logging, telemetry and the limits at every door. Each part owns its own slice beside this one
 * (subgraphs/ai/config.ts, subgraphs/catalog/config.ts, events/config.ts, gateway/config.ts) and
 * processes/config.ts composes what each process needs. Nothing else in the code reads process.env.
 * Unset optional services select the embedded defaults (design notes §2).
 */
export interface PlatformConfig {
  /**
   * NODE_ENV=production: no development fallback (embedded database, in-process bus, in-memory
   * quotas, a development signing key) is ever used; a part that lacks one of its real services
   * refuses to start, naming the variable (processes/config.ts).
   */
  production: boolean;
  /** Apply pending migrations at start (development); off, a part whose schema is behind refuses to serve. */
  migrateOnStart: boolean;
  host: string;
  /** The gateway's (and REST-compat's) port, and each subgraph's own. */
  port: number;
  catalogPort: number;
  aiPort: number;
  dataDir: string;
  databaseUrl?: string;
  dbPoolSize: number;
  /** Hot statements as named prepared statements (off behind a transaction-mode pooler without prepared-statement support). */
  dbPreparedStatements: boolean;
  /** NATS_URL: one server, or a comma-separated list of them (split with natsServers()). */
  natsUrl?: string;
  redisUrl?: string;
  auth: AuthConfig;
  logLevel: string;
  service: { instance: string; commit: string };
  idempotencyTtlSeconds: number;
  /** An unfinished request's lease on its key, renewed while it runs: a crashed request frees it after this. */
  idempotencyLeaseSeconds: number;
  maxBodyBytes: number;
  /**
   * Redis for caches (persisted queries): evictable, so never the Redis of `redisUrl`, which holds
   * quotas and Idempotency-Key records and must not evict. Without it caches stay in process memory.
   */
  redisCacheUrl?: string;
  /** Start even though the Redis of REDIS_URL evicts keys when full (warned about loudly). */
  redisAllowEviction: boolean;
  /** Traces, shutdown, the metrics port and the query limits (README "Operations"). */
  ops: OpsConfig;
}

export interface AuthConfig {
  jwksUrl?: string;
  publicKey?: string;
  issuer?: string;
  audience?: string;
  /** Tokens whose exp - iat (or exp - now) exceed this are refused (spec: 15 minutes). */
  maxTokenLifetimeSeconds: number;
  clockToleranceSeconds: number;
}

export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

/**
 * What one GraphQL document may ask for, at every GraphQL door (the gateway and each subgraph).
 * Every bound is checked in time linear in the document, before anything is planned or resolved.
 */
export interface QueryLimits {
  /** Lexical tokens of the document: bounds the work of parsing and validating it. */
  maxTokens: number;
  /** Levels of nested selections, fragments inlined, introspection included. */
  maxDepth: number;
  /** Aliased fields: each alias can repeat the most expensive field once more. */
  maxAliases: number;
  maxDirectives: number;
  /** Fields the operation could resolve (platform/graphql/query-cost.ts). */
  maxCost: number;
  /** Items assumed for a list field that no `first`/`last`/`limit` argument bounds. */
  defaultListSize: number;
  /**
   * Representations an operation's `_entities` fields may carry in all: a subgraph resolves one
   * entity per representation, work the field count alone would not bound.
   */
  maxRepresentations: number;
  /**
   * Characters in one string literal of the document: a 900 KB literal is 7 tokens, inside every
   * other limit (issue #24); long text belongs in variables, which the body limit bounds.
   */
  maxStringLiteral: number;
}

export interface ConnectionLimits {
  /** A request's headers must arrive within this (slow-header clients). */
  headersTimeoutMs: number;
  /** A whole request, body included, must arrive within this (slow-body clients). */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Open connections per server at most; more are dropped at accept (file descriptors are finite). */
  maxConnections: number;
}

/**
 * How a subgraph runs an operation (SUBGRAPH_EXECUTION): `compiled` turns each query document into
 * a JavaScript function once (graphql-jit) and runs that; `graphql-js` interprets every document
 * every time, field by field: a page of 20 courses is about 600 resolved fields, and graphql-js's
 * own frames were a fifth of the catalog's CPU serving REST pages (bench/README.md, 2026-11-29,
 * second). The switch is an operator's way back should the compiled path
 * ever answer differently (platform/graphql/compiled-execution.ts; the two are held equal by
 * test/integration/graphql/compiled-execution.test.ts).
 */
export type SubgraphExecution = 'compiled' | 'graphql-js';
export const SUBGRAPH_EXECUTIONS: readonly SubgraphExecution[] = ['compiled', 'graphql-js'];

export interface OpsConfig {
  /** Standard OTel variables; no endpoint means no exporter (spans are not recorded). */
  otel: {
    tracesUrl?: string;
    /** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL (the specification's order). */
    protocol: OtlpProtocol;
    headers: Record<string, string>;
    serviceName?: string;
    sampleRatio: number;
  };
  /** SIGTERM/SIGINT: in-flight work gets this long before the process gives up and exits 1. */
  shutdownTimeoutMs: number;
  /** After SIGTERM, how long the process reports not ready while still serving, before it stops accepting. */
  shutdownDrainMs: number;
  /**
   * The ops port: probes and GET /metrics on a port of their own, kept off any ingress. Set, the
   * gateway and subgraph processes serve /metrics only there; the event worker always has one
   * (default 9464), having no other HTTP server.
   */
  metricsPort?: number;
  /** What one client may hold of every HTTP server (platform/http/serve.ts). */
  connections: ConnectionLimits;
  /** What one GraphQL document may ask for, at the gateway and at each subgraph. */
  limits: QueryLimits;
  /** How each subgraph runs a query (platform/graphql/compiled-execution.ts): compiled unless set to graphql-js. */
  subgraphExecution: SubgraphExecution;
}

function loadAuth(env: Env): AuthConfig {
  return {
    jwksUrl: envUrl(env, 'AUTH_JWKS_URL', ['https:', 'http:', 'file:']),
    publicKey: envString(env, 'AUTH_PUBLIC_KEY'),
    issuer: envString(env, 'AUTH_ISSUER'),
    audience: envString(env, 'AUTH_AUDIENCE'),
    maxTokenLifetimeSeconds: envInt(env, 'AUTH_MAX_TOKEN_LIFETIME_SECONDS', 900, 1, 86400),
    clockToleranceSeconds: envInt(env, 'AUTH_CLOCK_TOLERANCE_SECONDS', 30, 0, 300),
  };
}

function otelTracesUrl(env: Env): string | undefined {
  if (envBool(env, 'OTEL_SDK_DISABLED', false)) return undefined;
  const traces = envUrl(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', ['http:', 'https:']);
  if (traces) return traces;
  const base = envUrl(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']);
  // The base endpoint gets the signal path appended; the per-signal one is used as given.
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined;
}

function otlpProtocolVariable(env: Env): string {
  return envString(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') !== undefined
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
}

function loadQueryLimits(env: Env): QueryLimits {
  return {
    maxTokens: envInt(env, 'QUERY_MAX_TOKENS', 4_000, 100, 1_000_000),
    // The standard introspection query (GraphiQL, Sandbox) nests 15 levels; 20 leaves room for
    // explorers that ask for deeper type references.
    maxDepth: envInt(env, 'QUERY_MAX_DEPTH', 20, 1, 100),
    maxAliases: envInt(env, 'QUERY_MAX_ALIASES', 30, 0, 10_000),
    maxDirectives: envInt(env, 'QUERY_MAX_DIRECTIVES', 20, 0, 10_000),
    // A full introspection of this graph costs about 6,600 (its answer's size) and REST's
    // largest page about 9,900 at the catalog subgraph, which checks it like any fetch.
    maxCost: envInt(env, 'QUERY_MAX_COST', 20_000, 1, 10_000_000),
    defaultListSize: envInt(env, 'QUERY_DEFAULT_LIST_SIZE', 10, 1, 10_000),
    // 5 times the most the gateway itself sends in one fetch: each distinct entity once
    // (gateway/subgraph-calls/entity-representations.logic.ts), at most a page of 100 courses (MAX_PAGE_SIZE).
    maxRepresentations: envInt(env, 'QUERY_MAX_REPRESENTATIONS', 500, 1, 100_000),
    maxStringLiteral: envInt(env, 'QUERY_MAX_STRING_LITERAL', 16_384, 64, 1_048_576),
  };
}

function loadOps(env: Env, production: boolean): OpsConfig {
  return {
    otel: {
      tracesUrl: otelTracesUrl(env),
      protocol: envOneOf(env, otlpProtocolVariable(env), OTLP_PROTOCOLS, 'http/protobuf'),
      headers: envKeyValuePairs(env, 'OTEL_EXPORTER_OTLP_HEADERS'),
      serviceName: envString(env, 'OTEL_SERVICE_NAME'),
      sampleRatio: envRatio(env, 'OTEL_TRACES_SAMPLER_ARG', 1),
    },
    shutdownTimeoutMs: envInt(env, 'SHUTDOWN_TIMEOUT_MS', 25_000, 1_000, 600_000),
    // Long enough for a balancer polling /readyz every 1-2 s to take the replica out; a developer's
    // Ctrl-C should not wait.
    shutdownDrainMs: envInt(env, 'SHUTDOWN_DRAIN_MS', production ? 5_000 : 0, 0, 300_000),
    metricsPort: envString(env, 'METRICS_PORT') === undefined ? undefined : envInt(env, 'METRICS_PORT', 9464, 0, 65535),
    connections: {
      headersTimeoutMs: envInt(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 1_000, 600_000),
      requestTimeoutMs: envInt(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 1_000, 3_600_000),
      keepAliveTimeoutMs: envInt(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 600_000),
      // Three servers share one process's descriptors in `npm start`; a container's limit is often 1,048,576, a shell's 1,024.
      maxConnections: envInt(env, 'HTTP_MAX_CONNECTIONS', 4_096, 16, 1_000_000),
    },
    limits: loadQueryLimits(env),
    subgraphExecution: envOneOf(env, 'SUBGRAPH_EXECUTION', SUBGRAPH_EXECUTIONS, 'compiled'),
  };
}

/** The servers of a NATS_URL value: the NATS clients' comma-separated convention. */
export function natsServers(natsUrl: string): string[] {
  return natsUrl.split(',').map((server) => server.trim());
}

/**
 * NATS_URL as a server list (any one reachable server is enough to start; the client learns the
 * rest of the cluster from it). Each entry is a nats:// or tls:// URL: the Node transport speaks
 * neither WebSocket scheme.
 */
function natsUrl(env: Env): string | undefined {
  const raw = envString(env, 'NATS_URL');
  if (raw === undefined) return undefined;
  const servers = natsServers(raw);
  servers.forEach((server, i) => {
    // The entry's position, never its text: a server URL may carry a password.
    const entry = servers.length > 1 ? ` (entry ${i + 1} of ${servers.length})` : '';
    let protocol: string;
    try {
      protocol = new URL(server).protocol;
    } catch {
      throw new ConfigError('NATS_URL', `must be a URL or a comma-separated list of URLs${entry}`);
    }
    if (protocol !== 'nats:' && protocol !== 'tls:')
      throw new ConfigError('NATS_URL', `must use nats: or tls:, got ${protocol}${entry}`);
  });
  return servers.join(',');
}

export function loadPlatformConfig(env: Env = process.env): PlatformConfig {
  const production = env.NODE_ENV === 'production';
  return {
    production,
    migrateOnStart: envBool(env, 'MIGRATE_ON_START', !production),
    host: envString(env, 'HOST') ?? '127.0.0.1',
    port: envInt(env, 'PORT', 4000, 0, 65535),
    catalogPort: envInt(env, 'CATALOG_PORT', 4001, 0, 65535),
    aiPort: envInt(env, 'AI_PORT', 4002, 0, 65535),
    dataDir: path.resolve(envString(env, 'DATA_DIR') ?? '.data'),
    databaseUrl: envUrl(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    dbPoolSize: envInt(env, 'DB_POOL_SIZE', 10, 1, 500),
    dbPreparedStatements: envBool(env, 'DB_PREPARED_STATEMENTS', true),
    natsUrl: natsUrl(env),
    redisUrl: envUrl(env, 'REDIS_URL', ['redis:', 'rediss:']),
    auth: loadAuth(env),
    logLevel: envString(env, 'LOG_LEVEL') ?? 'info',
    service: {
      instance: envString(env, 'SERVICE_INSTANCE') ?? `${os.hostname()}:${process.pid}`,
      commit: envString(env, 'SERVICE_COMMIT') ?? 'dev',
    },
    idempotencyTtlSeconds: envInt(env, 'IDEMPOTENCY_TTL_SECONDS', 24 * 3600, 60, 7 * 24 * 3600),
    idempotencyLeaseSeconds: envInt(env, 'IDEMPOTENCY_LEASE_SECONDS', 6, 2, 3600),
    maxBodyBytes: envInt(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    redisCacheUrl: envUrl(env, 'REDIS_CACHE_URL', ['redis:', 'rediss:']),
    redisAllowEviction: envBool(env, 'REDIS_ALLOW_EVICTION', false),
    ops: loadOps(env, production),
  };
}
