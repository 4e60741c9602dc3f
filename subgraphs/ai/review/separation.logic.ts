import { AppError } from '../../../platform/errors/errors.js';
import type { QueueInput } from './review-queue.logic.js';

/**
 * Separation of duties in human review: the one who asked for an output never decides it, and
 * neither does an admin who, while the output waited, changed who would review it.
 *
 * - The requester (the token subject of the assist whose output is held) may neither claim nor
 *   decide its task, whatever queues it is a member of: an admin holding ai.assist, ai.admin and
 *   ai.review could otherwise add itself to a queue and approve its own output.
 * - An admin whose change steered a pending task — a queue created, or its members or routing
 *   changed, so that the task sits in (or moved because of) that queue, or the task routed by hand —
 *   is barred from that task. Without it an admin picks which reviewer sees one particular waiting
 *   output (itself, in a colleague's interest) and four eyes are two in all but name. Standing
 *   membership is unaffected: tasks that arrive after the change are the admin's to review like
 *   anyone's, and a rename steers nothing.
 */

export type SelfReviewReason = 'requester' | 'steered_while_pending';

export function selfReviewReason(
  subject: string,
  task: { requester: string; steeredBy: readonly string[] },
): SelfReviewReason | null {
  if (task.requester === subject) return 'requester';
  if (task.steeredBy.includes(subject)) return 'steered_while_pending';
  return null;
}

const MESSAGES: Record<SelfReviewReason, string> = {
  requester: 'You requested this output; another reviewer decides it',
  steered_while_pending:
    'You changed the queue or routing of this task while it was waiting for review; another reviewer decides it',
};

/** 403 review.self_review_forbidden when `subject` may not claim or decide the task. */
export function requireIndependentReviewer(subject: string, task: { requester: string; steeredBy: readonly string[] }): void {
  const reason = selfReviewReason(subject, task);
  if (reason === null) return;
  throw new AppError('review.self_review_forbidden', MESSAGES[reason], { status: 403, details: { reason } });
}

/** A queue change that decides who reviews waiting tasks: its members or its routing, not its name. */
export function queueChangeSteers(change: QueueInput): boolean {
  return change.members !== undefined || change.facilityId !== undefined || change.specialty !== undefined;
}
