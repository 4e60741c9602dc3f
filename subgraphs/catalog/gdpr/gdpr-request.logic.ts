import { readEnumValue } from '../../shared/enum-value.logic.js';

/** The request types the catalog applies (the spec's HandleGdprRequest). */
export const GDPR_REQUEST_TYPES = ['access', 'rectification', 'erasure'] as const;
export type GdprRequestType = (typeof GDPR_REQUEST_TYPES)[number];

/** Why a request was acknowledged without being applied: a closed set (a metric label). */
export const NOT_APPLIED_REASONS = ['unknown_request_type', 'subject_type_not_held', 'subject_not_a_user_id'] as const;
export type NotAppliedReason = (typeof NOT_APPLIED_REASONS)[number];

export type GdprRequestDecision =
  | { kind: 'apply'; requestType: GdprRequestType }
  | { kind: 'not_applied'; reason: NotAppliedReason }
  | { kind: 'invalid'; message: string };

/**
 * What the catalog does with a data-subject request. A request type that is not a possible enum
 * value (empty, not a token) is invalid: no retry or person can read it, so it is dead-lettered.
 * A request type the catalog does not know (enum widening, e.g. `restriction`) is acknowledged,
 * recorded and counted for a person to look at, never dead-lettered: the spec's consumers must
 * tolerate unknown enum values. The catalog holds only users (course authors, publishers), so any
 * other subject type, or a subject id that is not a user id, is recorded and left.
 */
export function decideGdprRequest(request: {
  subjectType: string;
  requestType: unknown;
  subjectIsUserId: boolean;
}): GdprRequestDecision {
  const reading = readEnumValue(request.requestType, GDPR_REQUEST_TYPES);
  if (reading === 'invalid') {
    return { kind: 'invalid', message: `GDPR request type ${JSON.stringify(request.requestType)} is not an enum value` };
  }
  if (request.subjectType !== 'user') return { kind: 'not_applied', reason: 'subject_type_not_held' };
  if (reading === 'unknown') return { kind: 'not_applied', reason: 'unknown_request_type' };
  if (!request.subjectIsUserId) return { kind: 'not_applied', reason: 'subject_not_a_user_id' };
  return { kind: 'apply', requestType: request.requestType as GdprRequestType };
}
