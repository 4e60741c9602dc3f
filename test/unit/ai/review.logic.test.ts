import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors/errors.js';
import { applyDiff, diffSummary, lineDiff } from '../../../platform/text/text-diff.logic.js';
import {
  decisionContent,
  holdsLiveClaim,
  mayClaim,
  provenanceAfterDecision,
  refusal,
  requireQueueMember,
  reviewedProvenance,
  taskQueueScope,
  validateEditedText,
  validateHitlMode,
  validateReason,
} from '../../../subgraphs/ai/review/review.logic.js';
import {
  reroutePlan,
  routingAfterUpdate,
  selectQueue,
  validateQueueInput,
} from '../../../subgraphs/ai/review/review-queue.logic.js';
import { caught } from './catching.js';

const queues = [
  { id: 'q-any', facilityId: null, specialty: null },
  { id: 'q-cardio', facilityId: null, specialty: 'cardiology' },
  { id: 'q-fac1', facilityId: 'fac-1', specialty: null },
  { id: 'q-fac1-cardio', facilityId: 'fac-1', specialty: 'cardiology' },
];

describe('queue routing', () => {
  it('picks facility + specialty over facility over specialty over the catch-all', () => {
    expect(selectQueue(queues, { facilityId: 'fac-1', specialty: 'cardiology' })?.id).toBe('q-fac1-cardio');
    expect(selectQueue(queues, { facilityId: 'fac-1', specialty: 'oncology' })?.id).toBe('q-fac1');
    expect(selectQueue(queues, { facilityId: 'fac-2', specialty: 'cardiology' })?.id).toBe('q-cardio');
    expect(selectQueue(queues, { facilityId: 'fac-2', specialty: 'oncology' })?.id).toBe('q-any');
  });

  it('finds nothing when no queue matches', () => {
    expect(selectQueue(queues.slice(1), { facilityId: 'fac-2', specialty: 'oncology' })).toBeUndefined();
    expect(selectQueue([], { facilityId: 'fac-1', specialty: 'cardiology' })).toBeUndefined();
  });
});

describe('claims and decisions', () => {
  const now = new Date('2026-11-21T10:00:00Z');
  const later = new Date('2026-11-21T10:15:00Z');
  const earlier = new Date('2026-11-21T09:45:00Z');
  const claimed = (by: string, until: Date) => ({ state: 'claimed', claimedBy: by, claimExpiresAt: until });

  it('lets anyone claim an open task or an expired claim, and the holder renew its own', () => {
    expect(mayClaim({ state: 'open', claimedBy: null, claimExpiresAt: null }, 'usr_a', now)).toBe(true);
    expect(mayClaim(claimed('usr_b', earlier), 'usr_a', now)).toBe(true);
    expect(mayClaim(claimed('usr_a', later), 'usr_a', now)).toBe(true);
    expect(mayClaim(claimed('usr_b', later), 'usr_a', now)).toBe(false);
    expect(mayClaim({ state: 'decided', claimedBy: 'usr_a', claimExpiresAt: later }, 'usr_a', now)).toBe(false);
  });

  it('explains each refused claim or decision with its own code', () => {
    const code = (task: Parameters<typeof refusal>[0], action: 'claim' | 'decide') => refusal(task, 'usr_a', now, action).code;
    expect(code({ state: 'decided', claimedBy: 'usr_b', claimExpiresAt: later }, 'decide')).toBe('review.already_decided');
    expect(code({ state: 'expired', claimedBy: null, claimExpiresAt: null }, 'decide')).toBe('review.expired');
    expect(code(claimed('usr_b', later), 'claim')).toBe('review.claimed_by_other');
    expect(code(claimed('usr_b', later), 'decide')).toBe('review.claimed_by_other');
    expect(code(claimed('usr_a', earlier), 'decide')).toBe('review.claim_expired');
    expect(code({ state: 'open', claimedBy: null, claimExpiresAt: null }, 'decide')).toBe('review.not_claimed');
    expect(refusal(claimed('usr_b', later), 'usr_a', now, 'claim').status).toBe(409);
  });

  it('needs a reason to reject and a real edit to edit', () => {
    expect(caught(AppError, () => validateReason('  ', true)).details).toMatchObject({ argument: 'reason' });
    expect(validateReason(null, false)).toBeNull();
    expect(validateReason(' wrong dose ', true)).toBe('wrong dose');
    expect(caught(AppError, () => validateEditedText('same', 'same')).code).toBe('BAD_USER_INPUT');
    expect(caught(AppError, () => validateEditedText(' ', 'x')).details).toMatchObject({ argument: 'text' });
    expect(validateEditedText('new', 'old')).toBe('new');
  });

  it('maps decisions onto the provenance record', () => {
    expect(provenanceAfterDecision('approved')).toEqual({
      status: 'completed',
      reviewState: 'approved',
      releases: true,
      errorCode: null,
    });
    expect(provenanceAfterDecision('edited')).toMatchObject({ reviewState: 'approved_with_edits', releases: true });
    expect(provenanceAfterDecision('rejected')).toEqual({
      status: 'rejected',
      reviewState: 'rejected',
      releases: false,
      errorCode: 'review.rejected',
    });
  });
});

