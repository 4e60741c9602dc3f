import type { Logger } from '../../../platform/observability/logger.js';
import type { FeatureFlag as FlagRow } from '../../../prisma/generated/client.js';
import { auditedChange, type ChangeStore } from '../audit/audited-change.js';
import type { AdminCaller } from '../admin-caller.js';
import { validateFlagInput } from './feature-flag.logic.js';

export interface FeatureFlagAdmin {
  set(
    caller: AdminCaller,
    input: { featureKey: string; flag: string; enabled: boolean; reason?: string | null },
  ): Promise<FlagRow>;
}

const SAFETY_FLAGS = new Set(['hitl.enabled', 'moderation.enabled']);

/**
 * The rollback switches. Each change writes the flag, a FeatureFlagChange row (the trail: who,
 * when, why) and an audit event in one transaction, then drops this process's snapshot cache so
 * the next request here sees it; other replicas see it within AI_CONFIG_CACHE_MS.
 */
export function createFeatureFlagAdmin(deps: ChangeStore & { onChange: () => void; logger: Logger }): FeatureFlagAdmin {
  return {
    async set(caller, input) {
      const valid = validateFlagInput(input);
      const { row, previous } = await auditedChange(deps, caller, {
        action: 'feature_flag_changed',
        change: async (tx) => {
          const key = { tenantId: caller.tenantId, featureKey: valid.featureKey, flag: valid.flag };
          const before = await tx.featureFlag.findUnique({ where: { tenantId_featureKey_flag: key } });
          const written = await tx.featureFlag.upsert({
            where: { tenantId_featureKey_flag: key },
            create: { ...key, enabled: valid.enabled, updatedBy: caller.subject },
            update: { enabled: valid.enabled, updatedBy: caller.subject },
          });
          await tx.featureFlagChange.create({
            data: { ...key, enabled: valid.enabled, changedBy: caller.subject, reason: valid.reason },
          });
          return { row: written, previous: before?.enabled ?? null };
        },
        target: () => ({ type: 'feature_flag', id: `${valid.featureKey}:${valid.flag}` }),
        details: (v) => ({
          featureKey: valid.featureKey,
          flag: valid.flag,
          enabled: valid.enabled,
          previous: v.previous,
          reason: valid.reason,
        }),
      });
      deps.onChange();
      // Switching a safety control off opens the compliance window of the phase-2 rollback.
      const log =
        SAFETY_FLAGS.has(valid.flag) && !valid.enabled ? deps.logger.warn.bind(deps.logger) : deps.logger.info.bind(deps.logger);
      log(
        {
          tenantId: caller.tenantId,
          featureKey: valid.featureKey,
          flag: valid.flag,
          enabled: valid.enabled,
          previous,
          by: caller.subject,
        },
        'feature flag changed',
      );
      return row;
    },
  };
}
