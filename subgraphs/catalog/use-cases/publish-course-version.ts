import type { ConsumedEnvelope } from '../../../events/envelope.js';
import { permanentFailure } from '../../../events/consume/verdict.logic.js';
import type { Prisma, Tx } from '../../../platform/db/database.js';
import { newId } from '../../../platform/ids.js';
import { normalizeAuthors, type Cover, type LocaleMap, type TaxonomyRef } from '../course/course-metadata.logic.js';
import { findVersionsByLabels, insertVersions, type CourseVersionRow } from '../course-version/course-version.repo.js';
import { parseVersionLabel } from '../course-version/semver.logic.js';
import { placeVersion, withVersion, type Placement } from '../course-version/version-placement.logic.js';
import { CATALOG_SYSTEM_ACTOR, COURSE_VERSION_SEQ_HEADER, type CatalogEmitter } from '../outbox-port.js';
import { INITIAL_VERSION_STATE } from '../lifecycle.logic.js';
import type { CourseRow } from '../course/course.repo.js';
import { courseEvent } from './course-payloads.logic.js';
import { LockedCourses, type CourseSource } from './course-writes.js';
import { requireSameTenant, requireValidLocales, consumedEventStamp, type ConsumedEventDeps } from './consumed-event-rules.js';
import { readEnumValue } from '../../shared/enum-value.logic.js';
import { builtLocaleFields, resolvePublishedBy } from './consumed-payload.logic.js';
import { holdUnknownFormats } from './hold-play-packages.js';
import { PLAY_PACKAGE_FORMATS } from '../course-version/play-package.logic.js';

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
  /** Optional: see resolvePublishedBy. */
  publishedBy?: string;
}

/** One consumed built event and where its events go (the runner's `ctx.emit` for it). */
export interface BuiltEvent {
  envelope: ConsumedEnvelope;
  events: CatalogEmitter;
}

/**
 * PublishCourseVersion (with RegisterCourse when the slug is new), for one built event in its own
 * transaction. See publishCourseVersions, which it is with a batch of one.
 */
export async function publishCourseVersion(
  tx: Tx,
  envelope: ConsumedEnvelope,
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
  const checked = batch.map(({ envelope, events }) => checkedBuiltEvent(envelope, events, deps.playPackageFormats));
  await holdUnknownFormats(
    tx,
    checked.filter((event) => event.held),
    deps,
  );
  const built = checked.filter((event) => !event.held);
  const versionsByEvent = await publishKnownFormats(tx, built, deps);
  return checked.map((event) => versionsByEvent.get(event) ?? null);
}

/** The built events of known formats, in their order: the version each created (none for a repeat). */
async function publishKnownFormats(
  tx: Tx,
  built: readonly CheckedBuiltEvent[],
  deps: Omit<ConsumedEventDeps, 'events'>,
): Promise<Map<CheckedBuiltEvent, CourseVersionRow>> {
  const results = new Map<CheckedBuiltEvent, CourseVersionRow>();
  if (!built.length) return results;
  const sources = new Map(built.map((event) => [event, courseSourceOf(event)]));
  const courses = await LockedCourses.lock(tx, [...sources.values()], deps);
  const versions = await labelsOnExistingCourses(tx, built, sources, courses);
  const created: CourseVersionRow[] = [];
  for (const event of built) {
    const source = sources.get(event)!;
    const before = courses.current(source);
    const existing = versions.get(versionKey(before.id, event.p.versionLabel));
    if (existing) {
      requireSamePackage(existing, before, event);
      await courses.registerOrMerge(source, event.events);
      deps.logger.info(
        { courseId: before.id, versionLabel: event.p.versionLabel, eventId: event.envelope.eventId },
        'version already published; nothing to do',
      );
      continue;
    }
    const placement = placeVersion(before, event.p.versionLabel);
    const now = deps.clock.now();
    const { course } = await courses.registerOrMerge(source, event.events, (row) => withVersion(row, placement, now));
    // A publisher erased before this event arrived is kept as the erased id (where permitted).
    const publisher = courses.userAsKept(source, event.publishedBy);
    const version = await publishVersion(course, { ...event, publishedBy: publisher }, placement, now);
    versions.set(versionKey(course.id, event.p.versionLabel), version);
    created.push(version);
    results.set(event, version);
  }
  await courses.save(tx);
  await insertVersions(tx, created);
  return results;
}

/** A built event as checked on the way in: its payload, tenant, parsed label and publisher. */
interface CheckedBuiltEvent {
  envelope: ConsumedEnvelope;
  events: CatalogEmitter;
  p: PlayPackageBuilt;
  tenantId: string;
  label: ReturnType<typeof parseLabel>;
  publishedBy: string;
  /** Its package format is one the catalog does not know yet: held, not published. */
  held: boolean;
}

/** The checks no retry can change (a failure is permanent: the runner dead-letters the event). */
function checkedBuiltEvent(
  envelope: ConsumedEnvelope,
  events: CatalogEmitter,
  formats: readonly string[] = PLAY_PACKAGE_FORMATS,
): CheckedBuiltEvent {
  const p = envelope.payload as unknown as PlayPackageBuilt;
  requireValidLocales(envelope, builtLocaleFields(p));
  const format = readEnumValue(p.playPackage.format, formats);
  if (format === 'invalid') {
    throw permanentFailure(`${envelope.eventType} ${envelope.eventId}: playPackage.format is not an enum value`, {
      field: 'playPackage.format',
    });
  }
  return {
    envelope,
    events,
    p,
    tenantId: requireSameTenant(envelope, p.tenantId),
    label: parseLabel(p.versionLabel),
    publishedBy: requirePublisher(envelope, p),
    held: format === 'unknown',
  };
}