describe('line diff', () => {
  it('marks kept, removed and added lines, merging runs', () => {
    const ops = lineDiff('Summary\nBP 150/95\nPlan: follow up', 'Summary\nBP 150/95 (repeat)\nPlan: follow up\nReviewed');
    expect(ops).toEqual([
      { op: '=', text: 'Summary' },
      { op: '-', text: 'BP 150/95' },
      { op: '+', text: 'BP 150/95 (repeat)' },
      { op: '=', text: 'Plan: follow up' },
      { op: '+', text: 'Reviewed' },
    ]);
    expect(diffSummary(ops)).toEqual({ linesRemoved: 1, linesAdded: 2 });
  });

  it('always reproduces both sides (property)', () => {
    const text = fc.array(fc.constantFrom('a', 'b', 'c', '', 'dd'), { maxLength: 12 }).map((lines) => lines.join('\n'));
    fc.assert(
      fc.property(text, text, (original, edited) => {
        expect(applyDiff(lineDiff(original, edited))).toEqual({ original, edited });
      }),
    );
  });
});

describe('queue input', () => {
  it('deduplicates members and refuses bad names and routing keys', () => {
    expect(
      validateQueueInput({
        name: 'Cardiology fac-1',
        facilityId: 'fac-1',
        specialty: null,
        members: ['usr_a', 'usr_a', 'svc-x'],
      }),
    ).toEqual({
      name: 'Cardiology fac-1',
      facilityId: 'fac-1',
      specialty: null,
      members: ['usr_a', 'svc-x'],
    });
    expect(caught(AppError, () => validateQueueInput({ name: '' })).details).toMatchObject({ argument: 'name' });
    expect(caught(AppError, () => validateQueueInput({ facilityId: ' ' })).details).toMatchObject({ argument: 'facilityId' });
    expect(caught(AppError, () => validateQueueInput({ members: [''] })).details).toMatchObject({ argument: 'members' });
    expect(validateQueueInput({})).toEqual({});
  });
});

