import type { CourseVersionRow } from './course-version.repo.js';
import type { CourseVersion, ModuleSummary } from './course-version.type.js';

export function toCourseVersion(row: CourseVersionRow): CourseVersion {
  return {
    courseVersionId: row.id,
    courseId: row.courseId,
    versionLabel: row.versionLabel,
    publishedBy: row.publishedBy,
    durationMinutes: row.durationMinutes,
    estimatedReadingMinutes: row.estimatedReadingMinutes,
    locales: row.locales,
    moduleSummaries: (row.moduleSummaries as ModuleSummary[] | null) ?? null,
    playPackage: { playPackageId: row.playPackageId, sha256: row.playPackageSha256, format: row.playPackageFormat },
    becameLatest: row.becameLatest,
    changelog: (row.changelog as Record<string, string> | null) ?? null,
    state: row.state,
    sequence: row.sequence,
    createdAt: row.createdAt,
  };
}
