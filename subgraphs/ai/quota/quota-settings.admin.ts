import type { Tx } from '../../../platform/db/database.js';
import type { Logger } from '../../../platform/observability/logger.js';
import type { TenantSettings as SettingsRow } from '../../../prisma/generated/client.js';
import type { AdminCaller } from '../admin-caller.js';
import { DEFAULT_TENANT } from '../assist/assist.repo.js';
import { auditedChange, type ChangeStore } from '../audit/audited-change.js';
import { quotaEtag, requireQuotaIfMatch, validateQuotaSettings, type QuotaSettingsValue } from './quota-settings.logic.js';

/** A tenant's quota settings as read: the values in force (the defaults without a settings row) and their ETag. */
export interface QuotaSettingsView extends QuotaSettingsValue {
  etag: string;
  /** When they were last written; null while the tenant runs on the defaults. */
  updatedAt: Date | null;
}

/**
 * Per-tenant quota settings (scope ai.admin): enabled, requests per minute, tokens per day. Phase
 * 3's "quota.enabled per tenant" with its amounts, which operators used to write into Postgres.
 */
export interface QuotaSettingsAdmin {
  read(tenantId: string): Promise<QuotaSettingsView>;
  /** Replaces the caller tenant's settings; `ifMatch` must hold the current ETag (or `*`). */
  set(caller: AdminCaller, input: QuotaSettingsValue, ifMatch: string | undefined): Promise<QuotaSettingsView>;
}

function viewOf(row: SettingsRow | null): QuotaSettingsView {
  const value: QuotaSettingsValue = row
    ? { enabled: row.quotaEnabled, requestsPerMinute: row.requestsPerMinute, tokensPerDay: row.tokensPerDay }
    : DEFAULT_TENANT.quota;
  return { ...value, etag: quotaEtag(value), updatedAt: row?.updatedAt ?? null };
}

const limitsOf = (view: QuotaSettingsView) => ({
  enabled: view.enabled,
  requestsPerMinute: view.requestsPerMinute,
  tokensPerDay: view.tokensPerDay,
});

/** Read, check If-Match and write under one lock per tenant, so two concurrent writers cannot both pass the check. */
async function replaceSettings(tx: Tx, tenantId: string, value: QuotaSettingsValue, ifMatch: string | undefined) {
  await tx.$executeRawUnsafe('SELECT pg_advisory_xact_lock(hashtext($1))', `ai.quota_settings:${tenantId}`);
  const previous = viewOf(await tx.tenantSettings.findUnique({ where: { tenantId } }));
  requireQuotaIfMatch(ifMatch, previous.etag);
  const columns = { quotaEnabled: value.enabled, requestsPerMinute: value.requestsPerMinute, tokensPerDay: value.tokensPerDay };
  const row = await tx.tenantSettings.upsert({ where: { tenantId }, create: { tenantId, ...columns }, update: columns });
  return { previous, current: viewOf(row) };
}

export function createQuotaSettingsAdmin(deps: ChangeStore & { onChange: () => void; logger: Logger }): QuotaSettingsAdmin {
  return {
    async read(tenantId) {
      return viewOf(await deps.db.tenantSettings.findUnique({ where: { tenantId } }));
    },
    async set(caller, input, ifMatch) {
      const value = validateQuotaSettings(input);
      const { current } = await auditedChange(deps, caller, {
        action: 'quota_settings_changed',
        change: (tx) => replaceSettings(tx, caller.tenantId, value, ifMatch),
        target: () => ({ type: 'tenant_quota', id: caller.tenantId }),
        details: (change) => ({ ...limitsOf(change.current), previous: limitsOf(change.previous) }),
      });
      deps.onChange();
      deps.logger.info({ tenantId: caller.tenantId, ...limitsOf(current) }, 'quota settings changed');
      return current;
    },
  };
}
