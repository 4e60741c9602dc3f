import type { EventsSlice } from '../../events/config.js';
import type { PlatformConfig } from '../../platform/config/config.js';
import {
  ConfigError,
  envBool,
  envDecimal,
  envInt,
  envList,
  envOneOf,
  envPatternList,
  envString,
  envUrl,
  type Env,
} from '../../platform/config/env.js';

/** The AI gateway's configuration slice: its vault, its providers and its assist pipeline. */
export interface AiSlice {
  vault: VaultConfig;
  providers: ProvidersConfig;
  ai: AiConfig;
}

/** What the AI subgraph reads: the shared platform slice, its own, and the events' dual-publish window. */
export type AiSubgraphConfig = PlatformConfig & EventsSlice & AiSlice;

export interface VaultConfig {
  addr?: string;
  token?: string;
  mount: string;
}

export interface ProvidersConfig {
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
  /** AI_ALLOW_MOCK_PROVIDER: in production the mock provider serves only with this opt-in. */
  allowMock: boolean;
}

/** What the production check needs of this slice (platform/config/production.logic.ts). */
export function aiProductionFacts(slice: AiSlice): { realProviders: string[]; allowMockProvider: boolean } {
  return { realProviders: realProviders(slice.providers), allowMockProvider: slice.providers.allowMock };
}

/** The providers configured besides the built-in mock, by the names routing rules use. */
function realProviders(providers: ProvidersConfig): string[] {
  const configured: Array<[string, unknown]> = [
    ['openai-compatible', providers.openaiBaseUrl],
    ['azure-openai', providers.azureOpenai],
    ['bedrock', providers.bedrock],
    ['on-prem', providers.onPremBaseUrl],
  ];
  return configured.filter(([, setting]) => setting !== undefined).map(([name]) => name);
}

