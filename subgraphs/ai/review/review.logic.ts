import { AppError, badInput } from '../../../platform/errors/errors.js';
import { lineDiff, type DiffOp } from '../../../platform/text/text-diff.logic.js';
import { heldTextExpiry, outputHash } from '../provenance/provenance.logic.js';

/**
 * Human review (HITL) rules as plain data: who may act on a task, what a decision looks like
 * (which queue a task goes to: review-queue.logic.ts). The repository turns the claim and decision rules into
 * conditional UPDATEs so that exactly one of two concurrent reviewers wins.
 */

export type TaskState = 'open' | 'claimed' | 'decided' | 'expired';
export type ReviewDecision = 'approved' | 'edited' | 'rejected';

export interface TaskView {
  state: string;
  claimedBy: string | null;
  claimExpiresAt: Date | null;
}

/** A claim is live while it has not expired; an expired claim is as good as open. */
export function claimIsLive(task: TaskView, now: Date): boolean {
  return task.state === 'claimed' && task.claimExpiresAt !== null && task.claimExpiresAt.getTime() > now.getTime();
}

/** May `subject` claim (or renew its claim on) the task now? */
export function mayClaim(task: TaskView, subject: string, now: Date): boolean {
  if (task.state === 'open') return true;
  if (task.state !== 'claimed') return false;
  return !claimIsLive(task, now) || task.claimedBy === subject;
}

/**
 * Why a claim or decision by `subject` was refused, for the error the reviewer sees. Called after
 * the conditional UPDATE matched no row, on the row as it is now.
 */
export function refusal(task: TaskView, subject: string, now: Date, action: 'claim' | 'decide' | 'release'): AppError {
  if (task.state === 'decided')
    return new AppError('review.already_decided', 'The task has already been decided', { status: 409 });
  if (task.state === 'expired') return reviewExpired();
  if (action === 'claim') {
    return new AppError('review.claimed_by_other', 'Another reviewer holds the claim on this task', {
      status: 409,
      details: { claimExpiresAt: task.claimExpiresAt?.toISOString() ?? null },
    });
  }
  if (claimIsLive(task, now) && task.claimedBy !== subject) {
    return new AppError('review.claimed_by_other', 'Another reviewer holds the claim on this task', { status: 409 });
  }
  if (task.state === 'claimed' && task.claimedBy === subject) {
    return new AppError('review.claim_expired', 'Your claim expired; claim the task again', { status: 409 });
  }
  return new AppError('review.not_claimed', 'Claim the task before deciding it', { status: 409 });
}

export function reviewExpired(): AppError {
  return new AppError('review.expired', 'The held output passed its retention before it was reviewed', { status: 409 });
}

/** Whether `subject` holds a live claim on the task: only that reviewer sees the held output. */
export function holdsLiveClaim(task: TaskView, subject: string, now: Date): boolean {
  return claimIsLive(task, now) && task.claimedBy === subject;
}

export function claimExpiry(now: Date, claimMinutes: number): Date {
  return new Date(now.getTime() + claimMinutes * 60_000);
}

/** Reviewers act on the tasks of queues they are members of; a task in no queue waits for an admin. */
export function requireQueueMember(subject: string, queue: { name: string; members: readonly string[] } | null): void {
  if (!queue) {
    throw new AppError(
      'review.unrouted',
      'The task is in no queue yet; an admin routes it (routeReviewTask) or adds a matching queue',
      {
        status: 409,
      },
    );
  }
  if (!queue.members.includes(subject)) {
    throw new AppError('review.not_a_member', `Only members of queue ${queue.name} review its tasks`, { status: 403 });
  }
}

/** The queues a task list covers. */
export type TaskQueueScope =
  | { kind: 'unrouted' }
  | { kind: 'queues'; queueIds: readonly string[] }
  | { kind: 'all' }
  /** A reviewer asking for a queue they are not in sees nothing of it. */
  | { kind: 'none' };

/**
 * Which tasks a reviewer's list shows: admins (`memberOf` null) every queue, reviewers the queues
 * they are members of; unrouted tasks belong to no queue, so only admins list them.
 */
