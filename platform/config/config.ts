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
    /** Azure OpenAI (phase 3, regional residency AF): one resource endpoint; routing rules name the deployment. */
    azureOpenai?: { endpoint: string; apiVersion: string };
    /** Amazon Bedrock Converse (phase 3, managed cloud): region, and an endpoint override (VPC endpoint, tests). */
    bedrock?: { region: string; endpoint?: string };
    /** On-premises inference (phase 3, offline clinics): an OpenAI-compatible server (vLLM, Ollama, ...). */
    onPremBaseUrl?: string;
    /** The model the on-prem routing rule names when an admin maps a tenant to it. */
    onPremModel: string;
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
    /** AI gateway domain events (ai.review.completed.v1). */
    aiStream: string;
    dualPublishDays: number;
    archiveMonths: number;
    /** How often each event worker purges outbox and inbox rows past the archive retention. */
    retentionIntervalMinutes: number;
    dlqAlertMinutes: number;
    maxDeliver: number;
    ackWaitSeconds: number;
    /** Messages (batches, where a consumer batches) each catalog consumer handles at once (1 = in stream order). */
    consumerConcurrency: number;
    /** Events a batching consumer (content.play_package.built) takes into one transaction. */
    consumerBatchSize: number;
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
  /** Connections the gateway keeps to each subgraph at most (keep-alive); requests beyond wait for one. */
  subgraphMaxConnections: number;
}

export interface AiConfig {
  /** Per-attempt timeout of each provider. */
  timeoutMs: { mock: number; openai: number; azure: number; bedrock: number; onPrem: number };
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
  residencies: { mock: string[]; openai: string[]; azure: string[]; bedrock: string[]; onPrem: string[] };
  /** Residencies a tenant may use only with a signed data-protection impact assessment on file. */
  assessmentResidencies: string[];
  /** Lets a request drive the mock provider's faults (tests, demos); off in production. */
  mockFaultInjection: boolean;
  /** While Redis is down, each replica admits at most this percentage of a tenant's requests per minute. */
  quotaFallbackRpmPercent: number;
  /** Vault KV path of the openai-compatible provider's secret (field api_key). */
  openaiKeyPath: string;
  /** Vault KV paths: Azure (field api_key), Bedrock (access_key_id, secret_access_key, session_token), on-prem (api_key; none = no key). */
  azureKeyPath: string;
  bedrockKeyPath: string;
  onPremKeyPath?: string;
  /** Phase 2: features whose prompts and outputs must pass the classifier, and which classifier judges content. */
  moderation: {
    features: string[];
    classifier: 'local' | 'openai';
    baseUrl?: string;
    model: string;
    keyPath: string;
    timeoutMs: number;
    /** Residencies whose text the remote classifier may see ('*' = any); other requests are judged locally. */
    residencies: string[];
  };
  /** How long a reviewer's claim on a HITL task lasts before another reviewer may take it. */
  reviewClaimMinutes: number;
  /** Rollback of phase 1: a consumer's direct provider key stays in the vault this long after its cutover. */
  keyRetentionDays: number;
  /** Phase 1 gate: gateway P95 / legacy P95 at most maxRatio, on at least minSamples per side. */
  shadowParity: { maxRatio: number; minSamples: number };
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
    if (value !== '*' && !/^[A-Z][A-Z0-9_]{1,15}$/.test(value))
      throw new ConfigError(name, `has an invalid residency code "${value}"`);
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

function decimal(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d*\.?\d+$/.test(raw) || value < min || value > max)
    throw new ConfigError(name, `must be a number between ${min} and ${max}, got "${raw}"`);
  return value;
}

