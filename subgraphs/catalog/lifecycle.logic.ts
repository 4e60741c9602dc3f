import { AppError } from '../../platform/errors/errors.js';

/**
 * The lifecycles the event names imply (spec, "States and transitions" names states but no
 * transitions; these are ours):
 *
 *   course:          registered -> archived
 *   course version:  published -> deprecated -> withdrawn, published -> withdrawn
 *
 * Nothing goes back: an archived course is not restored, a withdrawn version is not re-published
 * (a fixed package is a new version label). Asking for the state an aggregate is already in is
 * not an error but a no-op (`changed: false`, no event): the fact already happened, so a client
 * retrying after a lost response gets success, and consumers are not told the same fact twice.
 */
export const COURSE_STATES = ['registered', 'archived'] as const;
export type CourseState = (typeof COURSE_STATES)[number];

export const VERSION_STATES = ['published', 'deprecated', 'withdrawn'] as const;
export type VersionState = (typeof VERSION_STATES)[number];

/** The state RegisterCourse creates a course in, and a version is published in. */
export const INITIAL_COURSE_STATE: CourseState = 'registered';
export const INITIAL_VERSION_STATE: VersionState = 'published';

const COURSE_TRANSITIONS: Record<CourseState, readonly CourseState[]> = {
  registered: ['archived'],
  archived: [],
};

const VERSION_TRANSITIONS: Record<VersionState, readonly VersionState[]> = {
  published: ['deprecated', 'withdrawn'],
  deprecated: ['withdrawn'],
  withdrawn: [],
};

export interface TransitionDecision<S extends string> {
  from: S;
  to: S;
  changed: boolean;
}

function decide<S extends string>(what: string, table: Record<S, readonly S[]>, from: string, to: S): TransitionDecision<S> {
  if (!(from in table)) {
    // A state written by a newer release this one does not know: refuse rather than guess.
    throw new AppError('lifecycle.illegal_transition', `${what} is in an unknown state "${from}"`, { details: { from, to } });
  }
  const current = from as S;
  if (current === to) return { from: current, to, changed: false };
  if (!table[current].includes(to)) {
    throw new AppError('lifecycle.illegal_transition', `A ${what} cannot go from ${current} to ${to}`, {
      details: { from: current, to },
    });
  }
  return { from: current, to, changed: true };
}

export function decideCourseTransition(from: string, to: CourseState): TransitionDecision<CourseState> {
  return decide('course', COURSE_TRANSITIONS, from, to);
}

export function decideVersionTransition(from: string, to: VersionState): TransitionDecision<VersionState> {
  return decide('course version', VERSION_TRANSITIONS, from, to);
}

/**
 * Admin edits (metadata, visibility) need a live course. Consumed events still apply to an
 * archived course: they report facts of other systems, and a GDPR request must reach every course.
 */
export function requireEditableCourse(state: string): void {
  if (state === 'archived') {
    throw new AppError('lifecycle.illegal_transition', 'The course is archived; archived courses cannot be edited', {
      details: { state },
    });
  }
}

/** Values shown by the spec; the set is not given, so the API accepts these and nothing else. */
export const VISIBILITIES = ['org', 'marketplace'] as const;
export const DEFAULT_VISIBILITY = 'org';

export function requireVisibility(value: string): string {
  if (!(VISIBILITIES as readonly string[]).includes(value)) {
    throw new AppError('BAD_USER_INPUT', `visibility must be one of ${VISIBILITIES.join(', ')}`, {
      details: { argument: 'to', allowed: [...VISIBILITIES] },
    });
  }
  return value;
}

/** A reason is free text for people; it must say something and stay a reasonable size. */
export function requireReason(value: string | null | undefined, argument = 'reason'): string {
  const reason = (value ?? '').trim();
  if (!reason) throw new AppError('BAD_USER_INPUT', `${argument} is required and may not be blank`, { details: { argument } });
  if (reason.length > 1000)
    throw new AppError('BAD_USER_INPUT', `${argument} is longer than 1000 characters`, { details: { argument } });
  return reason;
}
