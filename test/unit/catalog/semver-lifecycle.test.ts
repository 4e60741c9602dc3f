import { describe, expect, it } from 'vitest';
import { placeVersion, withVersion } from '../../../subgraphs/catalog/course-version/version-placement.logic.js';
import { AppError } from '../../../platform/errors/errors.js';
import {
  compareVersions,
  decideBecameLatest,
  parseVersionLabel,
} from '../../../subgraphs/catalog/course-version/semver.logic.js';
import {
  decideCourseTransition,
  decideVersionTransition,
  requireEditableCourse,
  requireReason,
  requireVisibility,
} from '../../../subgraphs/catalog/lifecycle.logic.js';
import { errorOf } from './support.js';

const codeOf = (fn: () => unknown) => errorOf(fn)?.code;

describe('version labels', () => {
  it('parses major.minor.patch', () => {
    expect(parseVersionLabel('10.0.3')).toEqual({ major: 10, minor: 0, patch: 3 });
  });

  it.each(['1.2', '1.2.3.4', 'v1.2.3', '01.2.3', '1.-2.3', '1.2.3-beta', '', '1.2.2147483648'])(
    'refuses "%s" as BAD_USER_INPUT',
    (label) => {
      expect(codeOf(() => parseVersionLabel(label))).toBe('BAD_USER_INPUT');
    },
  );

  it('orders numerically, not as text', () => {
    expect(compareVersions(parseVersionLabel('1.10.0'), parseVersionLabel('1.9.9'))).toBe(1);
    expect(compareVersions(parseVersionLabel('2.0.0'), parseVersionLabel('10.0.0'))).toBe(-1);
    expect(compareVersions(parseVersionLabel('1.2.3'), parseVersionLabel('1.2.3'))).toBe(0);
  });

  it('makes a version latest iff it is greater than the current latest', () => {
    expect(decideBecameLatest(null, '0.0.0')).toBe(true);
    expect(decideBecameLatest('1.3.0', '1.4.0')).toBe(true);
    expect(decideBecameLatest('1.3.0', '1.2.9')).toBe(false);
    expect(decideBecameLatest('1.3.0', '1.3.0')).toBe(false);
    expect(decideBecameLatest('1.9.0', '1.10.0')).toBe(true);
  });
});

describe('course lifecycle', () => {
  it('archives a registered course', () => {
    expect(decideCourseTransition('registered', 'archived')).toEqual({ from: 'registered', to: 'archived', changed: true });
  });

  it('treats archiving an archived course as a no-op', () => {
    expect(decideCourseTransition('archived', 'archived').changed).toBe(false);
  });

  it('refuses to leave archived with lifecycle.illegal_transition (409)', () => {
    try {
      decideCourseTransition('archived', 'registered');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe('lifecycle.illegal_transition');
      expect((error as AppError).status).toBe(409);
    }
  });

  it('refuses an unknown stored state rather than guessing', () => {
    expect(codeOf(() => decideCourseTransition('suspended', 'archived'))).toBe('lifecycle.illegal_transition');
  });

  it('refuses admin edits of an archived course', () => {
    expect(codeOf(() => requireEditableCourse('archived'))).toBe('lifecycle.illegal_transition');
    expect(codeOf(() => requireEditableCourse('registered'))).toBeUndefined();
  });
});

describe('course version lifecycle', () => {
  it.each([
    ['published', 'deprecated'],
    ['published', 'withdrawn'],
    ['deprecated', 'withdrawn'],
  ] as const)('allows %s -> %s', (from, to) => {
    expect(decideVersionTransition(from, to).changed).toBe(true);
  });

  it.each([
    ['withdrawn', 'deprecated'],
    ['withdrawn', 'published'],
    ['deprecated', 'published'],
  ] as const)('refuses %s -> %s', (from, to) => {
    expect(codeOf(() => decideVersionTransition(from, to))).toBe('lifecycle.illegal_transition');
  });

  it.each(['deprecated', 'withdrawn'] as const)('treats %s -> %s as a no-op', (state) => {
    expect(decideVersionTransition(state, state).changed).toBe(false);
  });
});

describe('visibility and reasons', () => {
  it('accepts the visibilities the spec shows and refuses others', () => {
    expect(requireVisibility('marketplace')).toBe('marketplace');
    expect(codeOf(() => requireVisibility('Public'))).toBe('BAD_USER_INPUT');
  });

  it('needs a non-blank reason', () => {
    expect(requireReason('  superseded ')).toBe('superseded');
    expect(codeOf(() => requireReason('   '))).toBe('BAD_USER_INPUT');
    expect(codeOf(() => requireReason(undefined))).toBe('BAD_USER_INPUT');
    expect(codeOf(() => requireReason('x'.repeat(1001)))).toBe('BAD_USER_INPUT');
  });
});

describe('placing a new version on its course', () => {
  const now = new Date('2026-11-26T10:00:00.000Z');
  const course = { versionSeq: 2, latestVersionLabel: '1.1.0', updatedAt: new Date(0), slug: 'kept' };

  it('takes the next sequence and becomes latest only above the latest label', () => {
    const higher = placeVersion(course, '1.2.0');
    expect(higher).toEqual({ sequence: 3, becameLatest: true, versionLabel: '1.2.0' });
    expect(withVersion(course, higher, now)).toEqual({ ...course, versionSeq: 3, latestVersionLabel: '1.2.0', updatedAt: now });
    const lower = placeVersion(course, '1.0.5');
    expect(lower).toEqual({ sequence: 3, becameLatest: false, versionLabel: '1.0.5' });
    expect(withVersion(course, lower, now)).toEqual({ ...course, versionSeq: 3, updatedAt: now });
    expect(placeVersion({ versionSeq: 0, latestVersionLabel: null }, '0.1.0').becameLatest).toBe(true);
  });
});
