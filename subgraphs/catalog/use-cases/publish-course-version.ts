import type { EventEnvelope } from '../../../events/envelope.js';
import { permanentFailure } from '../../../events/consumer-runner.js';
import type { Prisma, Tx } from '../../../platform/db/database.js';
import { newId } from '../../../platform/ids.js';
import { normalizeAuthors, type Cover, type LocaleMap, type TaxonomyRef } from '../course/course-metadata.logic.js';
import { updateCourse } from '../course/course.repo.js';
import { createVersion, findVersionByLabel, type CourseVersionRow } from '../course-version/course-version.repo.js';
import { decideBecameLatest, parseVersionLabel } from '../course-version/semver.logic.js';
import { CATALOG_SYSTEM_ACTOR, COURSE_VERSION_SEQ_HEADER } from '../events.js';
import { courseEvent, registerOrMergeCourse } from './course-writes.js';
import { requireSameTenant, stampOf, type ConsumedEventDeps } from './consumed.js';

/** content.play_package.built v1, as its schema admits it (the runner validated it). */
export interface PlayPackageBuilt {
  courseDraftId: string;
  tenantId: string;
  slug: string;
  title: LocaleMap;
  description?: LocaleMap;
  defaultLocale: string;
  authors?: Array<{ userId: string; role?: string; displayName?: string }>;
  taxonomy?: TaxonomyRef[];
  tags?: string[];
  cover?: Cover;
  versionLabel: string;
  durationMinutes: number;
  estimatedReadingMinutes?: number;
  locales: string[];
  moduleSummaries?: Array<{
    id: string;
    title: LocaleMap;
    lessonCount: number;
    durationMinutes: number;
    hasAssessments: boolean;
  }>;
  playPackage: { playPackageId: string; sha256: string; format: string };
  changelog?: LocaleMap;
  publishedBy: string;
}

/**
 * PublishCourseVersion (with RegisterCourse when the slug is new): one transaction creates the
 * course if needed, merges the package's metadata by the precedence rule, creates the version at
 * the next per-course sequence under the course's row lock, and writes the events.
 *
 * - A built event for a label the course already has with the same package is a repeat (the
 *   content service re-announced it under a new event id): nothing changes, nothing is emitted.
 *   The same label with a different package is a contradiction no retry resolves: dead letter.
 * - becameLatest is decided by semantic-version order, not by arrival.
 * - A version for an archived course is still recorded (the package exists); the course stays archived.
 */
export async function publishCourseVersion(
  tx: Tx,
  envelope: EventEnvelope,
  deps: ConsumedEventDeps,
): Promise<CourseVersionRow | null> {
  const p = envelope.payload as unknown as PlayPackageBuilt;
  const tenantId = requireSameTenant(envelope, p.tenantId);
  const label = parseLabel(p.versionLabel);

  const { course } = await registerOrMergeCourse(
    tx,
    {
      tenantId,
      slug: p.slug,
      values: {
        title: p.title,
        defaultLocale: p.defaultLocale,
        description: p.description,
        authors: p.authors ? normalizeAuthors(p.authors) : undefined,
        taxonomy: p.taxonomy,
        tags: p.tags,
        cover: p.cover,
        sourceDraftId: p.courseDraftId,
      },
      stamp: stampOf(envelope, 'built'),
      actor: CATALOG_SYSTEM_ACTOR,
    },
    deps,
  );

  const existing = await findVersionByLabel(tx, course.id, p.versionLabel);
  if (existing) {
    const samePackage =
      existing.playPackageId === p.playPackage.playPackageId &&
      existing.playPackageSha256 === p.playPackage.sha256 &&
      existing.playPackageFormat === p.playPackage.format;
    if (!samePackage) {
      throw permanentFailure(`Course ${course.id} already has version ${p.versionLabel} with a different play package`, {
        courseId: course.id,
        versionLabel: p.versionLabel,
        existingPlayPackageId: existing.playPackageId,
      });
    }
    deps.logger.info(
      { courseId: course.id, versionLabel: p.versionLabel, eventId: envelope.eventId },
      'version already published; nothing to do',
    );
    return null;
  }

  const becameLatest = decideBecameLatest(course.latestVersionLabel, p.versionLabel);
  const sequence = course.versionSeq + 1;
  await updateCourse(tx, course.id, { versionSeq: sequence, ...(becameLatest ? { latestVersionLabel: p.versionLabel } : {}) });
  const version = await createVersion(tx, {
    id: newId('courseVersion'),
    tenantId,
    courseId: course.id,
    versionLabel: p.versionLabel,
    ...label,
    publishedBy: p.publishedBy,
    durationMinutes: p.durationMinutes,
    estimatedReadingMinutes: p.estimatedReadingMinutes ?? null,
    locales: p.locales,
    moduleSummaries: (p.moduleSummaries as Prisma.InputJsonValue | undefined) ?? undefined,
    playPackageId: p.playPackage.playPackageId,
    playPackageSha256: p.playPackage.sha256,
    playPackageFormat: p.playPackage.format,
    changelog: (p.changelog as Prisma.InputJsonValue | undefined) ?? undefined,
    becameLatest,
    sequence,
    sourceEventId: envelope.eventId,
  });

  await deps.events.emit({
    eventType: 'catalog.course_version.published',
    payload: {
      courseVersionId: version.id,
      courseId: course.id,
      versionLabel: version.versionLabel,
      publishedBy: version.publishedBy,
      durationMinutes: version.durationMinutes,
      ...(p.estimatedReadingMinutes !== undefined ? { estimatedReadingMinutes: p.estimatedReadingMinutes } : {}),
      locales: version.locales,
      ...(p.moduleSummaries !== undefined ? { moduleSummaries: p.moduleSummaries } : {}),
      playPackage: p.playPackage,
      becameLatest,
      ...(p.changelog !== undefined ? { changelog: p.changelog } : {}),
    },
    ...courseEvent(course, CATALOG_SYSTEM_ACTOR),
    // Consumers can check a course's versions arrive gap-free and in order without parsing labels.
    headers: { [COURSE_VERSION_SEQ_HEADER]: String(sequence) },
  });
  return version;
}

function parseLabel(value: string) {
  try {
    return parseVersionLabel(value);
  } catch (error) {
    throw permanentFailure((error as Error).message, { field: 'versionLabel' });
  }
}
