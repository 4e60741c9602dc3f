import type { Tx } from '../../../platform/db/database.js';
import { notFound, AppError } from '../../../platform/errors/errors.js';
import { newId } from '../../../platform/ids.js';
import type { ReviewQueue as QueueRow, ReviewTask as TaskRow } from '../../../prisma/generated/client.js';
import { auditedChange } from '../audit/audited-change.js';
import type { AdminCaller } from '../admin-caller.js';
import type { ReviewDeps } from './review.deps.js';
import { routingAfterUpdate, validateQueueInput, type QueueInput } from './review-queue.logic.js';
import {
  barSteeringAdmin,
  currentTask,
  lockQueues,
  requireQueueNameFree,
  requireQueueRoutingFree,
  rerouteOpenTasks,
} from './review.repo.js';
import { queueChangeSteers } from './separation.logic.js';

/**
 * Reviewer queues (scope ai.admin): created and changed under the tenant's queue lock, refusing a
 * second queue with the same name or routing; open tasks follow the new routing at once. A change
 * of members or routing bars its author from the waiting tasks it steered (separation.logic.ts).
 */

type QueueChange = { queue: QueueRow; moved: number; barred: number };

const queueDetails = (v: QueueChange) => ({
  queueId: v.queue.id,
  name: v.queue.name,
  facilityId: v.queue.facilityId,
  specialty: v.queue.specialty,
  members: v.queue.members.length,
  tasksRerouted: v.moved,
  waitingTasksBarredForAuthor: v.barred,
});

/** Open tasks follow the queue's new routing; the author of a steering change is barred from what it steered. */
async function settleTasks(tx: Tx, caller: AdminCaller, queue: QueueRow, steers: boolean): Promise<QueueChange> {
  const moved = await rerouteOpenTasks(tx, caller.tenantId);
  const barred = steers ? await barSteeringAdmin(tx, caller.tenantId, caller.subject, { queueId: queue.id, taskIds: moved }) : 0;
  return { queue, moved: moved.length, barred };
}

export async function createQueue(
  deps: ReviewDeps,
  caller: AdminCaller,
  input: QueueInput & { name: string; members: string[] },
): Promise<QueueRow> {
  const valid = validateQueueInput(input);
  const routing = { facilityId: valid.facilityId ?? null, specialty: valid.specialty ?? null };
  const { queue } = await auditedChange(deps, caller, {
    action: 'review_queue_created',
    change: async (tx): Promise<QueueChange> => {
      await lockQueues(tx, caller.tenantId);
      await requireQueueNameFree(tx, caller.tenantId, valid.name!);
      await requireQueueRoutingFree(tx, caller.tenantId, routing);
      const created = await tx.reviewQueue.create({
        data: {
          id: newId('reviewQueue'),
          tenantId: caller.tenantId,
          name: valid.name!,
          ...routing,
          members: valid.members ?? [],
        },
      });
      return settleTasks(tx, caller, created, true);
    },
    target: (v) => ({ type: 'review_queue', id: v.queue.id }),
    details: queueDetails,
  });
  return queue;
}

export async function updateQueue(deps: ReviewDeps, caller: AdminCaller, queueId: string, input: QueueInput): Promise<QueueRow> {
  const valid = validateQueueInput(input);
  const { queue } = await auditedChange(deps, caller, {
    action: 'review_queue_updated',
    change: async (tx): Promise<QueueChange> => {
      await lockQueues(tx, caller.tenantId);
      const current = await tx.reviewQueue.findFirst({ where: { id: queueId, tenantId: caller.tenantId } });
      if (!current) throw notFound('Review queue');
      const routing = routingAfterUpdate(valid, current);
      if (valid.name !== undefined) await requireQueueNameFree(tx, caller.tenantId, valid.name, queueId);
      await requireQueueRoutingFree(tx, caller.tenantId, routing, queueId);
      const updated = await tx.reviewQueue.update({
        where: { id: queueId },
        data: {
          ...(valid.name !== undefined ? { name: valid.name } : {}),
          ...routing,
          ...(valid.members ? { members: valid.members } : {}),
        },
      });
      return settleTasks(tx, caller, updated, queueChangeSteers(valid));
    },
    target: (v) => ({ type: 'review_queue', id: v.queue.id }),
    details: queueDetails,
  });
  return queue;
}

/** Moves an open task to a queue, e.g. one no queue matched. */
export function routeTask(deps: ReviewDeps, caller: AdminCaller, taskId: string, queueId: string): Promise<TaskRow> {
  return auditedChange(deps, caller, {
    action: 'review_task_routed',
    change: async (tx) => {
      const queue = await tx.reviewQueue.findFirst({ where: { id: queueId, tenantId: caller.tenantId }, select: { id: true } });
      if (!queue) throw notFound('Review queue');
      const moved = await tx.reviewTask.updateMany({
        where: { id: taskId, tenantId: caller.tenantId, state: 'open' },
        data: { queueId },
      });
      const task = await tx.reviewTask.findFirst({ where: { id: taskId, tenantId: caller.tenantId } });
      if (!task) throw notFound('Review task');
      if (moved.count !== 1) {
        throw new AppError('review.not_open', 'Only an open (unclaimed) task can be moved to another queue', { status: 409 });
      }
      // Routing one waiting task by hand is the plainest way to choose who reviews it.
      await barSteeringAdmin(tx, caller.tenantId, caller.subject, { taskIds: [task.id] });
      return currentTask(tx, task.id);
    },
    target: (task) => ({ type: 'review_task', id: task.id }),
    details: (task) => ({ taskId: task.id, queueId: task.queueId, provenanceId: task.provenanceId }),
  });
}
