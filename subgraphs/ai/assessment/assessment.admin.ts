import { newId } from '../../../platform/ids.js';
import type { DataProtectionAssessment as AssessmentRow } from '../../../prisma/generated/client.js';
import { auditedChange, type ChangeStore } from '../audit/audited-change.js';
import type { AdminCaller } from '../admin-caller.js';
import { validateAssessment } from './assessment.logic.js';

export interface AssessmentAdmin {
  record(
    caller: AdminCaller,
    input: { residency: string; signedBy: string; signedAt: Date; documentHash: string },
  ): Promise<AssessmentRow>;
}

/** Signed data-protection impact assessments, recorded per tenant and residency (append-only). */
export function createAssessmentAdmin(deps: ChangeStore): AssessmentAdmin {
  return {
    record(caller, input) {
      const valid = validateAssessment(input, deps.clock.now());
      return auditedChange(deps, caller, {
        action: 'data_protection_assessment_recorded',
        change: (tx) =>
          tx.dataProtectionAssessment.create({ data: { id: newId('assessment'), tenantId: caller.tenantId, ...valid } }),
        target: (row) => ({ type: 'data_protection_assessment', id: row.id }),
        details: (row) => ({
          assessmentId: row.id,
          residency: row.residency,
          signedBy: row.signedBy,
          signedAt: row.signedAt.toISOString(),
          documentHash: row.documentHash,
        }),
      });
    },
  };
}
