import os from 'node:os';
import path from 'node:path';

/**
 * All configuration, parsed once from the environment at start and validated. A bad value fails
 * start-up with a message that names the variable; nothing else in the code reads process.env.
 * Unset optional services select the embedded defaults (design notes §2).
 */
export interface Config {
  host: string;
  port: number;
  catalogPort: number;
  aiPort: number;
  /** Subgraph URLs the gateway calls; default to the local ports when run in one process. */
  catalogUrl: string;
  aiUrl: string;
  dataDir: string;
  databaseUrl?: string;
  dbPoolSize: number;
  natsUrl?: string;
  redisUrl?: string;
  auth: {
    jwksUrl?: string;
    publicKey?: string;
    issuer?: string;
    audience?: string;
    /** Tokens whose exp - iat (or exp - now) exceed this are refused (spec: 15 minutes). */
    maxTokenLifetimeSeconds: number;
    clockToleranceSeconds: number;
  };
  vault: { addr?: string; token?: string; mount: string };
  providers: {
    openaiBaseUrl?: string;
    openaiModel: string;
    /** Hosts routing rules may send traffic to; an admin field can never point elsewhere. */
    allowedHosts: string[];
  };
  logLevel: string;
  service: { instance: string; commit: string };
  events: {
    catalogStream: string;
    dlqStream: string;
    contentStream: string;
    authoringStream: string;
    gdprStream: string;
    auditStream: string;
    dualPublishDays: number;
    archiveMonths: number;
    dlqAlertMinutes: number;
    maxDeliver: number;
    ackWaitSeconds: number;
  };
  /** Retention classes under which a GDPR erasure may zero author ids. */
  gdprZeroingRetentionClasses: string[];
  idempotencyTtlSeconds: number;
  /** How long an unfinished request holds its key; a crashed request frees it after this. */
  idempotencyLeaseSeconds: number;
  maxBodyBytes: number;
  /** The AI gateway's assist pipeline (subgraphs/ai). */
  ai: AiConfig;
  /** Traces, shutdown, the schema explorer and the gateway's query limits (README "Operations"). */
  ops: OpsConfig;
}

export interface OpsConfig {
  /** Standard OTel variables; no endpoint means no exporter (spans are not recorded). */
  otel: { tracesUrl?: string; headers: Record<string, string>; serviceName?: string; sampleRatio: number };
  /** SIGTERM/SIGINT: in-flight work gets this long before the process gives up and exits 1. */
  shutdownTimeoutMs: number;
  graphiql: boolean;
  /** GET /metrics of a process without an HTTP server of its own (the event worker). */
  metricsPort: number;
  limits: { maxDepth: number; maxCost: number; defaultListSize: number };
  /** Automatic persisted queries: entry lifetime (Apollo's bounded in-memory LRU, or Redis when REDIS_URL is set). */
  apqTtlSeconds: number;
}