export interface ModerationConfig {
  features: string[];
  classifier: 'local' | 'openai';
  baseUrl?: string;
  model: string;
  keyPath: string;
  timeoutMs: number;
  /** Residencies whose text the remote classifier may see ('*' = any); other requests are judged locally. */
  residencies: string[];
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
  /** While Redis is down, all replicas together admit at most this percentage of a tenant's requests per minute (0: refuse). */
  quotaFallbackRpmPercent: number;
  /** The replica count that percentage is divided by, at least (replicas seen alive in Redis raise it). */
  quotaFallbackReplicas: number;
  /** Vault KV path of the openai-compatible provider's secret (field api_key). */
  openaiKeyPath: string;
  /** Vault KV paths: Azure (field api_key), Bedrock (access_key_id, secret_access_key, session_token), on-prem (api_key; none = no key). */
  azureKeyPath: string;
  bedrockKeyPath: string;
  onPremKeyPath?: string;
  /** Phase 2: features whose prompts and outputs must pass the classifier, and which classifier judges content. */
  moderation: ModerationConfig;
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

const RESIDENCY_CODE = /^[A-Z][A-Z0-9_]{1,15}$/;
const FEATURE_KEY = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/;

const residencyList = (env: Env, name: string, fallback: string[]) =>
  envPatternList(env, name, fallback, RESIDENCY_CODE, 'residency code');

export function loadAiSlice(env: Env = process.env): AiSlice {
  const moderation = loadModeration(env);
  return { vault: loadVault(env), providers: loadProviders(env, moderation), ai: loadAiPipeline(env, moderation) };
}

function loadVault(env: Env): VaultConfig {
  return {
    addr: envUrl(env, 'VAULT_ADDR', ['http:', 'https:']),
    token: envString(env, 'VAULT_TOKEN'),
    mount: envString(env, 'VAULT_KV_MOUNT') ?? 'secret',
  };
}

function loadBedrock(env: Env): ProvidersConfig['bedrock'] {
  const region = envString(env, 'BEDROCK_REGION');
  if (region !== undefined && !/^[a-z]{2}(-[a-z]+)+-\d$/.test(region))
    throw new ConfigError('BEDROCK_REGION', `is not an AWS region, got "${region}"`);
  const endpoint = envUrl(env, 'BEDROCK_ENDPOINT', ['https:', 'http:']);
  if (endpoint && !region) throw new ConfigError('BEDROCK_ENDPOINT', 'needs BEDROCK_REGION (SigV4 signs for a region)');
  return region ? { region, endpoint } : undefined;
}

function loadProviders(env: Env, moderation: Pick<ModerationConfig, 'baseUrl'>): ProvidersConfig {
  const openaiBaseUrl = envUrl(env, 'OPENAI_BASE_URL', ['https:', 'http:']);
  const azureEndpoint = envUrl(env, 'AZURE_OPENAI_ENDPOINT', ['https:', 'http:']);
  const bedrock = loadBedrock(env);
  const onPremBaseUrl = envUrl(env, 'ONPREM_BASE_URL', ['https:', 'http:']);
  // Endpoints named by this configuration are allowed by it; PROVIDER_ALLOWED_HOSTS adds others.
  const named = [openaiBaseUrl, azureEndpoint, bedrock?.endpoint, onPremBaseUrl, moderation.baseUrl];
  const hosts = named.filter((value) => value !== undefined).map((value) => new URL(value).host);
  if (bedrock && !bedrock.endpoint) hosts.push(`bedrock-runtime.${bedrock.region}.amazonaws.com`);
  return {
    openaiBaseUrl,
    openaiModel: envString(env, 'OPENAI_MODEL') ?? 'gpt-4o-mini',
    allowedHosts: [...new Set([...envList(env, 'PROVIDER_ALLOWED_HOSTS', []), ...hosts])],
    azureOpenai: azureEndpoint
      ? { endpoint: azureEndpoint, apiVersion: envString(env, 'AZURE_OPENAI_API_VERSION') ?? '2024-10-21' }
      : undefined,
    bedrock,
    onPremBaseUrl,
    onPremModel: envString(env, 'ONPREM_MODEL') ?? 'on-prem-default',
    allowMock: envBool(env, 'AI_ALLOW_MOCK_PROVIDER', false),
  };
}

function loadModeration(env: Env): ModerationConfig {
  const classifier = envOneOf(env, 'AI_MODERATION_CLASSIFIER', ['local', 'openai'] as const, 'local');
  const baseUrl = envUrl(env, 'AI_MODERATION_BASE_URL', ['https:', 'http:']);
  if (classifier === 'openai' && !baseUrl)
    throw new ConfigError('AI_MODERATION_BASE_URL', 'must be set when AI_MODERATION_CLASSIFIER=openai');
  return {
    features: envPatternList(env, 'AI_MODERATION_FEATURES', ['patient_chart.note_summary'], FEATURE_KEY, 'feature key'),
    classifier,
    baseUrl,
    model: envString(env, 'AI_MODERATION_MODEL') ?? 'omni-moderation-latest',
    keyPath: envString(env, 'AI_MODERATION_KEY_PATH') ?? 'ai/moderation/openai',
    timeoutMs: envInt(env, 'AI_MODERATION_TIMEOUT_MS', 5_000, 1, 120_000),
    residencies: residencyList(env, 'AI_MODERATION_RESIDENCIES', []),
  };
}

function loadAiPipeline(env: Env, moderation: ModerationConfig): AiConfig {
  return {
    timeoutMs: {
      mock: envInt(env, 'MOCK_TIMEOUT_MS', 5_000, 1, 600_000),
      openai: envInt(env, 'OPENAI_TIMEOUT_MS', 30_000, 1, 600_000),
      azure: envInt(env, 'AZURE_OPENAI_TIMEOUT_MS', 30_000, 1, 600_000),
      bedrock: envInt(env, 'BEDROCK_TIMEOUT_MS', 60_000, 1, 600_000),
      onPrem: envInt(env, 'ONPREM_TIMEOUT_MS', 60_000, 1, 600_000),
    },
    providerRetries: envInt(env, 'AI_PROVIDER_RETRIES', 1, 0, 5),
    retryBaseMs: envInt(env, 'AI_RETRY_BASE_MS', 200, 0, 60_000),
    retryMaxMs: envInt(env, 'AI_RETRY_MAX_MS', 2_000, 0, 60_000),
    retryAfterMaxMs: envInt(env, 'AI_RETRY_AFTER_MAX_MS', 5_000, 0, 600_000),
    deadlineMs: envInt(env, 'AI_ASSIST_DEADLINE_MS', 60_000, 1, 600_000),
    breakerFailures: envInt(env, 'AI_BREAKER_FAILURES', 5, 1, 1000),
    breakerCooldownMs: envInt(env, 'AI_BREAKER_COOLDOWN_MS', 30_000, 1, 3_600_000),
    maxOutputTokens: envInt(env, 'AI_MAX_OUTPUT_TOKENS', 1024, 1, 1_000_000),
    maxPromptChars: envInt(env, 'AI_MAX_PROMPT_CHARS', 100_000, 100, 10_000_000),
    reviewTextRetentionHours: envInt(env, 'AI_REVIEW_TEXT_RETENTION_HOURS', 72, 1, 24 * 365),
    residencies: {
      mock: residencyList(env, 'MOCK_RESIDENCIES', ['*']),
      openai: residencyList(env, 'OPENAI_RESIDENCIES', []),
      azure: residencyList(env, 'AZURE_OPENAI_RESIDENCIES', ['AF']),
      bedrock: residencyList(env, 'BEDROCK_RESIDENCIES', []),
      onPrem: residencyList(env, 'ONPREM_RESIDENCIES', ['ON_PREM']),
    },
    assessmentResidencies: residencyList(env, 'AI_ASSESSMENT_RESIDENCIES', ['AF']),
    mockFaultInjection: envBool(env, 'MOCK_FAULT_INJECTION', false),
    quotaFallbackRpmPercent: envInt(env, 'QUOTA_FALLBACK_RPM_PERCENT', 25, 0, 100),
    quotaFallbackReplicas: envInt(env, 'QUOTA_FALLBACK_REPLICAS', 1, 1, 1000),
    openaiKeyPath: envString(env, 'OPENAI_KEY_PATH') ?? 'ai/providers/openai-compatible',
    azureKeyPath: envString(env, 'AZURE_OPENAI_KEY_PATH') ?? 'ai/providers/azure-openai',
    bedrockKeyPath: envString(env, 'BEDROCK_KEY_PATH') ?? 'ai/providers/bedrock',
    onPremKeyPath: envString(env, 'ONPREM_KEY_PATH'),
    moderation,
    reviewClaimMinutes: envInt(env, 'AI_REVIEW_CLAIM_MINUTES', 15, 1, 24 * 60),
    keyRetentionDays: envInt(env, 'PROVIDER_KEY_RETENTION_DAYS', 30, 0, 3650),
    shadowParity: {
      maxRatio: envDecimal(env, 'SHADOW_PARITY_MAX_RATIO', 1.1, 0.01, 100),
      minSamples: envInt(env, 'SHADOW_PARITY_MIN_SAMPLES', 20, 1, 1_000_000),
    },
    vaultCacheSeconds: envInt(env, 'VAULT_CACHE_SECONDS', 60, 0, 3600),
    configCacheMs: envInt(env, 'AI_CONFIG_CACHE_MS', 2_000, 0, 600_000),
  };
}
