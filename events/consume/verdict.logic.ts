import { databaseUnreachable, sqlStateOf } from '../../platform/db/unreachable.js';
import { AppError, isAppError } from '../../platform/errors/errors.js';

export { databaseUnreachable, sqlStateOf };

/**
 * What the consumer runner does with a message after one attempt at it. Pure: it looks at the
 * error object only, so every rule here is unit-tested without a bus or a database.
 *
 * - ack: the attempt succeeded (its transaction committed);
 * - retry: redeliver after `afterMs`, spending one of the message's deliveries;
 * - deadLetter: no retry can help (or none is left): write the dead letter and terminate;
 * - hold: keep the message in hand without spending a delivery (the database is unreachable,
 *   which says nothing about the message: every message would fail alike until it is back).
 */
export type Verdict =
  | { kind: 'ack' }
  | { kind: 'retry'; afterMs: number }
  | { kind: 'deadLetter'; reason: 'permanent' | 'deliveries_exhausted' }
  | { kind: 'hold' };

export interface VerdictPolicy {
  /** Deliveries a message gets in all (spec: 5 redeliveries = 6). */
  maxDeliver: number;
  /** Delay before the next delivery after `deliveries` failed ones. */
  retryDelayMs: (deliveries: number) => number;
}

/** A failure no retry can fix: the runner dead-letters at once instead of redelivering. */
export function permanentFailure(message: string, details?: Record<string, unknown>): AppError {
  return new AppError('events.permanent_failure', message, { status: 422, details });
}

const PERMANENT_CODES = new Set(['events.permanent_failure', 'schema.invalid_event', 'schema.unknown_event']);

/**
 * Data exceptions (class 22: a NUL in text, a value too long, a bad number) and integrity
 * constraint violations (class 23): the same statement with the same data fails the same way.
 */
const PERMANENT_SQLSTATE = /^(22|23)[0-9A-Z]{3}$/;
/** Prisma's own codes for those classes when it maps the SQLSTATE away (value too long, unique, foreign key, null, range). */
const PERMANENT_PRISMA_CODES = new Set(['P2000', 'P2002', 'P2003', 'P2004', 'P2011', 'P2020', 'P2023']);

/** Whether retrying cannot change the outcome: an invalid event, a rule of ours, or data the database refuses. */
export function isPermanent(error: unknown): boolean {
  if (isAppError(error)) return PERMANENT_CODES.has(error.code);
  const sqlState = sqlStateOf(error);
  if (sqlState) return PERMANENT_SQLSTATE.test(sqlState);
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && PERMANENT_PRISMA_CODES.has(code);
}

/**
 * The verdict on an attempt: `error` undefined means it succeeded; `deliveries` counts this one
 * (1 on the first delivery).
 */
export function verdictFor(error: unknown, deliveries: number, policy: VerdictPolicy): Verdict {
  if (error === undefined) return { kind: 'ack' };
  if (databaseUnreachable(error)) return { kind: 'hold' };
  if (isPermanent(error)) return { kind: 'deadLetter', reason: 'permanent' };
  if (deliveries >= policy.maxDeliver) return { kind: 'deadLetter', reason: 'deliveries_exhausted' };
  return { kind: 'retry', afterMs: policy.retryDelayMs(deliveries) };
}
