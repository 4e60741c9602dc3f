import type { EventEnvelope } from '../../../events/envelope.js';
import { permanentFailure } from '../../../events/consumer-runner.js';
import type { Prisma, Tx } from '../../../platform/db/database.js';
import { newId } from '../../../platform/ids.js';
import { normalizeAuthors, type Cover, type LocaleMap, type TaxonomyRef } from '../course/course-metadata.logic.js';
import { findVersionsByLabels, insertVersions, type CourseVersionRow } from '../course-version/course-version.repo.js';
import { decideBecameLatest, parseVersionLabel } from '../course-version/semver.logic.js';
import { CATALOG_SYSTEM_ACTOR, COURSE_VERSION_SEQ_HEADER, type CatalogEmitter } from '../events.js';
import { INITIAL_VERSION_STATE } from '../lifecycle.logic.js';
import { courseEvent, LockedCourses } from './course-writes.js';
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

/** One consumed built event and where its events go (the runner's `ctx.emit` for it). */
export interface BuiltEvent {
  envelope: EventEnvelope;
  events: CatalogEmitter;
}

/**
 * PublishCourseVersion (with RegisterCourse when the slug is new), for one built event in its own
 * transaction. See publishCourseVersions, which it is with a batch of one.
 */
export async function publishCourseVersion(
  tx: Tx,
  envelope: EventEnvelope,
  deps: ConsumedEventDeps,
): Promise<CourseVersionRow | null> {
  const [version] = await publishCourseVersions(tx, [{ envelope, events: deps.events }], deps);
  return version;
}

/**
 * PublishCourseVersion for a batch of built events, in their order, in the caller's transaction:
 * the courses are created if needed, their metadata merged by the precedence rule, each version
 * created at the next per-course sequence under the course's row lock, and the events emitted
 * exactly as handling the events one transaction at a time would. The writes are set-based (a
 * statement per kind of row for the whole batch, see LockedCourses), which is what lets the
 * consumer keep up with thousands of events a second.
 *
 * - A built event for a label the course already has with the same package is a repeat (the
 *   content service re-announced it under a new event id): nothing changes, nothing is emitted
 *   (its result is null). The same label with a different package is a contradiction no retry
 *   resolves: a permanent failure, and the runner dead-letters that event.
 * - becameLatest is decided by semantic-version order, not by arrival.
 * - A version for an archived course is still recorded (the package exists); the course stays archived.
 */
export async function publishCourseVersions(
  tx: Tx,
  batch: readonly BuiltEvent[],
  deps: Omit<ConsumedEventDeps, 'events'>,
): Promise<Array<CourseVersionRow | null>> {
  const built = batch.map(({ envelope }) => {
    const p = envelope.payload as unknown as PlayPackageBuilt;
    return { envelope, p, tenantId: requireSameTenant(envelope, p.tenantId), label: parseLabel(p.versionLabel) };
  });
  const courses = await LockedCourses.lock(
    tx,
    built.map(({ envelope, p, tenantId }) => ({
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
    })),
    deps,
  );
  // The labels the batch names on courses that existed before it; versions it creates join them.
  const versions = new Map(
    (
      await findVersionsByLabels(
        tx,
        built.flatMap(({ p }, i) =>
          courses.existedBefore(i) ? [{ courseId: courses.current(i).id, versionLabel: p.versionLabel }] : [],
        ),
      )
    ).map((version) => [versionKey(version.courseId, version.versionLabel), version]),
  );

  const created: CourseVersionRow[] = [];
  const results: Array<CourseVersionRow | null> = [];
  for (const [i, { envelope, p, tenantId, label }] of built.entries()) {
    const { events } = batch[i];
    const { course } = await courses.apply(i, events);
    const existing = versions.get(versionKey(course.id, p.versionLabel));
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
          eventId: envelope.eventId,
        });
      }
      deps.logger.info(
        { courseId: course.id, versionLabel: p.versionLabel, eventId: envelope.eventId },
        'version already published; nothing to do',
      );
      results.push(null);
      continue;
    }

    const becameLatest = decideBecameLatest(course.latestVersionLabel, p.versionLabel);
    const sequence = course.versionSeq + 1;
    const now = new Date();
    courses.replace({
      ...course,
      versionSeq: sequence,
      ...(becameLatest ? { latestVersionLabel: p.versionLabel } : {}),
      updatedAt: now,
    });
    const version: CourseVersionRow = {
      id: newId('courseVersion'),
      tenantId,
      courseId: course.id,
      versionLabel: p.versionLabel,
      ...label,
      publishedBy: p.publishedBy,
      durationMinutes: p.durationMinutes,
      estimatedReadingMinutes: p.estimatedReadingMinutes ?? null,
      locales: p.locales,
      moduleSummaries: (p.moduleSummaries as Prisma.JsonArray | undefined) ?? null,
      playPackageId: p.playPackage.playPackageId,
      playPackageSha256: p.playPackage.sha256,
      playPackageFormat: p.playPackage.format,
      changelog: (p.changelog as Prisma.JsonObject | undefined) ?? null,
      state: INITIAL_VERSION_STATE,
      becameLatest,
      sequence,
      sourceEventId: envelope.eventId,
      createdAt: now,
      updatedAt: now,
    };
    versions.set(versionKey(course.id, p.versionLabel), version);
    created.push(version);
    results.push(version);

    await events.emit({
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
  }
  await courses.save(tx);
  await insertVersions(tx, created);
  return results;
}

const versionKey = (courseId: string, versionLabel: string) => `${courseId}\u0000${versionLabel}`;

function parseLabel(value: string) {
  try {
    return parseVersionLabel(value);
  } catch (error) {
    throw permanentFailure((error as Error).message, { field: 'versionLabel' });
  }
}
