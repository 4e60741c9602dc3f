import type { Tx } from '../../../platform/db/database.js';
import { newId } from '../../../platform/ids.js';
import { selectQueue } from './review.logic.js';

/**
 * Opens the review task of an output held for review, routed to the tenant's most specific queue
 * for its facility and specialty. Runs in the transaction that writes the provenance row, so a held
 * output always has exactly one task. Returns the task id and its queue (null when none matches).
 */
export async function openReviewTask(
  tx: Tx,
  input: {
    tenantId: string;
    provenanceId: string;
    featureKey: string;
    facilityId: string | null;
    specialty: string | null;
    createdAt: Date;
  },
): Promise<{ taskId: string; queueId: string | null }> {
  const queues = await tx.reviewQueue.findMany({
    where: { tenantId: input.tenantId },
    select: { id: true, facilityId: true, specialty: true },
  });
  const queue = selectQueue(queues, input);
  const taskId = newId('reviewTask', input.createdAt.getTime());
  await tx.reviewTask.create({
    data: {
      id: taskId,
      tenantId: input.tenantId,
      provenanceId: input.provenanceId,
      queueId: queue?.id ?? null,
      featureKey: input.featureKey,
      facilityId: input.facilityId,
      specialty: input.specialty,
      state: 'open',
      createdAt: input.createdAt,
    },
  });
  return { taskId, queueId: queue?.id ?? null };
}
