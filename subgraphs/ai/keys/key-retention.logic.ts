import { AppError, badInput } from '../../../platform/errors/errors.js';

/**
 * Rollback of phase 1: "re-enable the direct provider key in the consumer service environment;
 * keys stay in the vault 30 days after cutover" (PROVIDER_KEY_RETENTION_DAYS).
 */
export function retainUntil(cutoverAt: Date, retentionDays: number): Date {
  return new Date(cutoverAt.getTime() + retentionDays * 86_400_000);
}

/** Strictly after the window: on its last day the key may still be needed for a rollback. */
export function mayRetire(cutoverAt: Date, retentionDays: number, now: Date): boolean {
  return retainUntil(cutoverAt, retentionDays).getTime() < now.getTime();
}

export function requireRetirable(cutover: { cutoverAt: Date; retiredAt: Date | null }, retentionDays: number, now: Date): void {
  if (cutover.retiredAt) {
    throw new AppError('keys.already_retired', 'The key was already retired', {
      status: 409,
      details: { retiredAt: cutover.retiredAt.toISOString() },
    });
  }
  if (!mayRetire(cutover.cutoverAt, retentionDays, now)) {
    const until = retainUntil(cutover.cutoverAt, retentionDays);
    throw new AppError('keys.retention_window_open', `The key must stay available for rollback until ${until.toISOString()}`, {
      status: 409,
      details: { retainUntil: until.toISOString(), retentionDays },
    });
  }
}

const SERVICE_RE = /^[a-z][a-z0-9-]{0,62}$/;
const PROVIDER_RE = /^[a-z][a-z0-9-]{0,62}$/;
/** A cutover recorded in the future is a typo, except for clock skew. */
const FUTURE_SKEW_MS = 5 * 60_000;

export function validateCutover(input: { serviceName: string; provider: string; cutoverAt: Date }, now: Date) {
  if (!SERVICE_RE.test(input.serviceName)) {
    throw badInput('serviceName is a lower-case service name (letters, digits, -)', { argument: 'serviceName' });
  }
  if (!PROVIDER_RE.test(input.provider))
    throw badInput('provider is a lower-case provider name (letters, digits, -)', { argument: 'provider' });
  if (Number.isNaN(input.cutoverAt.getTime()) || input.cutoverAt.getTime() > now.getTime() + FUTURE_SKEW_MS) {
    throw badInput('cutoverAt must be a date that is not in the future', { argument: 'cutoverAt' });
  }
  return input;
}
