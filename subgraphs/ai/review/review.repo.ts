import type { Db, Prisma, Tx } from '../../../platform/db/database.js';
import { AppError, notFound } from '../../../platform/errors/errors.js';
import { newId } from '../../../platform/ids.js';
import type {
  AIProvenance as ProvenanceRow,
  ReviewQueue as QueueRow,
  ReviewTask as TaskRow,
} from '../../../prisma/generated/client.js';
import type { DiffOp } from '../../../platform/text/text-diff.logic.js';
import type { ReviewDecision, TaskQueueScope } from './review.logic.js';
import { reroutePlan, selectQueue } from './review-queue.logic.js';

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

type Client = Db | Tx;

/** Serialises queue writes of one tenant, so two queues can never end up with the same routing. */
export async function lockQueues(tx: Tx, tenantId: string): Promise<void> {
  await tx.$executeRawUnsafe('SELECT pg_advisory_xact_lock(hashtext($1))', `ai.review_queues:${tenantId}`);
}

export async function requireQueueRoutingFree(
  tx: Tx,
  tenantId: string,
  routing: { facilityId: string | null; specialty: string | null },
  exceptId?: string,
): Promise<void> {
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
    throw new AppError('request.conflict', `Queue ${same.name} already routes this facility and specialty`, {
      details: { queueId: same.id },
    });
  }
}

export async function requireQueueNameFree(tx: Tx, tenantId: string, name: string, exceptId?: string): Promise<void> {
  const same = await tx.reviewQueue.findFirst({
    where: { tenantId, name, ...(exceptId ? { NOT: { id: exceptId } } : {}) },
    select: { id: true },
  });
  if (same) throw new AppError('request.conflict', `A queue named ${name} exists`, { details: { queueId: same.id } });
}

/** Moves every open task of the tenant to its most specific queue (after a queue was created or re-routed); the ids moved. */
export async function rerouteOpenTasks(tx: Tx, tenantId: string): Promise<string[]> {
  const queues = await tx.reviewQueue.findMany({ where: { tenantId }, select: { id: true, facilityId: true, specialty: true } });
  const open = await tx.reviewTask.findMany({
    where: { tenantId, state: 'open' },
    select: { id: true, queueId: true, facilityId: true, specialty: true },
  });
  const moved: string[] = [];
  for (const [queueId, ids] of reroutePlan(queues, open)) {
    await tx.reviewTask.updateMany({ where: { id: { in: ids }, state: 'open' }, data: { queueId } });
    moved.push(...ids);
  }
  return moved;
}

const PENDING = { in: ['open', 'claimed'] };

/**
 * Bars `subject` from the waiting tasks its change steered: those in `queueId` now and those in
 * `taskIds` (moved by the change). A claim the subject held on one of them goes back to the queue.
 * Returns how many tasks were newly barred.
 */
export async function barSteeringAdmin(
  tx: Tx,
  tenantId: string,
  subject: string,
  steered: { queueId?: string; taskIds?: readonly string[] },
): Promise<number> {
  const which = [
    ...(steered.queueId ? [{ queueId: steered.queueId }] : []),
    ...(steered.taskIds?.length ? [{ id: { in: [...steered.taskIds] } }] : []),
  ];
  if (which.length === 0) return 0;
  const where = { tenantId, state: PENDING, OR: which };
  const barred = await tx.reviewTask.updateMany({
    where: { ...where, NOT: { steeredBy: { has: subject } } },
    data: { steeredBy: { push: subject } },
  });
  await tx.reviewTask.updateMany({
    where: { ...where, state: 'claimed', claimedBy: subject },
    data: { state: 'open', claimedBy: null, claimExpiresAt: null, version: { increment: 1 } },
  });
  return barred.count;
}

/** Who asked for the task's output: the token subject recorded on its provenance row. */
export async function requesterOf(client: Client, tenantId: string, provenanceId: string): Promise<string> {
  const row = await client.aIProvenance.findFirst({ where: { id: provenanceId, tenantId }, select: { actorId: true } });
  if (!row) throw notFound('Provenance of the task');
  return row.actorId;
}

