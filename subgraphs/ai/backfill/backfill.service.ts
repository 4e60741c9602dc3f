import { newId } from '../../../platform/ids.js';
import type { Logger } from '../../../platform/observability/logger.js';
import type { ReceiptWriter } from '../provenance/receipts/receipt.repo.js';
import { auditedChange, type ChangeStore } from '../audit/audited-change.js';
import type { AdminCaller } from '../admin-caller.js';
import { partitionBatch, type LegacyRowInput, type RowError } from './backfill.logic.js';

export interface BackfillResult {
  created: number;
  /** Valid rows whose legacy id the tenant already has (an earlier run): left as they are. */
  skipped: number;
  skippedLegacyIds: string[];
  errors: RowError[];
}

export interface BackfillService {
  backfill(caller: AdminCaller, rows: LegacyRowInput[]): Promise<BackfillResult>;
}

/**
 * Imports pre-gateway AI-assisted content as provenance rows with legacyBackfill = true. Idempotent
 * by (tenantId, legacyId): the unique index and ON CONFLICT DO NOTHING decide, not a read before
 * the write, so two concurrent runs of the same export cannot both insert a row.
 */
export function createBackfillService(deps: ChangeStore & { logger: Logger; receipts: ReceiptWriter }): BackfillService {
  return {
    async backfill(caller, rows) {
      const { valid, errors } = partitionBatch(rows, deps.clock.now());
      const inserted = await auditedChange(deps, caller, {
        action: 'legacy_provenance_backfilled',
        change: async (tx) => {
          if (valid.length === 0) return [];
          const created = await tx.aIProvenance.createManyAndReturn({
            data: valid.map(({ record }) => ({
              id: newId('provenance', record.createdAt.getTime()),
              tenantId: caller.tenantId,
              actorType: record.actorType,
              actorId: record.actorId,
              featureKey: record.featureKey,
              status: 'completed',
              mode: 'live',
              provider: record.provider,
              model: record.model,
              outputHash: record.outputHash,
              facilityId: record.facilityId,
              specialty: record.specialty,
              subjectRef: record.subjectRef,
              legacyBackfill: true,
              legacyId: record.legacyId,
              createdAt: record.createdAt,
              completedAt: record.createdAt,
            })),
            skipDuplicates: true,
          });
          // Each imported record gets its receipt, in the order the rows were created.
          await deps.receipts.append(
            tx,
            created.map((row) => ({ subject: row, event: 'backfill' as const })),
          );
          return created.map((row) => row.legacyId!);
        },
        target: () => ({ type: 'tenant', id: caller.tenantId }),
        details: (created) => ({
          rows: rows.length,
          created: created.length,
          skipped: valid.length - created.length,
          errors: errors.length,
        }),
      });
      const createdIds = new Set(inserted);
      const skippedLegacyIds = valid.map((v) => v.record.legacyId).filter((id) => !createdIds.has(id));
      deps.logger.info(
        {
          tenantId: caller.tenantId,
          rows: rows.length,
          created: inserted.length,
          skipped: skippedLegacyIds.length,
          errors: errors.length,
        },
        'legacy provenance backfilled',
      );
      return { created: inserted.length, skipped: skippedLegacyIds.length, skippedLegacyIds, errors };
    },
  };
}
