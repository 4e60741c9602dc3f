import type { ReviewQueue as QueueRow, ReviewTask as TaskRow } from '../../../prisma/generated/client.js';
import { Arg, Ctx, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import { badInput } from '../../../platform/errors/errors.js';
import { isId } from '../../../platform/ids.js';
import { GraphQLJSON } from '../../../platform/graphql/scalars.js';
import { adminCaller, callerOf, type AiContext } from '../context.js';
import { AI_ADMIN, AI_REVIEW, REVIEW_READ } from '../scopes.js';
import { HITLPolicy } from './hitl-policy.type.js';
import { toHitlPolicy } from './hitl-policy.resolver.js';
import type { DecisionResult, Reviewer } from './review.service.js';

@ObjectType({
  simpleResolvers: true,
  description: "A reviewer queue: held outputs of the tenant's matching facility and specialty go here.",
})
export class ReviewQueue {
  @Field(() => ID) queueId: string;
  @Field(() => String) name: string;
  @Field(() => String, { nullable: true, description: 'null matches every facility.' }) facilityId: string | null;
  @Field(() => String, { nullable: true, description: 'null matches every specialty.' }) specialty: string | null;
  @Field(() => [String], { description: 'Reviewers: token subjects (sub) allowed to claim and decide its tasks.' })
  members: string[];
  @Field(() => Date) createdAt: Date;
}

@ObjectType({ simpleResolvers: true, description: 'One AI output held for human review.' })
export class ReviewTask {
  @Field(() => ID) taskId: string;
  @Field(() => ID) provenanceId: string;
  @Field(() => ID, { nullable: true, description: 'null while no queue matches (an admin routes it).' }) queueId: string | null;
  @Field(() => String) featureKey: string;
  @Field(() => String, { nullable: true }) facilityId: string | null;
  @Field(() => String, { nullable: true }) specialty: string | null;
  @Field(() => String, { description: 'open, claimed, decided or expired (its held output passed retention unreviewed).' })
  state: string;
  @Field(() => String, { nullable: true }) claimedBy: string | null;
  @Field(() => Date, { nullable: true }) claimExpiresAt: Date | null;
  @Field(() => String, { nullable: true, description: 'approved, edited or rejected.' }) decision: string | null;
  @Field(() => String, { nullable: true }) decidedBy: string | null;
  @Field(() => Date, { nullable: true }) decidedAt: Date | null;
  @Field(() => String, { nullable: true, description: 'The reviewer’s reason for a rejection.' }) reason: string | null;
  @Field(() => GraphQLJSON, {
    nullable: true,
    description:
      'An edit as a line diff [{op: "=" | "-" | "+", text}]; after the retention only its size {linesRemoved, linesAdded}.',
  })
  editDiff: unknown;
  @Field(() => Int, { description: 'Bumped by every claim, release and decision.' }) version: number;
  @Field(() => Date) createdAt: Date;
  @Field(() => String, { nullable: true, description: 'The held output, shown only to the reviewer holding a live claim.' })
  text: string | null;
}

@ObjectType({ simpleResolvers: true })
export class ReviewDecisionResult {
  @Field(() => ReviewTask) task: ReviewTask;
  @Field(() => ID) provenanceId: string;
  @Field(() => String) decision: string;
  @Field(() => String, {
    nullable: true,
    description: 'sha256 of the released text (the edit for edited); null for a rejection.',
  })
  releasedTextHash: string | null;
}

@InputType()
export class CreateReviewQueueInput {
  @Field(() => String) name: string;
  @Field(() => String, { nullable: true }) facilityId?: string | null;
  @Field(() => String, { nullable: true }) specialty?: string | null;
  @Field(() => [String]) members: string[];
}

@InputType({ description: 'Only the fields given change; facilityId or specialty set to null widen the routing to any.' })
export class UpdateReviewQueueInput {
  @Field(() => String, { nullable: true }) name?: string;
  @Field(() => String, { nullable: true }) facilityId?: string | null;
  @Field(() => String, { nullable: true }) specialty?: string | null;
  @Field(() => [String], { nullable: true, description: 'Replaces the member list.' }) members?: string[];
}

export function toReviewQueue(row: QueueRow): ReviewQueue {
  return {
    queueId: row.id,
    name: row.name,
    facilityId: row.facilityId,
    specialty: row.specialty,
    members: row.members,
    createdAt: row.createdAt,
  };
}

export function toReviewTask(row: TaskRow, text: string | null = null): ReviewTask {
  return {
    taskId: row.id,
    provenanceId: row.provenanceId,
    queueId: row.queueId,
    featureKey: row.featureKey,
    facilityId: row.facilityId,
    specialty: row.specialty,
    state: row.state,
    claimedBy: row.claimedBy,
    claimExpiresAt: row.claimExpiresAt,
    decision: row.decision,
    decidedBy: row.decidedBy,
    decidedAt: row.decidedAt,
    reason: row.reason,
    editDiff: row.editDiff,
    version: row.version,
    createdAt: row.createdAt,
    text,
  };
}

function toDecision(result: DecisionResult): ReviewDecisionResult {
  return {
    task: toReviewTask(result.task),
    provenanceId: result.provenanceId,
    decision: result.decision,
    releasedTextHash: result.releasedTextHash,
  };
}

function requireTaskId(value: string): string {
  if (!isId('reviewTask', value)) throw badInput('taskId is not a review task id', { argument: 'taskId' });
  return value;
}

function requireQueueId(value: string, argument = 'queueId'): string {
  if (!isId('reviewQueue', value)) throw badInput(`${argument} is not a review queue id`, { argument });
  return value;
}

/** Reviewers act with scope ai.review (and queue membership); admins (ai.admin) see every queue but decide only as members. */
function reviewer(ctx: AiContext, options: { adminMayRead?: boolean } = {}): Reviewer {
  requireAnyScope(ctx.principal, options.adminMayRead ? REVIEW_READ : AI_REVIEW);
  return { ...callerOf(ctx), canAdminister: ctx.principal.scopes.has('ai.admin') };
}

const TASK_STATES = new Set(['open', 'claimed', 'decided', 'expired']);

@Resolver(() => ReviewTask)
export class ReviewResolver {
  @Mutation(() => ReviewQueue, {
    description:
      'Creates a reviewer queue routed by facility and/or specialty (scope ai.admin). The most specific queue wins (facility + specialty > facility > specialty > neither); open tasks are re-routed at once. request.conflict when another queue has the same name or routing.',
  })
  async createReviewQueue(
    @Arg('input', () => CreateReviewQueueInput) input: CreateReviewQueueInput,
    @Ctx() ctx: AiContext,
  ): Promise<ReviewQueue> {
    return toReviewQueue(await ctx.services.review.createQueue(adminCaller(ctx), input));
  }

  @Mutation(() => ReviewQueue, {
    description: 'Changes a queue’s name, routing or members (scope ai.admin); open tasks are re-routed at once.',
  })
  async updateReviewQueue(
    @Arg('queueId', () => ID) queueId: string,
    @Arg('input', () => UpdateReviewQueueInput) input: UpdateReviewQueueInput,
    @Ctx() ctx: AiContext,
  ): Promise<ReviewQueue> {
    const caller = adminCaller(ctx);
    return toReviewQueue(await ctx.services.review.updateQueue(caller, requireQueueId(queueId), input));
  }

  @Mutation(() => ReviewTask, { description: 'Moves an open task to a queue, e.g. one no queue matched (scope ai.admin).' })
  async routeReviewTask(
    @Arg('taskId', () => ID) taskId: string,
    @Arg('queueId', () => ID) queueId: string,
    @Ctx() ctx: AiContext,
  ): Promise<ReviewTask> {
    const caller = adminCaller(ctx);
    return toReviewTask(await ctx.services.review.routeTask(caller, requireTaskId(taskId), requireQueueId(queueId)));
  }

  @Query(() => [ReviewQueue], { description: "The tenant's reviewer queues (scope ai.admin or ai.review)." })
  async reviewQueues(@Ctx() ctx: AiContext): Promise<ReviewQueue[]> {
    reviewer(ctx, { adminMayRead: true });
    return (await ctx.services.review.queues(ctx.tenantId)).map(toReviewQueue);
  }

  @Query(() => [ReviewTask], {
    description:
      'Tasks of the queues the caller is a member of (scope ai.review), oldest first; with ai.admin every queue, and `unrouted: true` lists tasks no queue matched.',
  })
  async reviewTasks(
    @Arg('queueId', () => ID, { nullable: true }) queueId: string | null,
    @Arg('state', () => String, { nullable: true, description: 'open, claimed, decided or expired.' }) state: string | null,
    @Arg('unrouted', () => Boolean, { nullable: true, defaultValue: false }) unrouted: boolean,
    @Arg('first', () => Int, { nullable: true, defaultValue: 50 }) first: number,
    @Ctx() ctx: AiContext,
  ): Promise<ReviewTask[]> {
    const who = reviewer(ctx, { adminMayRead: true });
    // Unrouted tasks belong to no queue a reviewer could be a member of: only admins route them.
    if (unrouted) requireAnyScope(ctx.principal, AI_ADMIN);
    if (first < 1 || first > 200) throw badInput('first must be between 1 and 200', { argument: 'first' });
    if (state != null && !TASK_STATES.has(state))
      throw badInput('state is open, claimed, decided or expired', { argument: 'state' });
    const rows = await ctx.services.review.tasks(who, {
      queueId: queueId == null ? null : requireQueueId(queueId),
      state: state ?? null,
      unrouted,
      first,
    });
    return rows.map((row) => toReviewTask(row));
  }

  @Query(() => ReviewTask, {
    nullable: true,
    description: 'One task (scope ai.review as a member of its queue, or ai.admin); text only while you hold its claim.',
  })
  async reviewTask(@Arg('taskId', () => ID) taskId: string, @Ctx() ctx: AiContext): Promise<ReviewTask | null> {
    const found = await ctx.services.review.task(reviewer(ctx, { adminMayRead: true }), requireTaskId(taskId));
    return found ? toReviewTask(found.task, found.text) : null;
  }

  @Mutation(() => ReviewTask, {
    description:
      'Claims a task for AI_REVIEW_CLAIM_MINUTES (scope ai.review, member of its queue); claiming your own claim renews it, an expired claim may be taken over. review.claimed_by_other (409) while another reviewer holds it.',
  })
  async claimReviewTask(@Arg('taskId', () => ID) taskId: string, @Ctx() ctx: AiContext): Promise<ReviewTask> {
    const who = reviewer(ctx);
    return toReviewTask(await ctx.services.review.claim(who, requireTaskId(taskId)));
  }

  @Mutation(() => ReviewTask, { description: 'Gives a claimed task back to the queue (scope ai.review).' })
  async releaseReviewTask(@Arg('taskId', () => ID) taskId: string, @Ctx() ctx: AiContext): Promise<ReviewTask> {
    const who = reviewer(ctx);
    return toReviewTask(await ctx.services.review.releaseClaim(who, requireTaskId(taskId)));
  }

  @Mutation(() => ReviewDecisionResult, {
    description:
      'Approves the output as generated (scope ai.review, holding a live claim). Exactly one decision per task wins; others get review.already_decided, review.claim_expired, review.not_claimed or review.claimed_by_other (409). Emits ai.review.completed.v1; the text becomes AIProvenance.releasedText.',
  })
  async approveReviewTask(@Arg('taskId', () => ID) taskId: string, @Ctx() ctx: AiContext): Promise<ReviewDecisionResult> {
    const who = reviewer(ctx);
    return toDecision(await ctx.services.review.approve(who, requireTaskId(taskId)));
  }

  @Mutation(() => ReviewDecisionResult, {
    description:
      'Approves an edited version of the output (scope ai.review, holding a live claim); the line diff is kept on the task.',
  })
  async approveReviewTaskWithEdits(
    @Arg('taskId', () => ID) taskId: string,
    @Arg('text', () => String) text: string,
    @Ctx() ctx: AiContext,
  ): Promise<ReviewDecisionResult> {
    const who = reviewer(ctx);
    return toDecision(await ctx.services.review.approveWithEdits(who, requireTaskId(taskId), text));
  }

  @Mutation(() => ReviewDecisionResult, {
    description:
      'Rejects the output with a reason (scope ai.review, holding a live claim); nothing is released and the held text is dropped.',
  })
  async rejectReviewTask(
    @Arg('taskId', () => ID) taskId: string,
    @Arg('reason', () => String) reason: string,
    @Ctx() ctx: AiContext,
  ): Promise<ReviewDecisionResult> {
    const who = reviewer(ctx);
    return toDecision(await ctx.services.review.reject(who, requireTaskId(taskId), reason));
  }

  @Mutation(() => HITLPolicy, {
    description:
      "Sets the tenant's HITL policy for a feature (scope ai.admin): required (hold every output for review) or optional; it overrides the global policy.",
  })
  async setHitlPolicy(
    @Arg('featureKey', () => String) featureKey: string,
    @Arg('mode', () => String) mode: string,
    @Ctx() ctx: AiContext,
  ): Promise<HITLPolicy> {
    return toHitlPolicy(await ctx.services.review.setPolicy(adminCaller(ctx), featureKey, mode));
  }
}
