import { badInput } from '../../../platform/errors/errors.js';
import { validateResidency } from '../routing/routing.logic.js';

const HASH_RE = /^(?:sha256:)?([0-9a-f]{64})$/i;
const FUTURE_SKEW_MS = 5 * 60_000;

/**
 * A signed data-protection impact assessment as an admin records it: the residency it covers, who
 * signed and when, and the sha256 of the signed document (the document itself lives elsewhere).
 */
export function validateAssessment(
  input: { residency: string; signedBy: string; signedAt: Date; documentHash: string },
  now: Date,
): { residency: string; signedBy: string; signedAt: Date; documentHash: string } {
  const residency = validateResidency(input.residency);
  const signedBy = input.signedBy.trim();
  if (signedBy === '' || signedBy.length > 200) throw badInput('signedBy is 1-200 characters', { argument: 'signedBy' });
  if (Number.isNaN(input.signedAt.getTime()) || input.signedAt.getTime() > now.getTime() + FUTURE_SKEW_MS) {
    throw badInput('signedAt must be a date that is not in the future', { argument: 'signedAt' });
  }
  const hash = HASH_RE.exec(input.documentHash.trim());
  if (!hash)
    throw badInput('documentHash is a sha256 digest: 64 hex characters, optionally prefixed sha256:', {
      argument: 'documentHash',
    });
  return { residency, signedBy, signedAt: input.signedAt, documentHash: `sha256:${hash[1].toLowerCase()}` };
}