/** The course a built event registers or merges into, with the metadata it carries. */
function courseSourceOf({ envelope, p, tenantId, publishedBy }: CheckedBuiltEvent): CourseSource {
  return {
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
    stamp: consumedEventStamp(envelope, 'built'),
    actor: CATALOG_SYSTEM_ACTOR,
    alsoNames: [publishedBy],
  };
}

/** The labels the batch names on courses that existed before it; versions it creates join them. */
async function labelsOnExistingCourses(
  tx: Tx,
  built: readonly CheckedBuiltEvent[],
  sources: ReadonlyMap<CheckedBuiltEvent, CourseSource>,
  courses: LockedCourses,
): Promise<Map<string, CourseVersionRow>> {
  const wanted = built.flatMap((event) => {
    const source = sources.get(event)!;
    return courses.existedBefore(source) ? [{ courseId: courses.current(source).id, versionLabel: event.p.versionLabel }] : [];
  });
  const found = await findVersionsByLabels(tx, wanted);
  return new Map(found.map((version) => [versionKey(version.courseId, version.versionLabel), version]));
}

/**
 * The same label again is a repeat only with the same package (the content service re-announced
 * it under a new event id); with a different package it is a contradiction no retry resolves.
 */
function requireSamePackage(existing: CourseVersionRow, course: CourseRow, { envelope, p }: CheckedBuiltEvent): void {
  const samePackage =
    existing.playPackageId === p.playPackage.playPackageId &&
    existing.playPackageSha256 === p.playPackage.sha256 &&
    existing.playPackageFormat === p.playPackage.format;
  if (samePackage) return;
  throw permanentFailure(`Course ${course.id} already has version ${p.versionLabel} with a different play package`, {
    courseId: course.id,
    versionLabel: p.versionLabel,
    existingPlayPackageId: existing.playPackageId,
    eventId: envelope.eventId,
  });
}

/** The new version and its `published` event, for the course as the event left it. */
async function publishVersion(
  course: CourseRow,
  event: CheckedBuiltEvent,
  placement: Placement,
  now: Date,
): Promise<CourseVersionRow> {
  const version = versionRow(course, event, { ...placement, now });
  await event.events.emit({
    eventType: 'catalog.course_version.published',
    payload: publishedPayload(version, event.p),
    ...courseEvent(course, CATALOG_SYSTEM_ACTOR),
    // Consumers can check a course's versions arrive gap-free and in order without parsing labels.
    headers: { [COURSE_VERSION_SEQ_HEADER]: String(placement.sequence) },
  });
  return version;
}

function versionRow(
  course: CourseRow,
  { envelope, p, tenantId, label, publishedBy }: CheckedBuiltEvent,
  at: { becameLatest: boolean; sequence: number; now: Date },
): CourseVersionRow {
  return {
    id: newId('courseVersion'),
    tenantId,
    courseId: course.id,
    versionLabel: p.versionLabel,
    ...label,
    publishedBy,
    durationMinutes: p.durationMinutes,
    estimatedReadingMinutes: p.estimatedReadingMinutes ?? null,
    locales: p.locales,
    moduleSummaries: (p.moduleSummaries as Prisma.JsonArray | undefined) ?? null,
    playPackageId: p.playPackage.playPackageId,
    playPackageSha256: p.playPackage.sha256,
    playPackageFormat: p.playPackage.format,
    changelog: (p.changelog as Prisma.JsonObject | undefined) ?? null,
    state: INITIAL_VERSION_STATE,
    becameLatest: at.becameLatest,
    sequence: at.sequence,
    sourceEventId: envelope.eventId,
    createdAt: at.now,
    updatedAt: at.now,
  };
}

/** catalog.course_version.published v1: optional fields only when the built event had them. */
function publishedPayload(version: CourseVersionRow, p: PlayPackageBuilt): object {
  return {
    courseVersionId: version.id,
    courseId: version.courseId,
    versionLabel: version.versionLabel,
    publishedBy: version.publishedBy,
    durationMinutes: version.durationMinutes,
    ...(p.estimatedReadingMinutes !== undefined ? { estimatedReadingMinutes: p.estimatedReadingMinutes } : {}),
    locales: version.locales,
    ...(p.moduleSummaries !== undefined ? { moduleSummaries: p.moduleSummaries } : {}),
    playPackage: p.playPackage,
    becameLatest: version.becameLatest,
    ...(p.changelog !== undefined ? { changelog: p.changelog } : {}),
  };
}

const versionKey = (courseId: string, versionLabel: string) => `${courseId}\u0000${versionLabel}`;

function requirePublisher(envelope: ConsumedEnvelope, p: PlayPackageBuilt): string {
  const publishedBy = resolvePublishedBy(p, envelope.actor);
  if (!publishedBy) {
    throw permanentFailure(
      `${envelope.eventType} ${envelope.eventId} names no publisher: no publishedBy, the actor is not a user (usr_) and no author has role "author"`,
      { field: 'publishedBy' },
    );
  }
  return publishedBy;
}

function parseLabel(value: string) {
  try {
    return parseVersionLabel(value);
  } catch (error) {
    throw permanentFailure((error as Error).message, { field: 'versionLabel' });
  }
}
