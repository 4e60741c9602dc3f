import { canonicalHash } from '../../../platform/text/canonical-json.js';
import { AppError, badInput } from '../../../platform/errors/errors.js';
import type { QuotaLimits } from './quota.logic.js';

/**
 * A tenant's quota settings as an administrator writes them (PUT semantics: every member given),
 * and their entity tag for optimistic concurrency: two operators changing the quota at once must
 * not silently overwrite each other.
 */
export interface QuotaSettingsValue extends QuotaLimits {
  enabled: boolean;
}

export const MAX_REQUESTS_PER_MINUTE = 1_000_000;
/** The column is a 32-bit integer; two billion tokens a day is far above any tenant's budget. */
export const MAX_TOKENS_PER_DAY = 2_000_000_000;

function boundedCount(value: number, argument: string, max: number): number {
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw badInput(`${argument} is an integer from 0 (no limit) to ${max}`, { argument });
  }
  return value;
}

export function validateQuotaSettings(input: QuotaSettingsValue): QuotaSettingsValue {
  return {
    enabled: input.enabled,
    requestsPerMinute: boundedCount(input.requestsPerMinute, 'requestsPerMinute', MAX_REQUESTS_PER_MINUTE),
    tokensPerDay: boundedCount(input.tokensPerDay, 'tokensPerDay', MAX_TOKENS_PER_DAY),
  };
}

/** A strong entity tag over everything a reader of the settings sees. */
export function quotaEtag(settings: QuotaSettingsValue): string {
  const { enabled, requestsPerMinute, tokensPerDay } = settings;
  return `"${canonicalHash({ enabled, requestsPerMinute, tokensPerDay }).slice(0, 32)}"`;
}

/**
 * If-Match on a quota write (RFC 9110 §13.1.1, strong comparison): required (428), and `*` or a
 * list holding the current tag (412 otherwise, naming the current tag). A bare value without
 * quotes is read as the tag, as GraphQL clients often send it.
 */
export function requireQuotaIfMatch(header: string | undefined, currentEtag: string): void {
  const value = header?.trim();
  if (!value) {
    throw new AppError('request.precondition_required', 'Changing the quota needs If-Match with the ETag of quotaSettings', {
      status: 428,
    });
  }
  if (value === '*') return;
  const opaque = currentEtag.slice(1, -1);
  const tags = value.split(',').map((tag) => tag.trim());
  if (tags.some((tag) => tag === currentEtag || tag === opaque)) return;
  throw new AppError('request.precondition_failed', 'If-Match does not match the current quota settings; read them again', {
    status: 412,
    details: { etag: currentEtag },
  });
}
