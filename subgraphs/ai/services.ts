import type { Redis } from 'ioredis';
import { systemClock, type Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db/database.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { Metrics } from '../../platform/observability/metrics.js';
import { createEventProducer, type EventProducer } from '../../events/publish/outbox.js';
import { loadSchemaRegistry } from '../../events/schemas/registry.js';
import type { AiSubgraphConfig } from './config.js';
import { createAssistPipeline, type AssistPipeline } from './assist/assist.pipeline.js';
import { SnapshotCache } from './assist/assist.repo.js';
import { createAssessmentAdmin, type AssessmentAdmin } from './assessment/assessment.admin.js';
import { outboxAuditSink, type AuditSink } from './audit/audit.sink.js';
import { createBackfillService, type BackfillService } from './backfill/backfill.service.js';
import { createFeatureFlagAdmin, type FeatureFlagAdmin } from './flags/feature-flag.admin.js';
import { createKeyRetentionAdmin, type KeyRetentionAdmin } from './keys/key-retention.admin.js';
import { aiMetrics, countQuotaRejections, observeProviders } from './metrics.js';
import { moderatorFromConfig, type Moderator } from './moderation/moderator.js';
import { Breakers } from './providers/breakers.js';
import type { CallEngineDeps } from './providers/call-engine.js';
import { providersFromConfig, type ProviderRegistry } from './providers/registry.js';
import { purgeExpiredHeldText } from './provenance/provenance.repo.js';
import { createRedisQuotaStore } from './quota/quota.redis.js';
import { createRedisReplicaCensus, noReplicaCensus, type ReplicaCensus } from './quota/quota.replicas.js';
import { createQuotaSettingsAdmin, type QuotaSettingsAdmin } from './quota/quota-settings.admin.js';
import { createQuotaService, type QuotaService } from './quota/quota.service.js';
import { createMemoryQuotaStore, type QuotaStore } from './quota/quota.store.js';
import { createReceiptKeys, type ReceiptKeys } from './provenance/receipts/receipt-keys.js';
import { receiptWriter, type ReceiptWriter } from './provenance/receipts/receipt.repo.js';
import { createReviewService, type ReviewService } from './review/review.service.js';
import { createRoutingAdmin, type RoutingAdmin } from './routing/routing-rule.admin.js';
import { createShadowService, type ShadowService } from './shadow/shadow.service.js';
import { createTemplateAdmin, type TemplateAdmin } from './templates/template.admin.js';
import { createFileSecretStore } from './vault/file-secrets.js';
import { cacheSecrets, type CachedSecrets, type SecretStore } from './vault/secrets.js';
import { createVaultKvStore } from './vault/vault-kv.js';

/** What the AI subgraph is made of; every part can be replaced by a test. */
export interface AiServiceDeps {
  config: AiSubgraphConfig;
  db: Db;
  logger: Logger;
  redis?: Redis;
  /** Defaults: Redis when `redis` is given, else in memory. */
  quotaStore?: QuotaStore;
  secretStore?: SecretStore;
  /** Defaults to the providers of the configuration. */
  providers?: (secrets: CachedSecrets) => ProviderRegistry;
  audit?: AuditSink;
  events?: EventProducer;
  /** Defaults to AI_MODERATION_CLASSIFIER (the built-in rules, or an OpenAI-compatible endpoint). */
  moderator?: Moderator;
  /** The one clock of the subgraph (default: the system clock); a test moves a manualClock. */
  clock?: Clock;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Provider, quota and HITL pass-through metrics (metrics.ts). */
  metrics?: Metrics;
  /** Defaults to signing receipts with the vault's key; bench/receipts.ts measures without them. */
  receipts?: ReceiptWriter;
}

export interface AiServices {
  /** The clock every part below reads. */
  clock: Clock;
  assistPipeline: AssistPipeline;
  routingAdmin: RoutingAdmin;
  templateAdmin: TemplateAdmin;
  flags: FeatureFlagAdmin;
  assessments: AssessmentAdmin;
  review: ReviewService;
  keyRetention: KeyRetentionAdmin;
  shadow: ShadowService;
  backfill: BackfillService;
  quota: QuotaService;
  /** Per-tenant quota settings (enabled, amounts), read and written by ai.admin. */
  quotaSettings: QuotaSettingsAdmin;
  /** The AI replicas alive, as Redis last counted them; the server beats it (server.ts). */
  replicaCensus: ReplicaCensus;
  secrets: CachedSecrets;
  registry: ProviderRegistry;
  breakers: Breakers;
  /** Receipt signing keys (vault) and their JWKS (database); rotated by platform.admin. */
  receiptKeys: ReceiptKeys;
  /** The audit sink, for a change made outside the use cases above (a key rotation). */
  audit: AuditSink;
  /** Purges output text held for review past its retention (expiring unreviewed tasks); returns the number of rows. */
  purgeHeldText(): Promise<number>;
}

export function secretStoreFromConfig(config: AiSubgraphConfig): SecretStore {
  if (config.vault.addr) {
    if (!config.vault.token) throw new Error('VAULT_TOKEN must be set when VAULT_ADDR is');
    return createVaultKvStore({ addr: config.vault.addr, token: config.vault.token, mount: config.vault.mount });
  }
  return createFileSecretStore(config.dataDir);
}

/** The parts the use cases share: keys, providers and their breakers, quota, audit, the snapshot cache. */
interface SharedParts {
  clock: Clock;
  secrets: CachedSecrets;
  registry: ProviderRegistry;
  breakers: Breakers;
  quota: QuotaService;
  census: ReplicaCensus;
  events: EventProducer;
  audit: AuditSink;
  snapshots: SnapshotCache;
  receiptKeys: ReceiptKeys;
  receipts: ReceiptWriter;
}

function sharedParts(deps: AiServiceDeps, clock: Clock): SharedParts {
  const { config, logger } = deps;
  const store = deps.secretStore ?? secretStoreFromConfig(config);
  const secrets = cacheSecrets(store, {
    ttlMs: config.ai.vaultCacheSeconds * 1000,
    clock,
  });
  const registry = observeProviders((deps.providers ?? ((s) => providersFromConfig(config, s)))(secrets), deps.metrics);
  const breakers = new Breakers({ failureThreshold: config.ai.breakerFailures, cooldownMs: config.ai.breakerCooldownMs }, clock);
  const quotaStore = deps.quotaStore ?? (deps.redis ? createRedisQuotaStore(deps.redis) : createMemoryQuotaStore());
  const census = deps.redis ? createRedisReplicaCensus(deps.redis, config.service.instance, logger) : noReplicaCensus;
  const quota = countQuotaRejections(
    createQuotaService({
      store: quotaStore,
      fallbackRpmPercent: config.ai.quotaFallbackRpmPercent,
      fallbackReplicas: config.ai.quotaFallbackReplicas,
      census,
      clock,
      logger,
    }),
    deps.metrics,
  );
  const events =
    deps.events ??
    createEventProducer({
      registry: loadSchemaRegistry(),
      clock,
      source: { service: 'ai-gateway', instance: config.service.instance, commit: config.service.commit },
      dualPublishDays: config.events.dualPublishDays,
    });
  const audit = deps.audit ?? outboxAuditSink(events);
  const receiptKeys = createReceiptKeys({ db: deps.db, store, secrets, clock });
  return {
    receiptKeys,
    receipts: deps.receipts ?? receiptWriter(receiptKeys, clock),
    clock,
    secrets,
    registry,
    breakers,
    quota,
    census,
    events,
    audit,
    snapshots: new SnapshotCache(config.ai.configCacheMs, clock),
  };
}

function callPolicy(deps: AiServiceDeps, breakers: Breakers): Omit<CallEngineDeps, 'providers' | 'clock'> {
  const { ai } = deps.config;
  return {
    breakers,
    retries: ai.providerRetries,
    backoff: { baseMs: ai.retryBaseMs, maxMs: ai.retryMaxMs, retryAfterMaxMs: ai.retryAfterMaxMs },
    random: deps.random ?? Math.random,
    sleep: deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
  };
}

export function createAiServices(deps: AiServiceDeps): AiServices {
  const { config, db, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const parts = sharedParts(deps, clock);
  const { registry, audit, snapshots } = parts;
  const store = { db, audit, clock, receipts: parts.receipts };
  const onChange = () => snapshots.clear();
  return {
    clock,
    quota: parts.quota,
    replicaCensus: parts.census,
    secrets: parts.secrets,
    registry,
    breakers: parts.breakers,
    receiptKeys: parts.receiptKeys,
    audit,
    assistPipeline: createAssistPipeline({
      db,
      receipts: parts.receipts,
      quota: parts.quota,
      registry,
      callPolicy: callPolicy(deps, parts.breakers),
      audit,
      snapshots,
      settings: config.ai,
      moderator: deps.moderator ?? moderatorFromConfig(config, parts.secrets),
      clock,
      metrics: deps.metrics && aiMetrics(deps.metrics),
    }),
    routingAdmin: createRoutingAdmin({
      ...store,
      knownProviders: () => registry.known,
      configuredProviders: () => new Set(registry.providers.keys()),
      assessmentResidencies: config.ai.assessmentResidencies,
      onPremModel: config.providers.onPremModel,
      onChange,
      logger,
    }),
    templateAdmin: createTemplateAdmin({ ...store, maxChars: config.ai.maxPromptChars, onChange, logger }),
    flags: createFeatureFlagAdmin({ ...store, onChange, logger }),
    quotaSettings: createQuotaSettingsAdmin({ ...store, onChange, logger }),
    assessments: createAssessmentAdmin(store),
    review: createReviewService({
      ...store,
      events: parts.events,
      claimMinutes: config.ai.reviewClaimMinutes,
      retentionHours: config.ai.reviewTextRetentionHours,
      onChange,
      logger,
    }),
    keyRetention: createKeyRetentionAdmin({ ...store, retentionDays: config.ai.keyRetentionDays }),
    shadow: createShadowService({
      db,
      clock,
      maxRatio: config.ai.shadowParity.maxRatio,
      minSamples: config.ai.shadowParity.minSamples,
      logger,
    }),
    backfill: createBackfillService({ ...store, logger }),
    purgeHeldText: () => purgeExpiredHeldText(db, parts.receipts, clock.now()),
  };
}
