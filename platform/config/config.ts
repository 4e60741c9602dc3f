import os from 'node:os';
import path from 'node:path';
import type { QueryLimits } from '../graphql/query-limits.js';
import { envBool, envInt, envKeyValuePairs, envOneOf, envRatio, envString, envUrl, type Env } from './env.js';

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
  natsUrl?: string;
  redisUrl?: string;
  auth: AuthConfig;
  logLevel: string;
  service: { instance: string; commit: string };
  idempotencyTtlSeconds: number;
  /** How long an unfinished request holds its key; a crashed request frees it after this. */
  idempotencyLeaseSeconds: number;
  maxBodyBytes: number;
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
  /** GET /metrics of a process without an HTTP server of its own (the event worker). */
  metricsPort: number;
  /** What one GraphQL document may ask for, at the gateway and at each subgraph. */
  limits: QueryLimits;
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
    // (gateway/entity-representations.logic.ts), at most a page of 100 courses (MAX_PAGE_SIZE).
    maxRepresentations: envInt(env, 'QUERY_MAX_REPRESENTATIONS', 500, 1, 100_000),
  };
}

function loadOps(env: Env): OpsConfig {
  return {
    otel: {
      tracesUrl: otelTracesUrl(env),
      protocol: envOneOf(env, otlpProtocolVariable(env), OTLP_PROTOCOLS, 'http/protobuf'),
      headers: envKeyValuePairs(env, 'OTEL_EXPORTER_OTLP_HEADERS'),
      serviceName: envString(env, 'OTEL_SERVICE_NAME'),
      sampleRatio: envRatio(env, 'OTEL_TRACES_SAMPLER_ARG', 1),
    },
    shutdownTimeoutMs: envInt(env, 'SHUTDOWN_TIMEOUT_MS', 25_000, 1_000, 600_000),
    metricsPort: envInt(env, 'METRICS_PORT', 9464, 0, 65535),
    limits: loadQueryLimits(env),
  };
}

export function loadPlatformConfig(env: Env = process.env): PlatformConfig {
  return {
    host: envString(env, 'HOST') ?? '127.0.0.1',
    port: envInt(env, 'PORT', 4000, 0, 65535),
    catalogPort: envInt(env, 'CATALOG_PORT', 4001, 0, 65535),
    aiPort: envInt(env, 'AI_PORT', 4002, 0, 65535),
    dataDir: path.resolve(envString(env, 'DATA_DIR') ?? '.data'),
    databaseUrl: envUrl(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    dbPoolSize: envInt(env, 'DB_POOL_SIZE', 10, 1, 500),
    dbPreparedStatements: envBool(env, 'DB_PREPARED_STATEMENTS', true),
    natsUrl: envUrl(env, 'NATS_URL', ['nats:', 'tls:', 'ws:', 'wss:']),
    redisUrl: envUrl(env, 'REDIS_URL', ['redis:', 'rediss:']),
    auth: loadAuth(env),
    logLevel: envString(env, 'LOG_LEVEL') ?? 'info',
    service: {
      instance: envString(env, 'SERVICE_INSTANCE') ?? `${os.hostname()}:${process.pid}`,
      commit: envString(env, 'SERVICE_COMMIT') ?? 'dev',
    },
    idempotencyTtlSeconds: envInt(env, 'IDEMPOTENCY_TTL_SECONDS', 24 * 3600, 60, 7 * 24 * 3600),
    idempotencyLeaseSeconds: envInt(env, 'IDEMPOTENCY_LEASE_SECONDS', 120, 5, 3600),
    maxBodyBytes: envInt(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    ops: loadOps(env),
  };
}
