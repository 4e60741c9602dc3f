import { badInput } from '../../../platform/errors/errors.js';
import { validateFeatureKey } from '../routing/routing.logic.js';

/**
 * The rollback switches (spec, "Rollback"): phase 2 disables moderation and HITL, phase 3 disables
 * multi-provider routing; `quota.enabled` is the per-tenant quota switch of phase 3. A flag row for
 * the feature wins over the tenant-wide `*` row.
 */
export const FLAG_NAMES = ['hitl.enabled', 'moderation.enabled', 'multiProvider.enabled', 'quota.enabled'] as const;
export type FlagName = (typeof FLAG_NAMES)[number];

export interface FlagRow {
  featureKey: string;
  flag: string;
  enabled: boolean;
}

/** The flag's value for the feature, or undefined when neither the feature nor `*` has a row. */
export function flagValue(rows: readonly FlagRow[], featureKey: string, flag: FlagName): boolean | undefined {
  return (
    rows.find((r) => r.flag === flag && r.featureKey === featureKey)?.enabled ??
    rows.find((r) => r.flag === flag && r.featureKey === '*')?.enabled
  );
}

/** Safety switches default to on: no row means enabled. */
export function resolveFlag(rows: readonly FlagRow[], featureKey: string, flag: FlagName): boolean {
  return flagValue(rows, featureKey, flag) ?? true;
}

export const MAX_FLAG_REASON = 500;

export function validateFlagInput(input: { featureKey: string; flag: string; enabled: boolean; reason?: string | null }): {
  featureKey: string;
  flag: FlagName;
  enabled: boolean;
  reason: string | null;
} {
  const featureKey = input.featureKey === '*' ? '*' : validateFeatureKey(input.featureKey);
  if (!(FLAG_NAMES as readonly string[]).includes(input.flag)) {
    throw badInput(`flag is one of ${FLAG_NAMES.join(', ')}`, { argument: 'flag', flags: [...FLAG_NAMES] });
  }
  const reason = input.reason?.trim() || null;
  if (reason && reason.length > MAX_FLAG_REASON)
    throw badInput(`reason is at most ${MAX_FLAG_REASON} characters`, { argument: 'reason' });
  return { featureKey, flag: input.flag as FlagName, enabled: input.enabled, reason };
}
