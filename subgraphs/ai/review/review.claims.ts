import { keyedTransaction } from '../../../platform/idempotency/effect-store.js';
import type { ReviewTask as TaskRow } from '../../../prisma/generated/client.js';
import { onClock } from '../audit/audited-change.js';
import type { Reviewer, ReviewDeps } from './review.deps.js';
import { claimExpiry, holdsLiveClaim, refusal, requireQueueMember, taskQueueScope } from './review.logic.js';
import {
  currentTask,
  listTasks,
  loadTaskWithQueue,
  markClaimed,
  markReleased,
  memberQueueIds,
  requesterOf,
} from './review.repo.js';
import { requireIndependentReviewer } from './separation.logic.js';

/** What reviewers see of the tasks, and their claims on them. */

export type TaskFilter = { queueId?: string | null; state?: string | null; unrouted?: boolean; first: number };

/** Tasks of the queues the reviewer is a member of (admins: every queue), oldest first. */
export async function tasksFor(deps: ReviewDeps, reviewer: Reviewer, filter: TaskFilter): Promise<TaskRow[]> {
  const memberOf = reviewer.canAdminister ? null : await memberQueueIds(deps.db, reviewer.tenantId, reviewer.subject);
  const scope = taskQueueScope(filter, memberOf);
  if (scope.kind === 'none') return [];
  return listTasks(deps.db, reviewer.tenantId, scope, filter);
}

/** The task, and its held output only while the reviewer holds a live claim on it. */
export async function taskFor(
  deps: ReviewDeps,
  reviewer: Reviewer,
  taskId: string,
): Promise<{ task: TaskRow; text: string | null } | null> {
  const task = await deps.db.reviewTask.findFirst({ where: { id: taskId, tenantId: reviewer.tenantId } });
  if (!task) return null;
  if (!reviewer.canAdminister) {
    const queue = task.queueId ? await deps.db.reviewQueue.findFirst({ where: { id: task.queueId } }) : null;
    if (!queue?.members.includes(reviewer.subject)) return null;
  }
  // The output is shown to the one reviewer working on it, not to every member or admin.
  if (!holdsLiveClaim(task, reviewer.subject, deps.clock.now())) return { task, text: null };
  const provenance = await deps.db.aIProvenance.findFirst({
    where: { id: task.provenanceId, tenantId: reviewer.tenantId },
    select: { heldText: true },
  });
  return { task, text: provenance?.heldText ?? null };
}

/**
 * Claims a task for claimMinutes; claiming one's own claim renews it, an expired claim may be taken
 * over. Its requester, and an admin who steered it while it waited, may not claim it.
 */
export function claim(deps: ReviewDeps, reviewer: Reviewer, taskId: string): Promise<TaskRow> {
  return keyedTransaction(
    deps.db,
    reviewer.effect,
    async (tx) => {
      const now = deps.clock.now();
      const { task, queue } = await loadTaskWithQueue(tx, reviewer.tenantId, taskId);
      requireQueueMember(reviewer.subject, queue);
      const requester = await requesterOf(tx, reviewer.tenantId, task.provenanceId);
      requireIndependentReviewer(reviewer.subject, { requester, steeredBy: task.steeredBy });
      const won = await markClaimed(tx, task, {
        subject: reviewer.subject,
        at: now,
        expiresAt: claimExpiry(now, deps.claimMinutes),
      });
      const current = await currentTask(tx, task.id);
      if (!won) throw refusal(current, reviewer.subject, now, 'claim');
      return current;
    },
    onClock(deps.clock),
  );
}

/** Gives a claimed task back to its queue. */
export function releaseClaim(deps: ReviewDeps, reviewer: Reviewer, taskId: string): Promise<TaskRow> {
  return keyedTransaction(
    deps.db,
    reviewer.effect,
    async (tx) => {
      const now = deps.clock.now();
      const { task } = await loadTaskWithQueue(tx, reviewer.tenantId, taskId);
      const released = await markReleased(tx, task.id, reviewer.subject);
      const current = await currentTask(tx, task.id);
      if (!released) throw refusal(current, reviewer.subject, now, 'release');
      return current;
    },
    onClock(deps.clock),
  );
}
