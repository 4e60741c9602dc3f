import type { Tx } from '../../../platform/db/database.js';
import { keyedTransaction } from '../../../platform/idempotency/effect-store.js';
import type { AIProvenance as ProvenanceRow, ReviewTask as TaskRow } from '../../../prisma/generated/client.js';
import { actorOf } from '../assist/assist.logic.js';
import { loadTenantProfile, type TenantProfile } from '../assist/assist.repo.js';
import { onClock } from '../audit/audited-change.js';
import type { DecisionResult, Reviewer, ReviewDeps } from './review.deps.js';
import {
  decisionContent,
  refusal,
  requireQueueMember,
  reviewedProvenance,
  type DecisionContent,
  type ReviewDecision,
} from './review.logic.js';
import { currentTask, loadTaskWithQueue, lockHeldOutput, markDecided } from './review.repo.js';
import { requireIndependentReviewer } from './separation.logic.js';

/** What a decision is about, once the reviewer may make it: the task and its output, locked. */
interface DecisionSubject {
  reviewer: Reviewer;
  task: TaskRow;
  provenance: ProvenanceRow;
  decision: ReviewDecision;
  decidedAt: Date;
  profile: TenantProfile;
}

/**
 * Approve, approve with edits, or reject a held output: the reviewer must be a member of the
 * task's queue and hold a live claim, and exactly one decision per task wins. The task, the
 * provenance row (released text or none), the ai.review.completed event and the audit event
 * commit together.
 */
export async function decide(
  deps: ReviewDeps,
  reviewer: Reviewer,
  taskId: string,
  decision: ReviewDecision,
  input: { text?: string; reason?: string | null },
): Promise<DecisionResult> {
  const profile = await loadTenantProfile(deps.db, reviewer.tenantId);
  const result = await keyedTransaction(
    deps.db,
    reviewer.effect,
    async (tx) => {
      const subject = await lockSubject(tx, reviewer, taskId, decision, deps.clock.now(), profile);
      const content = decisionContent(decision, subject.provenance.heldText, input);
      await winTask(tx, subject, content);
      const provenance = reviewedProvenance(decision, content, {
        taskId: subject.task.id,
        queueId: subject.task.queueId,
        decidedBy: reviewer.subject,
        decidedAt: subject.decidedAt,
        retentionHours: deps.retentionHours,
      });
      const recorded = await tx.aIProvenance.update({ where: { id: subject.provenance.id }, data: provenance });
      await deps.receipts.append(tx, [{ subject: recorded, event: 'review' }]);
      await announce(deps, tx, subject, provenance.review.releasedTextHash);
      return {
        task: await currentTask(tx, subject.task.id),
        provenanceId: subject.provenance.id,
        decision,
        releasedTextHash: provenance.review.releasedTextHash,
      };
    },
    onClock(deps.clock),
  );
  deps.logger.info({ reviewTaskId: taskId, provenanceId: result.provenanceId, decision }, 'review decided');
  return result;
}

/** The task (the reviewer a member of its queue, neither its requester nor its steerer) and its output, locked for the decision. */
async function lockSubject(
  tx: Tx,
  reviewer: Reviewer,
  taskId: string,
  decision: ReviewDecision,
  decidedAt: Date,
  profile: TenantProfile,
): Promise<DecisionSubject> {
  const { task, queue } = await loadTaskWithQueue(tx, reviewer.tenantId, taskId);
  requireQueueMember(reviewer.subject, queue);
  const provenance = await lockHeldOutput(tx, reviewer.tenantId, task.provenanceId);
  // Checked again at the decision: the claim may predate the change that barred the reviewer.
  requireIndependentReviewer(reviewer.subject, { requester: provenance.actorId, steeredBy: task.steeredBy });
  // The task was read before the output's lock: a concurrent decision may have won meanwhile
  // (and a rejection clears the held text). Read under the lock, the loser learns it was decided,
  // not that the output expired.
  const now = await currentTask(tx, task.id);
  if (now.state === 'decided' || now.state === 'expired') throw refusal(now, reviewer.subject, decidedAt, 'decide');
  return { reviewer, task: now, provenance, decision, decidedAt, profile };
}

/** Only the holder of a live claim moves the task out of 'claimed'; anyone else learns why not. */
async function winTask(tx: Tx, subject: DecisionSubject, content: DecisionContent): Promise<void> {
  const { reviewer, task, decidedAt } = subject;
  const won = await markDecided(tx, task, {
    decision: subject.decision,
    decidedBy: reviewer.subject,
    decidedAt,
    reason: content.reason,
    editDiff: content.editDiff,
  });
  if (!won) throw refusal(await currentTask(tx, task.id), reviewer.subject, decidedAt, 'decide');
}

/** The consumer's ai.review.completed event and the audit event: ids and hashes only, never text. */
async function announce(deps: ReviewDeps, tx: Tx, subject: DecisionSubject, releasedTextHash: string | null): Promise<void> {
  const { reviewer, task, provenance, decision, decidedAt, profile } = subject;
  const actor = actorOf(reviewer.subject);
  const dataResidency = provenance.residency ?? profile.dataResidency;
  await deps.events.emit(tx, {
    eventType: 'ai.review.completed',
    payload: {
      provenanceId: provenance.id,
      taskId: task.id,
      ...(task.queueId ? { queueId: task.queueId } : {}),
      featureKey: provenance.featureKey,
      decision,
      decidedBy: reviewer.subject,
      decidedAt: decidedAt.toISOString(),
      outputHash: provenance.outputHash!,
      ...(releasedTextHash ? { releasedTextHash } : {}),
      ...(provenance.subjectRef ? { subjectRef: provenance.subjectRef } : {}),
    },
    tenantId: reviewer.tenantId,
    // One output's review facts stay in order; outputs are independent of each other.
    partitionKey: provenance.id,
    actor,
    retentionClass: profile.retentionClass,
    dataResidency,
    traceparent: reviewer.traceparent,
    headers: { 'x-request-id': reviewer.requestId },
  });
  await deps.audit.record(tx, {
    action: 'review_decided',
    tenantId: reviewer.tenantId,
    actor,
    target: { type: 'review_task', id: task.id },
    details: {
      provenanceId: provenance.id,
      queueId: task.queueId,
      decision,
      releasedTextHash,
      outputHash: provenance.outputHash,
    },
    retentionClass: profile.retentionClass,
    dataResidency,
    traceparent: reviewer.traceparent,
    requestId: reviewer.requestId,
  });
}
