import { keyedTransaction } from '../../../platform/idempotency/effect-store.js';
import type { EffectClaim } from '../../../platform/idempotency/effect.logic.js';
import type { Clock } from '../../../platform/clock.js';
import type { Db } from '../../../platform/db/database.js';
import { Prisma } from '../../../platform/db/database.js';
import type { Logger } from '../../../platform/observability/logger.js';
import { onClock } from '../audit/audited-change.js';
import { validateFeatureKey } from '../routing/routing.logic.js';
import { shadowParity, validateLatencySamples, validateWindow, type ParityResult } from './shadow.logic.js';

export interface ShadowService {
  recordLegacySamples(
    caller: { tenantId: string; subject: string; effect?: EffectClaim },
    featureKey: string,
    samples: number[],
  ): Promise<number>;
  parity(
    tenantId: string,
    featureKey: string,
    from: Date,
    to: Date,
  ): Promise<ParityResult & { sampled: boolean; maxRatio: number }>;
}

/**
 * Above this many latencies per side a uniform random sample of about this size is used: the
 * percentiles of a week of traffic do not need every row in memory, and a random sample keeps them
 * unbiased.
 */
export const MAX_PARITY_SAMPLES = 200_000;

async function latencies(
  db: Db,
  count: number,
  query: (fraction: number | null) => Prisma.Sql,
): Promise<{ values: number[]; sampled: boolean }> {
  const fraction = count > MAX_PARITY_SAMPLES ? MAX_PARITY_SAMPLES / count : null;
  const rows = await db.$queryRaw<Array<{ ms: number }>>(query(fraction));
  return { values: rows.map((r) => Number(r.ms)), sampled: fraction !== null };
}

export function createShadowService(deps: {
  db: Db;
  clock: Clock;
  maxRatio: number;
  minSamples: number;
  logger: Logger;
}): ShadowService {
  const { db } = deps;
  return {
    async recordLegacySamples(caller, featureKey, samples) {
      const valid = validateLatencySamples(featureKey, samples);
      const recordedAt = deps.clock.now();
      const { count } = await keyedTransaction(
        db,
        caller.effect,
        (tx) =>
          tx.shadowLatencySample.createMany({
            data: valid.samples.map((latencyMs) => ({
              tenantId: caller.tenantId,
              featureKey: valid.featureKey,
              source: 'legacy',
              latencyMs,
              recordedAt,
            })),
          }),
        onClock(deps.clock),
      );
      deps.logger.info({ tenantId: caller.tenantId, featureKey, count, by: caller.subject }, 'legacy latency samples recorded');
      return count;
    },

    async parity(tenantId, featureKey, from, to) {
      validateFeatureKey(featureKey);
      validateWindow(from, to);
      // The gateway side: completed shadow-mode assist calls, whole time in the gateway.
      const gatewayWhere = Prisma.sql`"tenantId" = ${tenantId} AND "featureKey" = ${featureKey} AND "mode" = 'shadow'
        AND "status" = 'completed' AND "latencyMs" IS NOT NULL AND "createdAt" >= ${from} AND "createdAt" < ${to}`;
      const legacyWhere = Prisma.sql`"tenantId" = ${tenantId} AND "featureKey" = ${featureKey} AND "source" = 'legacy'
        AND "recordedAt" >= ${from} AND "recordedAt" < ${to}`;
      const [[gatewayCount], [legacyCount]] = [
        await db.$queryRaw<Array<{ n: number }>>`SELECT count(*)::int AS n FROM "AIProvenance" WHERE ${gatewayWhere}`,
        await db.$queryRaw<Array<{ n: number }>>`SELECT count(*)::int AS n FROM "ShadowLatencySample" WHERE ${legacyWhere}`,
      ];
      const sample = (fraction: number | null) => (fraction === null ? Prisma.empty : Prisma.sql` AND random() < ${fraction}`);
      const gateway = await latencies(
        db,
        gatewayCount.n,
        (f) => Prisma.sql`SELECT "latencyMs" AS ms FROM "AIProvenance" WHERE ${gatewayWhere}${sample(f)}`,
      );
      const legacy = await latencies(
        db,
        legacyCount.n,
        (f) => Prisma.sql`SELECT "latencyMs" AS ms FROM "ShadowLatencySample" WHERE ${legacyWhere}${sample(f)}`,
      );
      const result = shadowParity({
        gateway: gateway.values,
        legacy: legacy.values,
        maxRatio: deps.maxRatio,
        minSamples: deps.minSamples,
      });
      // Counts are of the window, not of the sample the percentiles were taken from.
      return {
        ...result,
        sampleCounts: { gateway: gatewayCount.n, legacy: legacyCount.n },
        sampled: gateway.sampled || legacy.sampled,
        maxRatio: deps.maxRatio,
      };
    },
  };
}
