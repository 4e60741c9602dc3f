import type { Prisma } from '../../../platform/db/database.js';
import { newId } from '../../../platform/ids.js';
import type { ReviewQueue as QueueRow, ReviewTask as TaskRow } from '../../../prisma/generated/client.js';
import { auditedChange } from '../audit/audited-change.js';
import type { AdminCaller } from '../admin-caller.js';
import { validateFeatureKey } from '../routing/routing.logic.js';
import { claim, releaseClaim, taskFor, tasksFor, type TaskFilter } from './review.claims.js';
import { decide } from './review.decision.js';
import { createQueue, routeTask, updateQueue } from './review.queues.js';
import type { DecisionResult, Reviewer, ReviewDeps } from './review.deps.js';
import { validateHitlMode } from './review.logic.js';
import type { QueueInput } from './review-queue.logic.js';

export type { DecisionResult, Reviewer, ReviewDeps } from './review.deps.js';
export { HITL_MODES } from './review.logic.js';

/** Human review (HITL): queues, tasks, claims and decisions, and the tenant's HITL policy. */
export interface ReviewService {
  createQueue(caller: AdminCaller, input: QueueInput & { name: string; members: string[] }): Promise<QueueRow>;
  updateQueue(caller: AdminCaller, queueId: string, input: QueueInput): Promise<QueueRow>;
  queues(tenantId: string): Promise<QueueRow[]>;
  routeTask(caller: AdminCaller, taskId: string, queueId: string): Promise<TaskRow>;
  tasks(reviewer: Reviewer, filter: TaskFilter): Promise<TaskRow[]>;
  /** The task, and the held output only while the caller holds a live claim on it. */
  task(reviewer: Reviewer, taskId: string): Promise<{ task: TaskRow; text: string | null } | null>;
  claim(reviewer: Reviewer, taskId: string): Promise<TaskRow>;
  releaseClaim(reviewer: Reviewer, taskId: string): Promise<TaskRow>;
  approve(reviewer: Reviewer, taskId: string): Promise<DecisionResult>;
  approveWithEdits(reviewer: Reviewer, taskId: string, text: string): Promise<DecisionResult>;
  reject(reviewer: Reviewer, taskId: string, reason: string): Promise<DecisionResult>;
  setPolicy(caller: AdminCaller, featureKey: string, mode: string): Promise<Prisma.HITLPolicyGetPayload<object>>;
}

export function createReviewService(deps: ReviewDeps): ReviewService {
  return {
    createQueue: (caller, input) => createQueue(deps, caller, input),
    updateQueue: (caller, queueId, input) => updateQueue(deps, caller, queueId, input),
    queues: (tenantId) => deps.db.reviewQueue.findMany({ where: { tenantId }, orderBy: { createdAt: 'asc' } }),
    routeTask: (caller, taskId, queueId) => routeTask(deps, caller, taskId, queueId),
    tasks: (reviewer, filter) => tasksFor(deps, reviewer, filter),
    task: (reviewer, taskId) => taskFor(deps, reviewer, taskId),
    claim: (reviewer, taskId) => claim(deps, reviewer, taskId),
    releaseClaim: (reviewer, taskId) => releaseClaim(deps, reviewer, taskId),
    approve: (reviewer, taskId) => decide(deps, reviewer, taskId, 'approved', {}),
    approveWithEdits: (reviewer, taskId, text) => decide(deps, reviewer, taskId, 'edited', { text }),
    reject: (reviewer, taskId, reason) => decide(deps, reviewer, taskId, 'rejected', { reason }),
    setPolicy: (caller, featureKey, mode) => setPolicy(deps, caller, featureKey, mode),
  };
}

/** The tenant's HITL policy of a feature (it overrides the global one), effective on the next request here. */
async function setPolicy(deps: ReviewDeps, caller: AdminCaller, featureKey: string, mode: string) {
  validateFeatureKey(featureKey);
  validateHitlMode(mode);
  const policy = await auditedChange(deps, caller, {
    action: 'hitl_policy_set',
    change: (tx) =>
      tx.hITLPolicy.upsert({
        where: { tenantId_featureKey: { tenantId: caller.tenantId, featureKey } },
        create: { id: newId('hitlPolicy'), tenantId: caller.tenantId, featureKey, mode, updatedBy: caller.subject },
        update: { mode, updatedBy: caller.subject },
      }),
    target: (row) => ({ type: 'hitl_policy', id: row.id }),
    details: (row) => ({ policyId: row.id, featureKey, mode }),
  });
  deps.onChange();
  return policy;
}