export interface AiConfig {
  /** Per-attempt timeout of each provider. */
  timeoutMs: { mock: number; openai: number };
  /** Retries of one provider after its first attempt, for retryable failures only. */
  providerRetries: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** A Retry-After longer than this moves on to the next fallback instead of waiting. */
  retryAfterMaxMs: number;
  /** Budget of one assist request over all attempts and fallbacks. */
  deadlineMs: number;
  /** Consecutive failures that open a provider's circuit, and how long it stays open. */
  breakerFailures: number;
  breakerCooldownMs: number;
  maxOutputTokens: number;
  maxPromptChars: number;
  /** How long an output held for human review is kept before it is purged. */
  reviewTextRetentionHours: number;
  /** Residency codes each provider may serve ('*' = any); a provider with none serves only requests without residency. */
  residencies: { mock: string[]; openai: string[] };
  /** Residencies a tenant may use only with a signed data-protection impact assessment on file. */
  assessmentResidencies: string[];
  /** Lets a request drive the mock provider's faults (tests, demos); off in production. */
  mockFaultInjection: boolean;
  /** While Redis is down, each replica admits at most this percentage of a tenant's requests per minute. */
  quotaFallbackRpmPercent: number;
  /** Vault KV path of the openai-compatible provider's secret (field api_key). */
  openaiKeyPath: string;
  vaultCacheSeconds: number;
  /** How long routing rules, templates and tenant settings are cached per process (0 = no cache). */
  configCacheMs: number;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`Invalid configuration: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function int(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `must be an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, 'must be a URL');
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got ${parsed.protocol}`);
  }
  return raw;
}

function list(env: Env, name: string, fallback: string[]): string[] {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

function residencyList(env: Env, name: string, fallback: string[]): string[] {
  const values = list(env, name, fallback);
  for (const value of values) {
    if (value !== '*' && !/^[A-Z][A-Z0-9_]{1,15}$/.test(value)) throw new ConfigError(name, `has an invalid residency code "${value}"`);
  }
  return values;
}

/** OTEL_EXPORTER_OTLP_HEADERS: `key=value,key2=value2`, values URL-encoded (OTel specification). */
function otlpHeaders(env: Env, name: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of list(env, name, [])) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new ConfigError(name, 'must be a comma-separated list of key=value pairs');
    try {
      headers[pair.slice(0, at).trim().toLowerCase()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new ConfigError(name, 'has a value that is not URL-encoded');
    }
  }
  return headers;
}

function ratio(env: Env, name: string, fallback: number): number {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d*\.?\d+$/.test(raw) || value > 1) throw new ConfigError(name, `must be a number between 0 and 1, got "${raw}"`);
  return value;
}

function otelTracesUrl(env: Env): string | undefined {
  if (bool(env, 'OTEL_SDK_DISABLED', false)) return undefined;
  const traces = url(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', ['http:', 'https:']);
  if (traces) return traces;
  const base = url(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']);
  // The base endpoint gets the signal path appended; the per-signal one is used as given.
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined;
}

function streamName(env: Env, name: string, fallback: string): string {
  const value = str(env, name) ?? fallback;
  // JetStream stream names may not contain '.', spaces, '*', '>' or path separators.
  if (!/^[A-Za-z0-9_-]+$/.test(value)) throw new ConfigError(name, `is not a valid JetStream stream name: "${value}"`);
  return value;
}

export function loadConfig(env: Env = process.env): Config {
  const host = str(env, 'HOST') ?? '127.0.0.1';
  const port = int(env, 'PORT', 4000, 0, 65535);
  const catalogPort = int(env, 'CATALOG_PORT', 4001, 0, 65535);
  const aiPort = int(env, 'AI_PORT', 4002, 0, 65535);
  const localHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  const publicKey = str(env, 'AUTH_PUBLIC_KEY');
  const jwksUrl = url(env, 'AUTH_JWKS_URL', ['https:', 'http:', 'file:']);
  const openaiBaseUrl = url(env, 'OPENAI_BASE_URL', ['https:', 'http:']);
  const allowed = list(env, 'PROVIDER_ALLOWED_HOSTS', []);
  if (openaiBaseUrl) allowed.push(new URL(openaiBaseUrl).host);

  return {
    host,
    port,
    catalogPort,
    aiPort,
    catalogUrl: url(env, 'CATALOG_URL', ['http:', 'https:']) ?? `http://${localHost}:${catalogPort}/graphql`,
    aiUrl: url(env, 'AI_URL', ['http:', 'https:']) ?? `http://${localHost}:${aiPort}/graphql`,
    dataDir: path.resolve(str(env, 'DATA_DIR') ?? '.data'),
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    dbPoolSize: int(env, 'DB_POOL_SIZE', 10, 1, 500),
    natsUrl: url(env, 'NATS_URL', ['nats:', 'tls:', 'ws:', 'wss:']),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    auth: {
      jwksUrl,
      publicKey,
      issuer: str(env, 'AUTH_ISSUER'),
      audience: str(env, 'AUTH_AUDIENCE'),
      maxTokenLifetimeSeconds: int(env, 'AUTH_MAX_TOKEN_LIFETIME_SECONDS', 900, 1, 86400),
      clockToleranceSeconds: int(env, 'AUTH_CLOCK_TOLERANCE_SECONDS', 30, 0, 300),
    },
    vault: {
      addr: url(env, 'VAULT_ADDR', ['http:', 'https:']),
      token: str(env, 'VAULT_TOKEN'),
      mount: str(env, 'VAULT_KV_MOUNT') ?? 'secret',
    },
    providers: {
      openaiBaseUrl,
      openaiModel: str(env, 'OPENAI_MODEL') ?? 'gpt-4o-mini',
      allowedHosts: [...new Set(allowed)],
    },
    logLevel: str(env, 'LOG_LEVEL') ?? 'info',
    service: {
      instance: str(env, 'SERVICE_INSTANCE') ?? `${os.hostname()}:${process.pid}`,
      commit: str(env, 'SERVICE_COMMIT') ?? 'dev',
    },
    events: {
      catalogStream: streamName(env, 'CATALOG_STREAM', 'CATALOG'),
      dlqStream: streamName(env, 'CATALOG_DLQ_STREAM', 'CATALOG_DLQ'),
      contentStream: streamName(env, 'CONTENT_STREAM', 'CONTENT'),
      authoringStream: streamName(env, 'AUTHORING_STREAM', 'AUTHORING'),
      gdprStream: streamName(env, 'GDPR_STREAM', 'GDPR'),
      auditStream: streamName(env, 'AUDIT_STREAM', 'AUDIT'),
      dualPublishDays: int(env, 'DUAL_PUBLISH_DAYS', 30, 0, 365),
      archiveMonths: int(env, 'OUTBOX_ARCHIVE_MONTHS', 13, 1, 120),
      dlqAlertMinutes: int(env, 'DLQ_ALERT_MINUTES', 10, 1, 1440),
      maxDeliver: int(env, 'CONSUMER_MAX_DELIVER', 6, 1, 100),
      ackWaitSeconds: int(env, 'CONSUMER_ACK_WAIT_SECONDS', 30, 1, 3600),
    },
    gdprZeroingRetentionClasses: list(env, 'GDPR_ZEROING_RETENTION_CLASSES', ['operational']),
    idempotencyTtlSeconds: int(env, 'IDEMPOTENCY_TTL_SECONDS', 24 * 3600, 60, 7 * 24 * 3600),
    idempotencyLeaseSeconds: int(env, 'IDEMPOTENCY_LEASE_SECONDS', 120, 5, 3600),
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    ai: {
      timeoutMs: { mock: int(env, 'MOCK_TIMEOUT_MS', 5_000, 1, 600_000), openai: int(env, 'OPENAI_TIMEOUT_MS', 30_000, 1, 600_000) },
      providerRetries: int(env, 'AI_PROVIDER_RETRIES', 1, 0, 5),
      retryBaseMs: int(env, 'AI_RETRY_BASE_MS', 200, 0, 60_000),
      retryMaxMs: int(env, 'AI_RETRY_MAX_MS', 2_000, 0, 60_000),
      retryAfterMaxMs: int(env, 'AI_RETRY_AFTER_MAX_MS', 5_000, 0, 600_000),
      deadlineMs: int(env, 'AI_ASSIST_DEADLINE_MS', 60_000, 1, 600_000),
      breakerFailures: int(env, 'AI_BREAKER_FAILURES', 5, 1, 1000),
      breakerCooldownMs: int(env, 'AI_BREAKER_COOLDOWN_MS', 30_000, 1, 3_600_000),
      maxOutputTokens: int(env, 'AI_MAX_OUTPUT_TOKENS', 1024, 1, 1_000_000),
      maxPromptChars: int(env, 'AI_MAX_PROMPT_CHARS', 100_000, 100, 10_000_000),
      reviewTextRetentionHours: int(env, 'AI_REVIEW_TEXT_RETENTION_HOURS', 72, 1, 24 * 365),
      residencies: { mock: residencyList(env, 'MOCK_RESIDENCIES', ['*']), openai: residencyList(env, 'OPENAI_RESIDENCIES', []) },
      assessmentResidencies: residencyList(env, 'AI_ASSESSMENT_RESIDENCIES', ['AF']),
      mockFaultInjection: bool(env, 'MOCK_FAULT_INJECTION', false),
      quotaFallbackRpmPercent: int(env, 'QUOTA_FALLBACK_RPM_PERCENT', 25, 1, 100),
      openaiKeyPath: str(env, 'OPENAI_KEY_PATH') ?? 'ai/providers/openai-compatible',
      vaultCacheSeconds: int(env, 'VAULT_CACHE_SECONDS', 60, 0, 3600),
      configCacheMs: int(env, 'AI_CONFIG_CACHE_MS', 2_000, 0, 600_000),
    },
    ops: {
      otel: {
        tracesUrl: otelTracesUrl(env),
        headers: otlpHeaders(env, 'OTEL_EXPORTER_OTLP_HEADERS'),
        serviceName: str(env, 'OTEL_SERVICE_NAME'),
        sampleRatio: ratio(env, 'OTEL_TRACES_SAMPLER_ARG', 1),
      },
      shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 25_000, 1_000, 600_000),
      graphiql: bool(env, 'GRAPHIQL_ENABLED', true),
      metricsPort: int(env, 'METRICS_PORT', 9464, 0, 65535),
      limits: {
        maxDepth: int(env, 'QUERY_MAX_DEPTH', 12, 1, 100),
        maxCost: int(env, 'QUERY_MAX_COST', 5_000, 1, 10_000_000),
        defaultListSize: int(env, 'QUERY_DEFAULT_LIST_SIZE', 10, 1, 10_000),
      },
      apqTtlSeconds: int(env, 'APQ_TTL_SECONDS', 24 * 3600, 60, 30 * 24 * 3600),
    },
  };
}
