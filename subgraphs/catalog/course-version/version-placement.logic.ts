import { decideBecameLatest } from './semver.logic.js';

/** Where a new version goes: the course's next sequence, and whether it becomes latest (semantic-version order). */
export interface Placement {
  sequence: number;
  becameLatest: boolean;
  versionLabel: string;
}

/** What placing a version reads and writes of its course. */
interface VersionedCourse {
  versionSeq: number;
  latestVersionLabel: string | null;
  updatedAt: Date;
}

export function placeVersion(
  course: Pick<VersionedCourse, 'versionSeq' | 'latestVersionLabel'>,
  versionLabel: string,
): Placement {
  return {
    sequence: course.versionSeq + 1,
    becameLatest: decideBecameLatest(course.latestVersionLabel, versionLabel),
    versionLabel,
  };
}

/** The course with the version placed: its sequence, and its latest label when the version became latest. */
export function withVersion<C extends VersionedCourse>(course: C, placement: Placement, now: Date): C {
  return {
    ...course,
    versionSeq: placement.sequence,
    ...(placement.becameLatest ? { latestVersionLabel: placement.versionLabel } : {}),
    updatedAt: now,
  };
}
