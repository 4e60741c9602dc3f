import { systemClock, type Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db/database.js';
import { isAppError } from '../../platform/errors/errors.js';
import type { Counter, Histogram } from 'prom-client';
import type { Metrics } from '../../platform/observability/metrics.js';
import { SpanKind, withSpan } from '../../platform/observability/telemetry.js';
import { ProviderError, type ModelProvider } from './providers/provider.js';
import type { Breakers } from './providers/breakers.js';
import type { ProviderRegistry } from './providers/registry.js';
import type { QuotaService } from './quota/quota.service.js';

/**
 * The AI gateway's metrics, added around its parts from outside (decorators and scrape-time
 * sources), so the pipeline code stays free of metrics calls. Each function here depends on the
 * small part it observes, never on the assembled services (services.ts wires these in).
 * Their names and labels are a contract (dashboards, docs/operations.md).
 */

/** provider_breaker_state values. */
export const BREAKER_STATE = { closed: 0, half_open: 1, open: 2 } as const;

const PROVIDER_BREAKER_STATE = {
  name: 'provider_breaker_state',
  help: 'Circuit breaker per model provider: 0 closed, 1 half-open, 2 open.',
  labelNames: ['provider'],
} as const;
const HITL_QUEUE_DEPTH = {
  name: 'hitl_queue_depth',
  help: 'AI outputs waiting for human review, per reviewer queue.',
  labelNames: ['queue'],
} as const;
const HITL_QUEUE_OLDEST_AGE = {
  name: 'hitl_queue_oldest_age_seconds',
  help: 'Age of the oldest output waiting for review, per reviewer queue.',
  labelNames: ['queue'],
} as const;

export interface AiMetrics {
  readonly quotaRejections: Counter<'limit'>;
  readonly providerDuration: Histogram<'provider' | 'outcome'>;
  readonly providerErrors: Counter<'provider' | 'code'>;
  /** Outputs released without review because HITL is switched off (rollback phase 2). */
  readonly hitlPassthrough: Counter<'feature'>;
}

/** The AI gateway's counters and histograms on the process's registry (declared once, however many callers). */
export function aiMetrics(metrics: Metrics): AiMetrics {
  return {
    quotaRejections: metrics.counter({
      name: 'quota_rejections_total',
      help: 'AI requests refused by the per-tenant quota, by limit.',
      labelNames: ['limit'],
    }),
    providerDuration: metrics.histogram({
      name: 'provider_request_duration_seconds',
      help: 'Model provider call latency per attempt, by provider and outcome.',
      labelNames: ['provider', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    }),
    providerErrors: metrics.counter({
      name: 'provider_errors_total',
      help: 'Failed model provider attempts, by provider and error code.',
      labelNames: ['provider', 'code'],
    }),
    hitlPassthrough: metrics.counter({
      name: 'hitl_passthrough_total',
      help: 'AI outputs passed through without human review because HITL is disabled.',
      labelNames: ['feature'],
    }),
  };
}

/** Every provider attempt: a client span (model and token counts, never prompt or output text), latency by outcome, errors by kind. */
export function observeProviders(registry: ProviderRegistry, metrics: Metrics | undefined): ProviderRegistry {
  const recorded = metrics && aiMetrics(metrics);
  const providers = new Map([...registry.providers].map(([name, provider]) => [name, observeProvider(provider, recorded)]));
  return { ...registry, providers };
}

function observeProvider(provider: ModelProvider, metrics: AiMetrics | undefined): ModelProvider {
  const name = provider.name;
  return {
    name,
    get residencies() {
      return provider.residencies;
    },
    get timeoutMs() {
      return provider.timeoutMs;
    },
    complete: (request) =>
      withSpan(
        `provider ${name}`,
        { 'gen_ai.system': name, 'gen_ai.request.model': request.model, 'gen_ai.request.attempt': request.attempt },
        async (span) => {
          const startedAt = process.hrtime.bigint();
          const seconds = () => Number(process.hrtime.bigint() - startedAt) / 1e9;
          try {
            const response = await provider.complete(request);
            metrics?.providerDuration.observe({ provider: name, outcome: 'ok' }, seconds());
            span.setAttributes({
              'gen_ai.response.model': response.model,
              ...(response.usage
                ? {
                    'gen_ai.usage.input_tokens': response.usage.inputTokens,
                    'gen_ai.usage.output_tokens': response.usage.outputTokens,
                  }
                : {}),
            });
            return response;
          } catch (error) {
            const code = error instanceof ProviderError ? error.kind : request.signal.aborted ? 'aborted' : 'unknown';
            metrics?.providerDuration.observe({ provider: name, outcome: 'error' }, seconds());
            metrics?.providerErrors.inc({ provider: name, code });
            throw error;
          }
        },
        { kind: SpanKind.CLIENT },
      ),
  };
}

/** Counts requests the per-tenant quota refused (quota.exceeded by limit; `unavailable` when token budgets fail closed). */
export function countQuotaRejections(quota: QuotaService, metrics: Metrics | undefined): QuotaService {
  if (!metrics) return quota;
  const { quotaRejections } = aiMetrics(metrics);
  return {
    ...quota,
    async reserve(tenantId, tenantQuota, tokens) {
      try {
        return await quota.reserve(tenantId, tenantQuota, tokens);
      } catch (error) {
        if (isAppError(error) && error.code === 'quota.exceeded')
          quotaRejections.inc({ limit: String(error.details?.limit ?? 'unknown') });
        else if (isAppError(error) && error.code === 'quota.unavailable') quotaRejections.inc({ limit: 'unavailable' });
        throw error;
      }
    },
  };
}

const HITL_CACHE_MS = 15_000;

/** What the gauges read: the configured providers and the circuit of each. */
export interface AiGaugeSources {
  registry: Pick<ProviderRegistry, 'providers'>;
  breakers: Pick<Breakers, 'state'>;
}

/**
 * Scrape-time gauges of the AI gateway: the breaker of each configured provider, and the HITL queue
 * (outputs held for review per facility/specialty queue, and the age of the oldest). The queue is
 * read from the database, at most every 15 s per process; every replica reports the same value, so
 * aggregate it with max().
 */
export function feedAiMetrics(
  metrics: Metrics,
  sources: AiGaugeSources,
  db: Db,
  options: { cacheMs?: number; clock?: Clock } = {},
): () => void {
  const cacheMs = options.cacheMs ?? HITL_CACHE_MS;
  const clock = options.clock ?? systemClock;
  const removeBreakers = metrics.feed(PROVIDER_BREAKER_STATE, () =>
    [...sources.registry.providers.keys()].map((provider) => ({
      labels: { provider },
      value: BREAKER_STATE[sources.breakers.state(provider)],
    })),
  );
  let cached: { at: number; rows: Promise<Array<{ queue: string; depth: number; oldest: number }>> } | undefined;
  const pending = () => {
    const nowMs = clock.now().getTime();
    if (!cached || nowMs - cached.at >= cacheMs) {
      const rows = db.$queryRaw<Array<{ queue: string; depth: number; oldest: number }>>`
        SELECT COALESCE("facilityId", '-') || '/' || COALESCE("specialty", '-') AS queue,
               count(*)::int AS depth,
               EXTRACT(EPOCH FROM (now() - min("createdAt")))::float8 AS oldest
          FROM "AIProvenance" WHERE "reviewState" = 'pending'
         GROUP BY 1`;
      cached = { at: nowMs, rows };
      rows.catch(() => (cached = undefined));
    }
    return cached.rows;
  };
  const removeDepth = metrics.feed(HITL_QUEUE_DEPTH, async () =>
    (await pending()).map((r) => ({ labels: { queue: r.queue }, value: r.depth })),
  );
  const removeAge = metrics.feed(HITL_QUEUE_OLDEST_AGE, async () =>
    (await pending()).map((r) => ({ labels: { queue: r.queue }, value: Math.max(0, r.oldest) })),
  );
  return () => {
    removeBreakers();
    removeDepth();
    removeAge();
  };
}
