import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors.js';
import {
  applyDiff,
  diffSummary,
  lineDiff,
  mayClaim,
  provenanceAfterDecision,
  refusal,
  selectQueue,
  validateEditedText,
  validateQueueInput,
  validateReason,
} from '../../../subgraphs/ai/review/review.logic.js';
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
