import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import type { Config } from '../../platform/config/config.js';
import type { Db } from '../../platform/db/database.js';
import type { Logger } from '../../platform/logger.js';
import type { Metrics } from '../../platform/metrics.js';
import { systemClock } from '../../events/clock.js';
import { createEventProducer, type EventProducer } from '../../events/outbox.js';
import { loadSchemaRegistry } from '../../events/schemas/registry.js';
import { createAssistService, type AssistService, type Moderator } from './assist/assist.service.js';
import { createAssessmentAdmin, type AssessmentAdmin } from './assessment/assessment.admin.js';
import { createBackfillService, type BackfillService } from './backfill/backfill.service.js';
import { createFeatureFlagAdmin, type FeatureFlagAdmin } from './flags/feature-flag.admin.js';
import { createKeyRetentionAdmin, type KeyRetentionAdmin } from './keys/key-retention.admin.js';
import { moderatorFromConfig } from './moderation/moderator.js';
import { createReviewService, type ReviewService } from './review/review.service.js';
import { createShadowService, type ShadowService } from './shadow/shadow.service.js';
import { countQuotaRejections, observeProviders } from './ops-metrics.js';
import { SnapshotCache } from './assist/assist.repo.js';
import { outboxAuditSink, type AuditSink } from './audit/audit.sink.js';
import { Breakers } from './providers/breakers.js';
import { providersFromConfig, type ProviderRegistry } from './providers/registry.js';
import { purgeExpiredHeldText } from './provenance/provenance.repo.js';
import { createRedisQuotaStore } from './quota/quota.redis.js';
import { createQuotaService, type QuotaService } from './quota/quota.service.js';
import { createMemoryQuotaStore, type QuotaStore } from './quota/quota.store.js';
import { createRoutingAdmin, type RoutingAdmin } from './routing/routing-rule.admin.js';
import { createTemplateAdmin, type TemplateAdmin } from './templates/template.admin.js';
import { createFileSecretStore } from './vault/file-secrets.js';
import { cacheSecrets, type CachedSecrets, type SecretStore } from './vault/secrets.js';
import { createVaultKvStore } from './vault/vault-kv.js';

/** What the AI subgraph is made of; every part can be replaced by a test. */
export interface AiServiceDeps {
  config: Config;
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
  now?: () => Date;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Provider, quota and HITL pass-through metrics (ops-metrics.ts). */
  metrics?: Metrics;
}

export interface AiServices {
  assist: AssistService;
  routingAdmin: RoutingAdmin;
  templateAdmin: TemplateAdmin;
  flags: FeatureFlagAdmin;
  assessments: AssessmentAdmin;
  review: ReviewService;
  keys: KeyRetentionAdmin;
  shadow: ShadowService;
  backfill: BackfillService;
  quota: QuotaService;
  secrets: CachedSecrets;
  registry: ProviderRegistry;
  breakers: Breakers;
  /** Purges output text held for review past its retention (expiring unreviewed tasks); returns the number of rows. */
  purgeHeldText(): Promise<number>;
}

export function secretStoreFromConfig(config: Config): SecretStore {
  if (config.vault.addr) {
    if (!config.vault.token) throw new Error('VAULT_TOKEN must be set when VAULT_ADDR is');
    return createVaultKvStore({ addr: config.vault.addr, token: config.vault.token, mount: config.vault.mount });
  }
  return createFileSecretStore(config.dataDir);
}

export function createAiServices(deps: AiServiceDeps): AiServices {
  const { config, db, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const nowMs = () => now().getTime();
  const secrets = cacheSecrets(deps.secretStore ?? secretStoreFromConfig(config), {
    ttlMs: config.ai.vaultCacheSeconds * 1000,
    now: nowMs,
  });
  const registry = observeProviders((deps.providers ?? ((s) => providersFromConfig(config, s)))(secrets), deps.metrics);
  const breakers = new Breakers({ failureThreshold: config.ai.breakerFailures, cooldownMs: config.ai.breakerCooldownMs }, nowMs);
  const quotaStore = deps.quotaStore ?? (deps.redis ? createRedisQuotaStore(deps.redis) : createMemoryQuotaStore());
  const quota = countQuotaRejections(
    createQuotaService({
      store: quotaStore,
      fallbackRpmPercent: config.ai.quotaFallbackRpmPercent,
      now: nowMs,
      logger,
    }),
    deps.metrics,
  );
  const events =
    deps.events ??
    createEventProducer({
      registry: loadSchemaRegistry(),
      clock: deps.now ? { now } : systemClock,
      source: { service: 'ai-gateway', instance: config.service.instance, commit: config.service.commit },
      dualPublishDays: config.events.dualPublishDays,
    });
  const audit = deps.audit ?? outboxAuditSink(events);
  const snapshots = new SnapshotCache(config.ai.configCacheMs, nowMs);
  const onChange = () => snapshots.clear();

  return {
    assist: createAssistService({
      db,
      quota,
      registry,
      engine: {
        breakers,
        retries: config.ai.providerRetries,
        backoff: { baseMs: config.ai.retryBaseMs, maxMs: config.ai.retryMaxMs, retryAfterMaxMs: config.ai.retryAfterMaxMs },
        now: nowMs,
        random: deps.random ?? Math.random,
        sleep: deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
      },
      audit,
      snapshots,
      settings: config.ai,
      moderator: deps.moderator ?? moderatorFromConfig(config, secrets),
      clock: now,
      monotonic: () => performance.now(),
      logger,
      metrics: deps.metrics,
    }),
    routingAdmin: createRoutingAdmin({
      db,
      audit,
      knownProviders: () => registry.known,
      configuredProviders: () => new Set(registry.providers.keys()),
      assessmentResidencies: config.ai.assessmentResidencies,
      onPremModel: config.providers.onPremModel,
      now,
      onChange,
      logger,
    }),
    templateAdmin: createTemplateAdmin({ db, audit, maxChars: config.ai.maxPromptChars, onChange, logger }),
    flags: createFeatureFlagAdmin({ db, audit, onChange, logger }),
    assessments: createAssessmentAdmin({ db, audit, now }),
    review: createReviewService({
      db,
      audit,
      events,
      now,
      claimMinutes: config.ai.reviewClaimMinutes,
      retentionHours: config.ai.reviewTextRetentionHours,
      onChange,
      logger,
    }),
    keys: createKeyRetentionAdmin({ db, audit, now, retentionDays: config.ai.keyRetentionDays }),
    shadow: createShadowService({
      db,
      now,
      maxRatio: config.ai.shadowParity.maxRatio,
      minSamples: config.ai.shadowParity.minSamples,
      logger,
    }),
    backfill: createBackfillService({ db, audit, now, logger }),
    quota,
    secrets,
    registry,
    breakers,
    purgeHeldText: () => purgeExpiredHeldText(db, now()),
  };
}
