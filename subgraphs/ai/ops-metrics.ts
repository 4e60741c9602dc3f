import type { Db } from '../../platform/db/database.js';
import { isAppError } from '../../platform/errors.js';
import { BREAKER_STATE, type Metrics } from '../../platform/metrics.js';
import { SpanKind, withSpan } from '../../platform/telemetry.js';
import { ProviderError, type ModelProvider } from './providers/provider.js';
import type { ProviderRegistry } from './providers/registry.js';
import type { QuotaService } from './quota/quota.service.js';
import type { AiServices } from './services.js';

/**
 * The AI gateway's operational signals, added around its parts from outside (decorators and
 * scrape-time sources), so the pipeline code stays free of metrics calls.
 */

/** Every provider attempt: a client span (model and token counts, never prompt or output text), latency by outcome, errors by kind. */
export function observeProviders(registry: ProviderRegistry, metrics: Metrics | undefined): ProviderRegistry {
  const providers = new Map([...registry.providers].map(([name, provider]) => [name, observeProvider(provider, metrics)]));
  return { ...registry, providers };
}

function observeProvider(provider: ModelProvider, metrics: Metrics | undefined): ModelProvider {
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

/** Counts requests the per-tenant quota refused (QUOTA_EXCEEDED by limit; `unavailable` when token budgets fail closed). */
export function countQuotaRejections(quota: QuotaService, metrics: Metrics | undefined): QuotaService {
  if (!metrics) return quota;
  return {
    ...quota,
    async reserve(tenantId, tenantQuota, tokens) {
      try {
        return await quota.reserve(tenantId, tenantQuota, tokens);
      } catch (error) {
        if (isAppError(error) && error.code === 'QUOTA_EXCEEDED')
          metrics.quotaRejections.inc({ limit: String(error.details?.limit ?? 'unknown') });
        else if (isAppError(error) && error.code === 'quota.unavailable') metrics.quotaRejections.inc({ limit: 'unavailable' });
        throw error;
      }
    },
  };
}

const HITL_CACHE_MS = 15_000;

/**
 * Scrape-time gauges of the AI gateway: the breaker of each configured provider, and the HITL queue
 * (outputs held for review per facility/specialty queue, and the age of the oldest). The queue is
 * read from the database, at most every 15 s per process; every replica reports the same value, so
 * aggregate it with max().
 */
export function feedAiMetrics(
  metrics: Metrics,
  services: Pick<AiServices, 'breakers' | 'registry'>,
  db: Db,
  options: { cacheMs?: number } = {},
): () => void {
  const cacheMs = options.cacheMs ?? HITL_CACHE_MS;
  const removeBreakers = metrics.feed('provider_breaker_state', () =>
    [...services.registry.providers.keys()].map((provider) => ({
      labels: { provider },
      value: BREAKER_STATE[services.breakers.state(provider)],
    })),
  );
  let cached: { at: number; rows: Promise<Array<{ queue: string; depth: number; oldest: number }>> } | undefined;
  const pending = () => {
    if (!cached || Date.now() - cached.at >= cacheMs) {
      const rows = db.$queryRaw<Array<{ queue: string; depth: number; oldest: number }>>`
        SELECT COALESCE("facilityId", '-') || '/' || COALESCE("specialty", '-') AS queue,
               count(*)::int AS depth,
               EXTRACT(EPOCH FROM (now() - min("createdAt")))::float8 AS oldest
          FROM "AIProvenance" WHERE "reviewState" = 'pending'
         GROUP BY 1`;
      cached = { at: Date.now(), rows };
      rows.catch(() => (cached = undefined));
    }
    return cached.rows;
  };
  const removeDepth = metrics.feed('hitl_queue_depth', async () =>
    (await pending()).map((r) => ({ labels: { queue: r.queue }, value: r.depth })),
  );
  const removeAge = metrics.feed('hitl_queue_oldest_age_seconds', async () =>
    (await pending()).map((r) => ({ labels: { queue: r.queue }, value: Math.max(0, r.oldest) })),
  );
  return () => {
    removeBreakers();
    removeDepth();
    removeAge();
  };
}