/** The tenant's task with its queue (null while unrouted). */
export async function loadTaskWithQueue(
  client: Client,
  tenantId: string,
  taskId: string,
): Promise<{ task: TaskRow; queue: QueueRow | null }> {
  const task = await client.reviewTask.findFirst({ where: { id: taskId, tenantId } });
  if (!task) throw notFound('Review task');
  const queue = task.queueId ? await client.reviewQueue.findFirst({ where: { id: task.queueId, tenantId } }) : null;
  return { task, queue };
}

/**
 * The provenance row of a task's output, locked. Provenance row first, then the task: the same
 * lock order as the retention purge, so a decision and a purge of the same output queue up
 * instead of deadlocking. After the lock the read sees a purge that committed meanwhile.
 */
export async function lockHeldOutput(tx: Tx, tenantId: string, provenanceId: string): Promise<ProvenanceRow> {
  await tx.$queryRaw`SELECT 1 FROM "AIProvenance" WHERE "id" = ${provenanceId} FOR UPDATE`;
  const provenance = await tx.aIProvenance.findFirst({ where: { id: provenanceId, tenantId } });
  if (!provenance) throw notFound('Provenance of the task');
  return provenance;
}

export async function currentTask(client: Client, taskId: string): Promise<TaskRow> {
  return client.reviewTask.findFirstOrThrow({ where: { id: taskId } });
}

/**
 * Moves a claimed task to decided, only for the holder of a live claim: of two concurrent
 * decisions the second waits on the row lock, then matches no row. True when this one won.
 */
export async function markDecided(
  tx: Tx,
  task: { id: string; tenantId: string },
  decision: { decision: ReviewDecision; decidedBy: string; decidedAt: Date; reason: string | null; editDiff?: DiffOp[] },
): Promise<boolean> {
  const won = await tx.reviewTask.updateMany({
    where: {
      id: task.id,
      tenantId: task.tenantId,
      state: 'claimed',
      claimedBy: decision.decidedBy,
      claimExpiresAt: { gt: decision.decidedAt },
    },
    data: {
      state: 'decided',
      decision: decision.decision,
      decidedBy: decision.decidedBy,
      decidedAt: decision.decidedAt,
      reason: decision.reason,
      editDiff: decision.editDiff as unknown as Prisma.InputJsonValue | undefined,
      version: { increment: 1 },
    },
  });
  return won.count === 1;
}

/** Claims an open task, takes over an expired claim, or renews the subject's own. True when claimed. */
export async function markClaimed(
  tx: Tx,
  task: { id: string; tenantId: string },
  claim: { subject: string; at: Date; expiresAt: Date },
): Promise<boolean> {
  const won = await tx.reviewTask.updateMany({
    where: {
      id: task.id,
      tenantId: task.tenantId,
      OR: [
        { state: 'open' },
        { state: 'claimed', claimExpiresAt: { lte: claim.at } },
        { state: 'claimed', claimedBy: claim.subject },
      ],
    },
    data: { state: 'claimed', claimedBy: claim.subject, claimExpiresAt: claim.expiresAt, version: { increment: 1 } },
  });
  return won.count === 1;
}

/** Gives the subject's claim back to the queue. True when the subject held it. */
export async function markReleased(tx: Tx, taskId: string, subject: string): Promise<boolean> {
  const released = await tx.reviewTask.updateMany({
    where: { id: taskId, state: 'claimed', claimedBy: subject },
    data: { state: 'open', claimedBy: null, claimExpiresAt: null, version: { increment: 1 } },
  });
  return released.count === 1;
}

export async function memberQueueIds(db: Db, tenantId: string, subject: string): Promise<string[]> {
  const queues = await db.reviewQueue.findMany({ where: { tenantId, members: { has: subject } }, select: { id: true } });
  return queues.map((q) => q.id);
}

export function listTasks(
  db: Db,
  tenantId: string,
  scope: Exclude<TaskQueueScope, { kind: 'none' }>,
  filter: { state?: string | null; first: number },
): Promise<TaskRow[]> {
  const queueFilter =
    scope.kind === 'unrouted' ? { queueId: null } : scope.kind === 'queues' ? { queueId: { in: [...scope.queueIds] } } : {};
  return db.reviewTask.findMany({
    where: { tenantId, ...queueFilter, ...(filter.state ? { state: filter.state } : {}) },
    orderBy: { createdAt: 'asc' },
    take: filter.first,
  });
}