describe('who sees and acts on which task', () => {
  const now = new Date('2026-11-21T10:00:00Z');

  it('shows the held output only to the holder of a live claim', () => {
    const claimed = { state: 'claimed', claimedBy: 'usr_a', claimExpiresAt: new Date('2026-11-21T10:05:00Z') };
    expect(holdsLiveClaim(claimed, 'usr_a', now)).toBe(true);
    expect(holdsLiveClaim(claimed, 'usr_b', now)).toBe(false);
    expect(holdsLiveClaim(claimed, 'usr_a', new Date('2026-11-21T10:05:00Z'))).toBe(false);
    expect(holdsLiveClaim({ ...claimed, state: 'decided' }, 'usr_a', now)).toBe(false);
  });

  it('lets members of the queue act, and nobody on a task in no queue', () => {
    expect(() => requireQueueMember('usr_a', { name: 'q', members: ['usr_a'] })).not.toThrow();
    expect(caught(AppError, () => requireQueueMember('usr_b', { name: 'q', members: ['usr_a'] }))).toMatchObject({
      code: 'review.not_a_member',
      status: 403,
    });
    expect(caught(AppError, () => requireQueueMember('usr_a', null))).toMatchObject({ code: 'review.unrouted', status: 409 });
  });

  it('lists for a reviewer the queues they are in, for an admin every queue, and unrouted tasks for admins only', () => {
    const member = ['q1', 'q2'];
    expect(taskQueueScope({}, member)).toEqual({ kind: 'queues', queueIds: member });
    expect(taskQueueScope({}, null)).toEqual({ kind: 'all' });
    expect(taskQueueScope({ queueId: 'q2' }, member)).toEqual({ kind: 'queues', queueIds: ['q2'] });
    expect(taskQueueScope({ queueId: 'q9' }, member)).toEqual({ kind: 'none' });
    expect(taskQueueScope({ queueId: 'q9' }, null)).toEqual({ kind: 'queues', queueIds: ['q9'] });
    expect(taskQueueScope({ unrouted: true, queueId: 'q1' }, null)).toEqual({ kind: 'unrouted' });
    expect(caught(AppError, () => taskQueueScope({ unrouted: true }, member))).toMatchObject({
      code: 'authz.scope_missing',
      status: 403,
    });
  });

  it('moves open tasks to their most specific queue, leaving those already there or matched by none', () => {
    const tasks = [
      { id: 't1', queueId: null, facilityId: 'fac-1', specialty: 'cardiology' },
      { id: 't2', queueId: 'q-any', facilityId: 'fac-2', specialty: 'oncology' },
      { id: 't3', queueId: 'q-any', facilityId: 'fac-1', specialty: 'oncology' },
      { id: 't4', queueId: null, facilityId: 'fac-1', specialty: 'cardiology' },
    ];
    expect(reroutePlan(queues, tasks)).toEqual(
      new Map([
        ['q-fac1-cardio', ['t1', 't4']],
        ['q-fac1', ['t3']],
      ]),
    );
    expect(reroutePlan(queues.slice(1, 2), tasks)).toEqual(new Map([['q-cardio', ['t1', 't4']]]));
  });

  it('changes only the routing fields an update gives (null widens to any)', () => {
    const current = { facilityId: 'fac-1', specialty: 'cardiology' };
    expect(routingAfterUpdate({}, current)).toEqual(current);
    expect(routingAfterUpdate({ specialty: null }, current)).toEqual({ facilityId: 'fac-1', specialty: null });
    expect(routingAfterUpdate({ facilityId: 'fac-2' }, current)).toEqual({ facilityId: 'fac-2', specialty: 'cardiology' });
  });

  it('accepts the HITL modes only', () => {
    expect(validateHitlMode('required')).toBe('required');
    expect(caught(AppError, () => validateHitlMode('sometimes')).details).toMatchObject({ argument: 'mode' });
  });
});

describe('the content of a decision', () => {
  const decidedAt = new Date('2026-11-21T10:00:00Z');
  const facts = { taskId: 'rvt_1', queueId: 'q1', decidedBy: 'usr_a', decidedAt, retentionHours: 24 };

  it('releases the held output, the edit with its diff, or nothing for a rejection with its reason', () => {
    expect(decisionContent('approved', 'held', {})).toEqual({ reason: null, released: 'held' });
    expect(decisionContent('edited', 'a\nb', { text: 'a\nc' })).toEqual({
      reason: null,
      released: 'a\nc',
      editDiff: lineDiff('a\nb', 'a\nc'),
    });
    expect(decisionContent('rejected', null, { reason: ' wrong dose ' })).toEqual({ reason: 'wrong dose', released: null });
  });

  it('refuses a decision on an output whose retention purged it, and a rejection without a reason first', () => {
    expect(caught(AppError, () => decisionContent('approved', null, {}))).toMatchObject({ code: 'review.expired', status: 409 });
    expect(caught(AppError, () => decisionContent('rejected', null, {})).details).toMatchObject({ argument: 'reason' });
    expect(caught(AppError, () => decisionContent('edited', 'same', { text: 'same' })).details).toMatchObject({
      argument: 'text',
    });
  });

  it('writes the decision on the provenance row, keeping released text for its retention from the decision on', () => {
    const approved = reviewedProvenance('approved', { reason: null, released: 'held' }, facts);
    expect(approved).toMatchObject({
      status: 'completed',
      reviewState: 'approved',
      errorCode: null,
      heldText: 'held',
      heldTextExpiresAt: new Date('2026-11-22T10:00:00Z'),
      review: { taskId: 'rvt_1', queueId: 'q1', decision: 'approved', decidedBy: 'usr_a', decidedAt: '2026-11-21T10:00:00.000Z' },
    });
    expect(approved.review.releasedTextHash).toMatch(/^sha256:/);
    expect(reviewedProvenance('rejected', { reason: 'no', released: null }, facts)).toMatchObject({
      status: 'rejected',
      errorCode: 'review.rejected',
      heldText: null,
      heldTextExpiresAt: null,
      review: { releasedTextHash: null },
    });
  });
});
