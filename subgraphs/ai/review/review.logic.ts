import { AppError, badInput } from '../../../platform/errors.js';
import { heldTextExpiry, outputHash } from '../provenance/provenance.logic.js';

/**
 * Human review (HITL) rules as plain data: which queue a held output goes to, who may act on a
 * task, what a decision looks like. The repository turns the claim and decision rules into
 * conditional UPDATEs so that exactly one of two concurrent reviewers wins.
 */

export interface QueueRouting {
  id: string;
  facilityId: string | null;
  specialty: string | null;
}

/** facility + specialty > facility > specialty > the tenant's catch-all queue (neither set). */
export function queueSpecificity(queue: Pick<QueueRouting, 'facilityId' | 'specialty'>): number {
  return (queue.facilityId !== null ? 2 : 0) + (queue.specialty !== null ? 1 : 0);
}

export function queueMatches(queue: QueueRouting, context: { facilityId: string | null; specialty: string | null }): boolean {
  return (
    (queue.facilityId === null || queue.facilityId === context.facilityId) &&
    (queue.specialty === null || queue.specialty === context.specialty)
  );
}

/** The most specific matching queue; none when the tenant has no queue for the context. */
export function selectQueue<Q extends QueueRouting>(
  queues: readonly Q[],
  context: { facilityId: string | null; specialty: string | null },
): Q | undefined {
  let best: Q | undefined;
  for (const queue of queues) {
    if (!queueMatches(queue, context)) continue;
    // Equal routing is refused when queues are written, so ties only break on id to stay deterministic.
    if (
      !best ||
      queueSpecificity(queue) > queueSpecificity(best) ||
      (queueSpecificity(queue) === queueSpecificity(best) && queue.id < best.id)
    ) {
      best = queue;
    }
  }
  return best;
}

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

/**
 * Open (unclaimed) tasks follow the queue routing as it is now: each goes to its most specific
 * queue. Returns the moves, task ids by target queue; a task no queue matches stays where it is.
 */
export function reroutePlan(
  queues: readonly QueueRouting[],
  openTasks: ReadonlyArray<{ id: string; queueId: string | null; facilityId: string | null; specialty: string | null }>,
): Map<string, string[]> {
  const moves = new Map<string, string[]>();
  for (const task of openTasks) {
    const target = selectQueue(queues, task)?.id ?? null;
    if (target === task.queueId || target === null) continue;
    moves.set(target, [...(moves.get(target) ?? []), task.id]);
  }
  return moves;
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

export type DiffOp = { op: '=' | '-' | '+'; text: string };

/** Above this many lines on either side the diff is one block replaced (the LCS table is quadratic). */
const MAX_DIFF_LINES = 2_000;

/**
 * A line diff (longest common subsequence), like `diff` without context trimming: every line of
 * the original and of the edit appears once, marked kept, removed or added. Runs of the same op
 * are merged so the stored diff stays small.
 */
export function lineDiff(original: string, edited: string): DiffOp[] {
  const a = original.split('\n');
  const b = edited.split('\n');
  const ops: DiffOp[] = [];
  const push = (op: DiffOp['op'], line: string) => {
    const last = ops.at(-1);
    if (last && last.op === op) last.text += `\n${line}`;
    else ops.push({ op, text: line });
  };
  if (a.length > MAX_DIFF_LINES || b.length > MAX_DIFF_LINES) {
    for (const line of a) push('-', line);
    for (const line of b) push('+', line);
    return ops;
  }
  // lcs[i][j] = length of the LCS of a[i..] and b[j..]
  const lcs: Uint32Array[] = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      push('=', a[i]);
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) push('-', a[i++]);
    else push('+', b[j++]);
  }
  while (i < a.length) push('-', a[i++]);
  while (j < b.length) push('+', b[j++]);
  return ops;
}

/** Applies a diff to its original: the edited text again (the diff's own proof in tests). */
export function applyDiff(ops: DiffOp[]): { original: string; edited: string } {
  const original: string[] = [];
  const edited: string[] = [];
  for (const { op, text } of ops) {
    if (op !== '+') original.push(text);
    if (op !== '-') edited.push(text);
  }
  return { original: original.join('\n'), edited: edited.join('\n') };
}

/** What stays of a diff after the review text's retention: its size, not its text. */
export function diffSummary(ops: DiffOp[]): { linesRemoved: number; linesAdded: number } {
  const lines = (op: DiffOp['op']) => ops.filter((o) => o.op === op).reduce((n, o) => n + o.text.split('\n').length, 0);
  return { linesRemoved: lines('-'), linesAdded: lines('+') };
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

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$/;
const MAX_MEMBERS = 500;

export interface QueueInput {
  name?: string;
  facilityId?: string | null;
  specialty?: string | null;
  members?: string[];
}

function optionalKey(value: string | null | undefined, argument: string): string | null {
  if (value == null) return null;
  if (value.trim() === '' || value.length > 128) throw badInput(`${argument} is 1-128 characters, or null for any`, { argument });
  return value;
}

/** Queue fields from an admin: a readable name, routing keys, reviewers by token subject, no repeats. */
export function validateQueueInput(input: QueueInput): QueueInput {
  const out: QueueInput = {};
  if (input.name !== undefined) {
    if (!NAME_RE.test(input.name)) throw badInput('A queue name is 1-80 letters, digits, spaces or ._-', { argument: 'name' });
    out.name = input.name;
  }
  if (input.facilityId !== undefined) out.facilityId = optionalKey(input.facilityId, 'facilityId');
  if (input.specialty !== undefined) out.specialty = optionalKey(input.specialty, 'specialty');
  if (input.members !== undefined) {
    if (input.members.length > MAX_MEMBERS) throw badInput(`At most ${MAX_MEMBERS} members`, { argument: 'members' });
    for (const member of input.members) {
      if (member.trim() === '' || member.length > 200)
        throw badInput('A member is a token subject of 1-200 characters', { argument: 'members' });
    }
    out.members = [...new Set(input.members)];
  }
  return out;
}

/** The routing of a queue after an update: fields given change (null widens to any), others stay. */
export function routingAfterUpdate(
  update: Pick<QueueInput, 'facilityId' | 'specialty'>,
  current: { facilityId: string | null; specialty: string | null },
): { facilityId: string | null; specialty: string | null } {
  return {
    facilityId: update.facilityId !== undefined ? update.facilityId : current.facilityId,
    specialty: update.specialty !== undefined ? update.specialty : current.specialty,
  };
}