function featureKeyList(env: Env, name: string, fallback: string[]): string[] {
  const values = list(env, name, fallback);
  for (const value of values) {
    if (value !== '*' && !/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/.test(value))
      throw new ConfigError(name, `has an invalid feature key "${value}"`);
  }
  return values;
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = str(env, name) ?? fallback;
  if (!(values as readonly string[]).includes(raw))
    throw new ConfigError(name, `must be one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
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
  const azureEndpoint = url(env, 'AZURE_OPENAI_ENDPOINT', ['https:', 'http:']);
  const bedrockRegion = str(env, 'BEDROCK_REGION');
  if (bedrockRegion !== undefined && !/^[a-z]{2}(-[a-z]+)+-\d$/.test(bedrockRegion))
    throw new ConfigError('BEDROCK_REGION', `is not an AWS region, got "${bedrockRegion}"`);
  const bedrockEndpoint = url(env, 'BEDROCK_ENDPOINT', ['https:', 'http:']);
  if (bedrockEndpoint && !bedrockRegion)
    throw new ConfigError('BEDROCK_ENDPOINT', 'needs BEDROCK_REGION (SigV4 signs for a region)');
  const onPremBaseUrl = url(env, 'ONPREM_BASE_URL', ['https:', 'http:']);
  const moderationClassifier = oneOf(env, 'AI_MODERATION_CLASSIFIER', ['local', 'openai'] as const, 'local');
  const moderationBaseUrl = url(env, 'AI_MODERATION_BASE_URL', ['https:', 'http:']);
  if (moderationClassifier === 'openai' && !moderationBaseUrl)
    throw new ConfigError('AI_MODERATION_BASE_URL', 'must be set when AI_MODERATION_CLASSIFIER=openai');
  // Endpoints named by this configuration are allowed by it; PROVIDER_ALLOWED_HOSTS adds others.
  if (azureEndpoint) allowed.push(new URL(azureEndpoint).host);
  if (bedrockRegion)
    allowed.push(bedrockEndpoint ? new URL(bedrockEndpoint).host : `bedrock-runtime.${bedrockRegion}.amazonaws.com`);
  if (onPremBaseUrl) allowed.push(new URL(onPremBaseUrl).host);
  if (moderationBaseUrl) allowed.push(new URL(moderationBaseUrl).host);

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
      azureOpenai: azureEndpoint
        ? { endpoint: azureEndpoint, apiVersion: str(env, 'AZURE_OPENAI_API_VERSION') ?? '2024-10-21' }
        : undefined,
      bedrock: bedrockRegion ? { region: bedrockRegion, endpoint: bedrockEndpoint } : undefined,
      onPremBaseUrl,
      onPremModel: str(env, 'ONPREM_MODEL') ?? 'on-prem-default',
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
      aiStream: streamName(env, 'AI_STREAM', 'AI'),
      dualPublishDays: int(env, 'DUAL_PUBLISH_DAYS', 30, 0, 365),
      archiveMonths: int(env, 'OUTBOX_ARCHIVE_MONTHS', 13, 1, 120),
      retentionIntervalMinutes: int(env, 'EVENT_RETENTION_INTERVAL_MINUTES', 60, 1, 1440),
      dlqAlertMinutes: int(env, 'DLQ_ALERT_MINUTES', 10, 1, 1440),
      maxDeliver: int(env, 'CONSUMER_MAX_DELIVER', 6, 1, 100),
      ackWaitSeconds: int(env, 'CONSUMER_ACK_WAIT_SECONDS', 30, 1, 3600),
      consumerConcurrency: int(env, 'CONSUMER_CONCURRENCY', 1, 1, 64),
      consumerBatchSize: int(env, 'CONSUMER_BATCH_SIZE', 100, 1, 500),
    },
    gdprZeroingRetentionClasses: list(env, 'GDPR_ZEROING_RETENTION_CLASSES', ['operational']),
    idempotencyTtlSeconds: int(env, 'IDEMPOTENCY_TTL_SECONDS', 24 * 3600, 60, 7 * 24 * 3600),
    idempotencyLeaseSeconds: int(env, 'IDEMPOTENCY_LEASE_SECONDS', 120, 5, 3600),
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    ai: {
      timeoutMs: {
        mock: int(env, 'MOCK_TIMEOUT_MS', 5_000, 1, 600_000),
        openai: int(env, 'OPENAI_TIMEOUT_MS', 30_000, 1, 600_000),
        azure: int(env, 'AZURE_OPENAI_TIMEOUT_MS', 30_000, 1, 600_000),
        bedrock: int(env, 'BEDROCK_TIMEOUT_MS', 60_000, 1, 600_000),
        onPrem: int(env, 'ONPREM_TIMEOUT_MS', 60_000, 1, 600_000),
      },
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
      residencies: {
        mock: residencyList(env, 'MOCK_RESIDENCIES', ['*']),
        openai: residencyList(env, 'OPENAI_RESIDENCIES', []),
        azure: residencyList(env, 'AZURE_OPENAI_RESIDENCIES', ['AF']),
        bedrock: residencyList(env, 'BEDROCK_RESIDENCIES', []),
        onPrem: residencyList(env, 'ONPREM_RESIDENCIES', ['ON_PREM']),
      },
      assessmentResidencies: residencyList(env, 'AI_ASSESSMENT_RESIDENCIES', ['AF']),
      mockFaultInjection: bool(env, 'MOCK_FAULT_INJECTION', false),
      quotaFallbackRpmPercent: int(env, 'QUOTA_FALLBACK_RPM_PERCENT', 25, 1, 100),
      openaiKeyPath: str(env, 'OPENAI_KEY_PATH') ?? 'ai/providers/openai-compatible',
      azureKeyPath: str(env, 'AZURE_OPENAI_KEY_PATH') ?? 'ai/providers/azure-openai',
      bedrockKeyPath: str(env, 'BEDROCK_KEY_PATH') ?? 'ai/providers/bedrock',
      onPremKeyPath: str(env, 'ONPREM_KEY_PATH'),
      moderation: {
        features: featureKeyList(env, 'AI_MODERATION_FEATURES', ['patient_chart.note_summary']),
        classifier: moderationClassifier,
        baseUrl: moderationBaseUrl,
        model: str(env, 'AI_MODERATION_MODEL') ?? 'omni-moderation-latest',
        keyPath: str(env, 'AI_MODERATION_KEY_PATH') ?? 'ai/moderation/openai',
        timeoutMs: int(env, 'AI_MODERATION_TIMEOUT_MS', 5_000, 1, 120_000),
        residencies: residencyList(env, 'AI_MODERATION_RESIDENCIES', []),
      },
      reviewClaimMinutes: int(env, 'AI_REVIEW_CLAIM_MINUTES', 15, 1, 24 * 60),
      keyRetentionDays: int(env, 'PROVIDER_KEY_RETENTION_DAYS', 30, 0, 3650),
      shadowParity: {
        maxRatio: decimal(env, 'SHADOW_PARITY_MAX_RATIO', 1.1, 0.01, 100),
        minSamples: int(env, 'SHADOW_PARITY_MIN_SAMPLES', 20, 1, 1_000_000),
      },
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
      subgraphMaxConnections: int(env, 'SUBGRAPH_MAX_CONNECTIONS', 64, 1, 4096),
    },
  };
}
