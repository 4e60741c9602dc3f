import { notFound } from '../../../platform/errors/errors.js';
import type { ConsumerCutover as CutoverRow } from '../../../prisma/generated/client.js';
import { auditedChange, type ChangeStore } from '../audit/audited-change.js';
import type { AdminCaller } from '../admin-caller.js';
import { requireRetirable, validateCutover } from './key-retention.logic.js';

export interface KeyRetentionAdmin {
  /** PROVIDER_KEY_RETENTION_DAYS. */
  readonly retentionDays: number;
  recordCutover(caller: AdminCaller, input: { serviceName: string; provider: string; cutoverAt: Date }): Promise<CutoverRow>;
  list(tenantId: string): Promise<CutoverRow[]>;
  retire(caller: AdminCaller, input: { serviceName: string; provider: string }): Promise<CutoverRow>;
}

/**
 * Consumer cutovers and the retirement of their direct provider keys (rollback of phase 1). This
 * records the facts and enforces the window; deleting the key from the vault or the consumer's
 * environment is done by its owners once `retireProviderKey` has succeeded.
 */
export function createKeyRetentionAdmin(deps: ChangeStore & { retentionDays: number }): KeyRetentionAdmin {
  const store: ChangeStore = deps;
  return {
    retentionDays: deps.retentionDays,
    recordCutover(caller, input) {
      const valid = validateCutover(input, deps.clock.now());
      return auditedChange(store, caller, {
        action: 'consumer_cutover_recorded',
        // A second cutover of the same service and provider (after a rollback) restarts the window.
        change: (tx) =>
          tx.consumerCutover.upsert({
            where: {
              tenantId_serviceName_provider: {
                tenantId: caller.tenantId,
                serviceName: valid.serviceName,
                provider: valid.provider,
              },
            },
            create: { tenantId: caller.tenantId, ...valid },
            update: { cutoverAt: valid.cutoverAt, retiredAt: null },
          }),
        target: (row) => ({ type: 'consumer_cutover', id: `${row.serviceName}:${row.provider}` }),
        details: (row) => ({ serviceName: row.serviceName, provider: row.provider, cutoverAt: row.cutoverAt.toISOString() }),
      });
    },

    list(tenantId) {
      return deps.db.consumerCutover.findMany({ where: { tenantId }, orderBy: [{ cutoverAt: 'asc' }, { serviceName: 'asc' }] });
    },

    retire(caller, input) {
      return auditedChange(store, caller, {
        action: 'provider_key_retired',
        change: async (tx) => {
          const key = { tenantId: caller.tenantId, serviceName: input.serviceName, provider: input.provider };
          const row = await tx.consumerCutover.findUnique({ where: { tenantId_serviceName_provider: key } });
          if (!row) throw notFound('Consumer cutover');
          const now = deps.clock.now();
          requireRetirable(row, deps.retentionDays, now);
          // Conditional on the row as read: a concurrent retirement or a new cutover wins over this one.
          const done = await tx.consumerCutover.updateMany({
            where: { ...key, retiredAt: null, cutoverAt: row.cutoverAt },
            data: { retiredAt: now },
          });
          const after = await tx.consumerCutover.findUniqueOrThrow({ where: { tenantId_serviceName_provider: key } });
          if (done.count !== 1) requireRetirable(after, deps.retentionDays, now);
          return after;
        },
        target: (row) => ({ type: 'consumer_cutover', id: `${row.serviceName}:${row.provider}` }),
        details: (row) => ({
          serviceName: row.serviceName,
          provider: row.provider,
          cutoverAt: row.cutoverAt.toISOString(),
          retiredAt: row.retiredAt?.toISOString(),
        }),
      });
    },
  };
}