export function taskQueueScope(
  filter: { queueId?: string | null; unrouted?: boolean },
  memberOf: readonly string[] | null,
): TaskQueueScope {
  if (filter.unrouted) {
    if (memberOf) throw new AppError('authz.scope_missing', 'Unrouted tasks are listed for ai.admin only', { status: 403 });
    return { kind: 'unrouted' };
  }
  if (filter.queueId)
    return memberOf && !memberOf.includes(filter.queueId) ? { kind: 'none' } : { kind: 'queues', queueIds: [filter.queueId] };
  return memberOf ? { kind: 'queues', queueIds: memberOf } : { kind: 'all' };
}

export const MAX_REASON_CHARS = 2_000;
export const MAX_EDITED_CHARS = 100_000;

export function validateReason(reason: string | null | undefined, required: boolean): string | null {
  if (reason == null || reason.trim() === '') {
    if (required) throw badInput('A rejection needs a reason', { argument: 'reason' });
    return null;
  }
  if (reason.length > MAX_REASON_CHARS)
    throw badInput(`reason is at most ${MAX_REASON_CHARS} characters`, { argument: 'reason' });
  return reason.trim();
}

export function validateEditedText(text: string, original: string): string {
  if (text.trim() === '') throw badInput('The edited text is empty; reject the output instead', { argument: 'text' });
  if (text.length > MAX_EDITED_CHARS) throw badInput(`text is at most ${MAX_EDITED_CHARS} characters`, { argument: 'text' });
  if (text === original) throw badInput('The edited text equals the output; approve it instead', { argument: 'text' });
  return text;
}

/** What a decision releases: the held output as generated, the reviewer's edit (with its line diff), or nothing. */
export interface DecisionContent {
  reason: string | null;
  released: string | null;
  editDiff?: DiffOp[];
}

/**
 * The content of a decision on an output still held (`heldText`, null once its retention purged
 * it): a rejection needs a reason, an approval a held output, an edit a real change.
 */
export function decisionContent(
  decision: ReviewDecision,
  heldText: string | null,
  input: { text?: string; reason?: string | null },
): DecisionContent {
  const reason = validateReason(input.reason, decision === 'rejected');
  if (decision === 'rejected') return { reason, released: null };
  if (heldText === null) throw reviewExpired();
  if (decision === 'approved') return { reason, released: heldText };
  const edited = validateEditedText(input.text ?? '', heldText);
  return { reason, released: edited, editDiff: lineDiff(heldText, edited) };
}

/**
 * The provenance row after a decision. The released text is kept for its retention from the
 * decision on, so a consumer has the whole window to read it; a rejected output is not kept at all.
 */
export function reviewedProvenance(
  decision: ReviewDecision,
  content: DecisionContent,
  facts: { taskId: string; queueId: string | null; decidedBy: string; decidedAt: Date; retentionHours: number },
) {
  const after = provenanceAfterDecision(decision);
  const releasedTextHash = content.released === null ? null : outputHash(content.released);
  return {
    status: after.status,
    reviewState: after.reviewState,
    errorCode: after.errorCode,
    review: {
      taskId: facts.taskId,
      queueId: facts.queueId,
      decision,
      decidedBy: facts.decidedBy,
      decidedAt: facts.decidedAt.toISOString(),
      releasedTextHash,
    },
    heldText: content.released,
    heldTextExpiresAt: content.released === null ? null : heldTextExpiry(facts.decidedAt, facts.retentionHours),
  };
}

/** Provenance after a decision: what the record says and whether text is released. */
export function provenanceAfterDecision(decision: ReviewDecision): {
  status: string;
  reviewState: string;
  releases: boolean;
  errorCode: string | null;
} {
  if (decision === 'rejected')
    return { status: 'rejected', reviewState: 'rejected', releases: false, errorCode: 'review.rejected' };
  return {
    status: 'completed',
    reviewState: decision === 'edited' ? 'approved_with_edits' : 'approved',
    releases: true,
    errorCode: null,
  };
}

/** Review states whose text the tenant may read as released output. */
export const RELEASED_REVIEW_STATES: ReadonlySet<string> = new Set(['approved', 'approved_with_edits']);

export const HITL_MODES = ['required', 'optional'] as const;

export function validateHitlMode(mode: string): string {
  if (!(HITL_MODES as readonly string[]).includes(mode)) {
    throw new AppError('BAD_USER_INPUT', `mode is one of ${HITL_MODES.join(', ')}`, { details: { argument: 'mode' } });
  }
  return mode;
}
