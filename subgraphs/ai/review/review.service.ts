import { keyedTransaction } from '../../../platform/idempotency/effect-store.js';
import type { Db, Prisma, Tx } from '../../../platform/db/database.js';
import { AppError, notFound } from '../../../platform/errors.js';
import { newId } from '../../../platform/ids.js';
import type { Logger } from '../../../platform/logger.js';
import type { EventProducer } from '../../../events/outbox.js';
import type { ReviewQueue as QueueRow, ReviewTask as TaskRow } from '../../../prisma/generated/client.js';
import { actorOf } from '../assist/assist.logic.js';
import { loadTenantProfile } from '../assist/assist.repo.js';
import type { AuditSink } from '../audit/audit.sink.js';
import { auditedChange } from '../audit/audited-change.js';
import { outputHash } from '../provenance/provenance.logic.js';
import type { AdminCaller } from '../routing/routing-rule.admin.js';
import { validateFeatureKey } from '../routing/routing.logic.js';
import {
  lineDiff,
  provenanceAfterDecision,
  refusal,
  selectQueue,
  validateEditedText,
  validateQueueInput,
  validateReason,
  type QueueInput,
  type ReviewDecision,
} from './review.logic.js';

/** A reviewer acting on tasks; `canAdminister` (scope ai.admin) sees every queue of the tenant. */
export interface Reviewer extends AdminCaller {
  canAdminister: boolean;
}

export interface DecisionResult {
  task: TaskRow;
  provenanceId: string;
  decision: ReviewDecision;
  releasedTextHash: string | null;
}

export interface ReviewService {
  createQueue(caller: AdminCaller, input: QueueInput & { name: string; members: string[] }): Promise<QueueRow>;
  updateQueue(caller: AdminCaller, queueId: string, input: QueueInput): Promise<QueueRow>;
  queues(tenantId: string): Promise<QueueRow[]>;
  routeTask(caller: AdminCaller, taskId: string, queueId: string): Promise<TaskRow>;
  tasks(
    reviewer: Reviewer,
    filter: { queueId?: string | null; state?: string | null; unrouted?: boolean; first: number },
  ): Promise<TaskRow[]>;
  /** The task, and the held output only while the caller holds a live claim on it. */
  task(reviewer: Reviewer, taskId: string): Promise<{ task: TaskRow; text: string | null } | null>;
  claim(reviewer: Reviewer, taskId: string): Promise<TaskRow>;
  releaseClaim(reviewer: Reviewer, taskId: string): Promise<TaskRow>;
  approve(reviewer: Reviewer, taskId: string): Promise<DecisionResult>;
  approveWithEdits(reviewer: Reviewer, taskId: string, text: string): Promise<DecisionResult>;
  reject(reviewer: Reviewer, taskId: string, reason: string): Promise<DecisionResult>;
  setPolicy(caller: AdminCaller, featureKey: string, mode: string): Promise<Prisma.HITLPolicyGetPayload<object>>;
}

export const HITL_MODES = ['required', 'optional'] as const;

/** Serialises queue writes of one tenant, so two queues can never end up with the same routing. */
async function lockQueues(tx: Tx, tenantId: string): Promise<void> {
  await tx.$executeRawUnsafe('SELECT pg_advisory_xact_lock(hashtext($1))', `ai.review_queues:${tenantId}`);
}

/**
 * Open (unclaimed) tasks follow the queue routing as it is now: after a queue is created or its
 * routing changes, each goes to its most specific queue, and unrouted ones are picked up.
 */
