import { describe, expect, it } from 'vitest';
import { AppError } from '../../../platform/errors/errors.js';
import {
  queueChangeSteers,
  requireIndependentReviewer,
  selfReviewReason,
} from '../../../subgraphs/ai/review/separation.logic.js';

describe('separation of duties in review', () => {
  it('bars the requester and whoever steered the waiting task, nobody else', () => {
    const task = { requester: 'usr_A', steeredBy: ['usr_ADMIN'] };
    expect(selfReviewReason('usr_A', task)).toBe('requester');
    expect(selfReviewReason('usr_ADMIN', task)).toBe('steered_while_pending');
    expect(selfReviewReason('usr_REV', task)).toBeNull();
  });

  it('refuses with 403 review.self_review_forbidden and the reason', () => {
    let caught: unknown;
    try {
      requireIndependentReviewer('usr_A', { requester: 'usr_A', steeredBy: [] });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(AppError);
    expect(caught).toMatchObject({ code: 'review.self_review_forbidden', status: 403, details: { reason: 'requester' } });
    expect(() => requireIndependentReviewer('usr_REV', { requester: 'usr_A', steeredBy: ['usr_ADMIN'] })).not.toThrow();
  });

  it('counts membership and routing changes as steering, a rename not', () => {
    expect(queueChangeSteers({ name: 'renamed' })).toBe(false);
    expect(queueChangeSteers({ members: ['usr_X'] })).toBe(true);
    expect(queueChangeSteers({ facilityId: null })).toBe(true);
    expect(queueChangeSteers({ specialty: 'cardiology' })).toBe(true);
  });
});
