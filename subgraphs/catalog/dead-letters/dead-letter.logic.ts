import type { DeadLetterFilter } from '../../../events/dead-letters/dead-letters.js';
import { isValidSubject } from '../../../events/bus/subject.logic.js';
import { AppError, badInput } from '../../../platform/errors/errors.js';

export const MAX_REPLAY = 1000;

export interface DeadLetterFilterInputValues {
  subject?: string | null;
  eventType?: string | null;
  from?: Date | null;
  to?: Date | null;
  eventIds?: string[] | null;
  maxCount?: number | null;
  dryRun?: boolean | null;
}

/** The members that choose letters; maxCount only bounds, dryRun only decides what is done. */
const SELECTING: ReadonlyArray<keyof DeadLetterFilterInputValues> = ['subject', 'eventType', 'from', 'to', 'eventIds'];

/**
 * A replay must say which letters it means: an empty filter would send every letter of the tenant
 * back at once. `subject: ">"` is the explicit way to mean all of them. A dry run changes nothing,
 * so it may list without one.
 */
function requireSelection(input: DeadLetterFilterInputValues): void {
  if (input.dryRun || SELECTING.some((member) => input[member] != null)) return;
  throw new AppError(
    'events.replay_filter_required',
    'A replay needs a filter: give subject, eventType, from, to or eventIds (subject ">" replays every letter), or set dryRun to list them',
    { status: 400, details: { field: 'filter' } },
  );
}

/** Checks a replay filter; the answer is bounded (maxCount) so one call never floods the streams. */
export function validateDeadLetterFilter(input: DeadLetterFilterInputValues): DeadLetterFilter & { maxCount: number } {
  if (input.subject != null && !isValidSubject(input.subject, true)) {
    throw badInput('filter.subject is not a NATS subject (tokens separated by ".", * and a final > allowed)', {
      field: 'filter.subject',
    });
  }
  if (input.eventType != null && !/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*){2,}$/.test(input.eventType)) {
    throw badInput('filter.eventType is not an event type such as content.play_package.built', { field: 'filter.eventType' });
  }
  if (input.from && input.to && input.from.getTime() >= input.to.getTime()) {
    throw badInput('filter.from must be before filter.to', { field: 'filter.from' });
  }
  if (
    input.eventIds != null &&
    (input.eventIds.length === 0 || input.eventIds.length > MAX_REPLAY || input.eventIds.some((id) => !id || id.length > 128))
  ) {
    throw badInput(`filter.eventIds must hold 1 to ${MAX_REPLAY} ids of at most 128 characters`, { field: 'filter.eventIds' });
  }
  const maxCount = input.maxCount ?? MAX_REPLAY;
  if (!Number.isInteger(maxCount) || maxCount < 1 || maxCount > MAX_REPLAY) {
    throw badInput(`filter.maxCount must be between 1 and ${MAX_REPLAY}`, { field: 'filter.maxCount' });
  }
  requireSelection(input);
  return {
    ...(input.subject != null ? { subject: input.subject } : {}),
    ...(input.eventType != null ? { eventType: input.eventType } : {}),
    ...(input.from ? { from: input.from } : {}),
    ...(input.to ? { to: input.to } : {}),
    ...(input.eventIds != null ? { eventIds: input.eventIds } : {}),
    maxCount,
    dryRun: input.dryRun ?? false,
  };
}