async function rerouteOpenTasks(tx: Tx, tenantId: string): Promise<number> {
  const queues = await tx.reviewQueue.findMany({ where: { tenantId }, select: { id: true, facilityId: true, specialty: true } });
  const open = await tx.reviewTask.findMany({
    where: { tenantId, state: 'open' },
    select: { id: true, queueId: true, facilityId: true, specialty: true },
  });
  const moves = new Map<string, string[]>();
  for (const task of open) {
    const target = selectQueue(queues, task)?.id ?? null;
    if (target === task.queueId || target === null) continue;
    moves.set(target, [...(moves.get(target) ?? []), task.id]);
  }
  let moved = 0;
  for (const [queueId, ids] of moves) {
    moved += (await tx.reviewTask.updateMany({ where: { id: { in: ids }, state: 'open' }, data: { queueId } })).count;
  }
  return moved;
}

export function createReviewService(deps: {
  db: Db;
  audit: AuditSink;
  events: EventProducer;
  now: () => Date;
  claimMinutes: number;
  retentionHours: number;
  onChange: () => void;
  logger: Logger;
}): ReviewService {
  const { db } = deps;

  async function requireQueueRoutingFree(
    tx: Tx,
    tenantId: string,
    routing: { facilityId: string | null; specialty: string | null },
    exceptId?: string,
  ) {
    const same = await tx.reviewQueue.findFirst({
      where: {
        tenantId,
        facilityId: routing.facilityId,
        specialty: routing.specialty,
        ...(exceptId ? { NOT: { id: exceptId } } : {}),
      },
      select: { id: true, name: true },
    });
    if (same) {
      throw new AppError('CONFLICT', `Queue ${same.name} already routes this facility and specialty`, {
        details: { queueId: same.id },
      });
    }
  }

  async function requireNameFree(tx: Tx, tenantId: string, name: string, exceptId?: string) {
    const same = await tx.reviewQueue.findFirst({
      where: { tenantId, name, ...(exceptId ? { NOT: { id: exceptId } } : {}) },
      select: { id: true },
    });
    if (same) throw new AppError('CONFLICT', `A queue named ${name} exists`, { details: { queueId: same.id } });
  }

  /** The task of the tenant with its queue; a reviewer must be a member of that queue (admins see all). */
  async function loadTaskFor(
    tx: Tx | Db,
    reviewer: Reviewer,
    taskId: string,
  ): Promise<{ task: TaskRow; queue: QueueRow | null }> {
    const task = await tx.reviewTask.findFirst({ where: { id: taskId, tenantId: reviewer.tenantId } });
    if (!task) throw notFound('Review task');
    const queue = task.queueId
      ? await tx.reviewQueue.findFirst({ where: { id: task.queueId, tenantId: reviewer.tenantId } })
      : null;
    return { task, queue };
  }

  function requireMember(reviewer: Reviewer, queue: QueueRow | null): void {
    if (!queue) {
      throw new AppError(
        'review.unrouted',
        'The task is in no queue yet; an admin routes it (routeReviewTask) or adds a matching queue',
        {
          status: 409,
        },
      );
    }
    if (!queue.members.includes(reviewer.subject)) {
      throw new AppError('review.not_a_member', `Only members of queue ${queue.name} review its tasks`, { status: 403 });
    }
  }

  async function decide(
    reviewer: Reviewer,
    taskId: string,
    decision: ReviewDecision,
    input: { text?: string; reason?: string | null },
  ): Promise<DecisionResult> {
    const profile = await loadTenantProfile(db, reviewer.tenantId);
    const result = await keyedTransaction(db, reviewer.effect, async (tx) => {
      const now = deps.now();
      const { task, queue } = await loadTaskFor(tx, reviewer, taskId);
      requireMember(reviewer, queue);
      // Provenance row first, then the task: the same lock order as the retention purge, so a
      // decision and a purge of the same output queue up instead of deadlocking. After the lock
      // the read sees a purge that committed meanwhile (heldText gone: review.expired).
      await tx.$queryRaw`SELECT 1 FROM "AIProvenance" WHERE "id" = ${task.provenanceId} FOR UPDATE`;
      const provenance = await tx.aIProvenance.findFirst({ where: { id: task.provenanceId, tenantId: reviewer.tenantId } });
      if (!provenance) throw notFound('Provenance of the task');

      let released: string | null = null;
      let editDiff: Prisma.InputJsonValue | undefined;
      const reason = validateReason(input.reason, decision === 'rejected');
      if (decision !== 'rejected') {
        if (provenance.heldText === null) {
          throw new AppError('review.expired', 'The held output passed its retention before it was reviewed', { status: 409 });
        }
        released = decision === 'edited' ? validateEditedText(input.text ?? '', provenance.heldText) : provenance.heldText;
        if (decision === 'edited') editDiff = lineDiff(provenance.heldText, released) as unknown as Prisma.InputJsonValue;
      }

      // Exactly one decision wins: only the holder of a live claim moves the task out of 'claimed'.
      // A concurrent second decision waits on the row lock, then finds the state changed: 0 rows.
      const won = await tx.reviewTask.updateMany({
        where: {
          id: task.id,
          tenantId: reviewer.tenantId,
          state: 'claimed',
          claimedBy: reviewer.subject,
          claimExpiresAt: { gt: now },
        },
        data: {
          state: 'decided',
          decision,
          decidedBy: reviewer.subject,
          decidedAt: now,
          reason,
          editDiff,
          version: { increment: 1 },
        },
      });
      if (won.count !== 1) {
        const current = await tx.reviewTask.findFirstOrThrow({ where: { id: task.id } });
        throw refusal(current, reviewer.subject, now, 'decide');
      }

      const after = provenanceAfterDecision(decision);
      const releasedTextHash = released === null ? null : outputHash(released);
      await tx.aIProvenance.update({
        where: { id: provenance.id },
        data: {
          status: after.status,
          reviewState: after.reviewState,
          errorCode: after.errorCode,
          review: {
            taskId: task.id,
            queueId: task.queueId,
            decision,
            decidedBy: reviewer.subject,
            decidedAt: now.toISOString(),
            releasedTextHash,
          },
          // The released text is kept for its retention from the decision on, so a consumer has
          // the whole window to read it; a rejected output is not kept at all.
          heldText: released,
          heldTextExpiresAt: released === null ? null : new Date(now.getTime() + deps.retentionHours * 3_600_000),
        },
      });
      const actor = actorOf(reviewer.subject);
      await deps.events.emit(tx, {
        eventType: 'ai.review.completed',
        payload: {
          provenanceId: provenance.id,
          taskId: task.id,
          ...(task.queueId ? { queueId: task.queueId } : {}),
          featureKey: provenance.featureKey,
          decision,
          decidedBy: reviewer.subject,
          decidedAt: now.toISOString(),
          outputHash: provenance.outputHash!,
          ...(releasedTextHash ? { releasedTextHash } : {}),
          ...(provenance.subjectRef ? { subjectRef: provenance.subjectRef } : {}),
        },
        tenantId: reviewer.tenantId,
        // One output's review facts stay in order; outputs are independent of each other.
        partitionKey: provenance.id,
        actor,
        retentionClass: profile.retentionClass,
        dataResidency: provenance.residency ?? profile.dataResidency,
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
        dataResidency: provenance.residency ?? profile.dataResidency,
        traceparent: reviewer.traceparent,
        requestId: reviewer.requestId,
      });
      const updated = await tx.reviewTask.findFirstOrThrow({ where: { id: task.id } });
      return { task: updated, provenanceId: provenance.id, decision, releasedTextHash };
    });
    deps.logger.info({ reviewTaskId: taskId, provenanceId: result.provenanceId, decision }, 'review decided');
    return result;
  }

  return {
    async createQueue(caller, input) {
      const valid = validateQueueInput(input);
      const routing = { facilityId: valid.facilityId ?? null, specialty: valid.specialty ?? null };
      return auditedChange({ db, audit: deps.audit }, caller, {
        action: 'review_queue_created',
        change: async (tx) => {
          await lockQueues(tx, caller.tenantId);
          await requireNameFree(tx, caller.tenantId, valid.name!);
          await requireQueueRoutingFree(tx, caller.tenantId, routing);
          const queue = await tx.reviewQueue.create({
            data: {
              id: newId('reviewQueue'),
              tenantId: caller.tenantId,
              name: valid.name!,
              ...routing,
              members: valid.members ?? [],
            },
          });
          return { queue, moved: await rerouteOpenTasks(tx, caller.tenantId) };
        },
        target: (v) => ({ type: 'review_queue', id: v.queue.id }),
        details: (v) => ({
          queueId: v.queue.id,
          name: v.queue.name,
          ...routing,
          members: v.queue.members.length,
          tasksRerouted: v.moved,
        }),
      }).then((v) => v.queue);
    },

    async updateQueue(caller, queueId, input) {
      const valid = validateQueueInput(input);
      return auditedChange({ db, audit: deps.audit }, caller, {
        action: 'review_queue_updated',
        change: async (tx) => {
          await lockQueues(tx, caller.tenantId);
          const current = await tx.reviewQueue.findFirst({ where: { id: queueId, tenantId: caller.tenantId } });
          if (!current) throw notFound('Review queue');
          const routing = {
            facilityId: valid.facilityId !== undefined ? valid.facilityId : current.facilityId,
            specialty: valid.specialty !== undefined ? valid.specialty : current.specialty,
          };
          if (valid.name !== undefined) await requireNameFree(tx, caller.tenantId, valid.name, queueId);
          await requireQueueRoutingFree(tx, caller.tenantId, routing, queueId);
          const queue = await tx.reviewQueue.update({
            where: { id: queueId },
            data: {
              ...(valid.name !== undefined ? { name: valid.name } : {}),
              ...routing,
              ...(valid.members ? { members: valid.members } : {}),
            },
          });
          return { queue, moved: await rerouteOpenTasks(tx, caller.tenantId) };
        },
        target: (v) => ({ type: 'review_queue', id: v.queue.id }),
        details: (v) => ({
          queueId: v.queue.id,
          name: v.queue.name,
          facilityId: v.queue.facilityId,
          specialty: v.queue.specialty,
          members: v.queue.members.length,
          tasksRerouted: v.moved,
        }),
      }).then((v) => v.queue);
    },

    queues(tenantId) {
      return db.reviewQueue.findMany({ where: { tenantId }, orderBy: { createdAt: 'asc' } });
    },

    routeTask(caller, taskId, queueId) {
      return auditedChange({ db, audit: deps.audit }, caller, {
        action: 'review_task_routed',
        change: async (tx) => {
          const queue = await tx.reviewQueue.findFirst({
            where: { id: queueId, tenantId: caller.tenantId },
            select: { id: true },
          });
          if (!queue) throw notFound('Review queue');
          const moved = await tx.reviewTask.updateMany({
            where: { id: taskId, tenantId: caller.tenantId, state: 'open' },
            data: { queueId },
          });
          const task = await tx.reviewTask.findFirst({ where: { id: taskId, tenantId: caller.tenantId } });
          if (!task) throw notFound('Review task');
          if (moved.count !== 1)
            throw new AppError('review.not_open', 'Only an open (unclaimed) task can be moved to another queue', { status: 409 });
          return task;
        },
        target: (task) => ({ type: 'review_task', id: task.id }),
        details: (task) => ({ taskId: task.id, queueId: task.queueId, provenanceId: task.provenanceId }),
      });
    },

    async tasks(reviewer, filter) {
      const memberOf = reviewer.canAdminister
        ? undefined
        : (
            await db.reviewQueue.findMany({
              where: { tenantId: reviewer.tenantId, members: { has: reviewer.subject } },
              select: { id: true },
            })
          ).map((q) => q.id);
      if (filter.unrouted && !reviewer.canAdminister)
        throw new AppError('authz.scope_missing', 'Unrouted tasks are listed for ai.admin only', { status: 403 });
      // A reviewer asking for a queue they are not in sees nothing of it.
      if (filter.queueId && memberOf && !memberOf.includes(filter.queueId)) return [];
      const queueFilter = filter.unrouted
        ? { queueId: null }
        : filter.queueId
          ? { queueId: filter.queueId }
          : memberOf
            ? { queueId: { in: memberOf } }
            : {};
      return db.reviewTask.findMany({
        where: { tenantId: reviewer.tenantId, ...queueFilter, ...(filter.state ? { state: filter.state } : {}) },
        orderBy: { createdAt: 'asc' },
        take: filter.first,
      });
    },

    async task(reviewer, taskId) {
      const task = await db.reviewTask.findFirst({ where: { id: taskId, tenantId: reviewer.tenantId } });
      if (!task) return null;
      if (!reviewer.canAdminister) {
        const queue = task.queueId ? await db.reviewQueue.findFirst({ where: { id: task.queueId } }) : null;
        if (!queue?.members.includes(reviewer.subject)) return null;
      }
      const now = deps.now();
      // The output is shown to the one reviewer working on it, not to every member or admin.
      const holdsClaim =
        task.state === 'claimed' && task.claimedBy === reviewer.subject && (task.claimExpiresAt?.getTime() ?? 0) > now.getTime();
      if (!holdsClaim) return { task, text: null };
      const provenance = await db.aIProvenance.findFirst({
        where: { id: task.provenanceId, tenantId: reviewer.tenantId },
        select: { heldText: true },
      });
      return { task, text: provenance?.heldText ?? null };
    },

    async claim(reviewer, taskId) {
      return keyedTransaction(db, reviewer.effect, async (tx) => {
        const now = deps.now();
        const { task, queue } = await loadTaskFor(tx, reviewer, taskId);
        requireMember(reviewer, queue);
        const won = await tx.reviewTask.updateMany({
          where: {
            id: task.id,
            tenantId: reviewer.tenantId,
            OR: [
              { state: 'open' },
              { state: 'claimed', claimExpiresAt: { lte: now } },
              { state: 'claimed', claimedBy: reviewer.subject },
            ],
          },
          data: {
            state: 'claimed',
            claimedBy: reviewer.subject,
            claimExpiresAt: new Date(now.getTime() + deps.claimMinutes * 60_000),
            version: { increment: 1 },
          },
        });
        const current = await tx.reviewTask.findFirstOrThrow({ where: { id: task.id } });
        if (won.count !== 1) throw refusal(current, reviewer.subject, now, 'claim');
        return current;
      });
    },

    async releaseClaim(reviewer, taskId) {
      return keyedTransaction(db, reviewer.effect, async (tx) => {
        const now = deps.now();
        const { task } = await loadTaskFor(tx, reviewer, taskId);
        const released = await tx.reviewTask.updateMany({
          where: { id: task.id, state: 'claimed', claimedBy: reviewer.subject },
          data: { state: 'open', claimedBy: null, claimExpiresAt: null, version: { increment: 1 } },
        });
        const current = await tx.reviewTask.findFirstOrThrow({ where: { id: task.id } });
        if (released.count !== 1) throw refusal(current, reviewer.subject, now, 'release');
        return current;
      });
    },

    approve: (reviewer, taskId) => decide(reviewer, taskId, 'approved', {}),
    approveWithEdits: (reviewer, taskId, text) => decide(reviewer, taskId, 'edited', { text }),
    reject: (reviewer, taskId, reason) => decide(reviewer, taskId, 'rejected', { reason }),

    async setPolicy(caller, featureKey, mode) {
      validateFeatureKey(featureKey);
      if (!(HITL_MODES as readonly string[]).includes(mode)) {
        throw new AppError('BAD_USER_INPUT', `mode is one of ${HITL_MODES.join(', ')}`, { details: { argument: 'mode' } });
      }
      const policy = await auditedChange({ db, audit: deps.audit }, caller, {
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
    },
  };
}
