import type { Clock } from '../../../platform/clock.js';
import { Prisma, type Tx } from '../../../platform/db/database.js';
import { newId } from '../../../platform/ids.js';
import {
  diffMetadata,
  initialProvenance,
  mergeByPrecedence,
  type Author,
  type CourseMetadata,
  type FieldStamp,
  type IncomingValues,
  type Provenance,
  type StampedState,
} from '../course/course-metadata.logic.js';
import {
  insertCoursesIfAbsent,
  lockCoursesBySlugs,
  updateCourses,
  type CourseKey,
  type CourseRow,
} from '../course/course.repo.js';
import type { Actor, CatalogEmitter, CatalogEvent } from '../outbox-port.js';
import { withFreshEtag } from '../course/course-etag.logic.js';
import { erasedAmong, erasedAmongTenants } from '../gdpr/gdpr.repo.js';
import { redactAuthors, retentionPermitsZeroing, withoutErasedId } from '../gdpr/redaction.logic.js';
import { DEFAULT_VISIBILITY, INITIAL_COURSE_STATE } from '../lifecycle.logic.js';
import { tenantPolicies, type TenantPolicy } from '../tenant.repo.js';

/** What every catalog write needs besides the transaction. */
export interface WriteDeps {
  events: CatalogEmitter;
  /** Retention classes under which an erasure zeroes author ids (config policy table). */
  gdprZeroingRetentionClasses: readonly string[];
  /** When the write happens: rows' createdAt / updatedAt. */
  clock: Clock;
}

export function metadataOf(row: CourseRow): CourseMetadata {
  return {
    title: row.title as Record<string, string>,
    description: row.description as Record<string, string>,
    defaultLocale: row.defaultLocale,
    authors: row.authors as unknown as Author[],
    taxonomy: row.taxonomy as unknown as CourseMetadata['taxonomy'],
    tags: row.tags,
    cover: (row.cover as CourseMetadata['cover']) ?? null,
  };
}

export function stampedStateOf(row: CourseRow): StampedState {
  return {
    metadata: metadataOf(row),
    visibility: row.visibility,
    sourceDraftId: row.sourceDraftId,
    provenance: (row.metadataProvenance ?? {}) as Provenance,
  };
}

/**
 * Authors arriving after an erasure (a later draft, a package, a dead letter replayed) are
 * redacted on the way in by the erasure registry, so an erased name never comes back.
 */
export async function redactErasedAuthors(
  tx: Tx,
  tenantId: string,
  authors: Author[] | undefined,
  retentionClass: string,
  deps: Pick<WriteDeps, 'gdprZeroingRetentionClasses'>,
): Promise<Author[] | undefined> {
  if (!authors?.length) return authors;
  const erased = await erasedAmong(
    tx,
    tenantId,
    authors.map((author) => author.userId),
  );
  return withoutErased(authors, erased, retentionClass, deps);
}

function withoutErased(
  authors: Author[] | undefined,
  erased: ReadonlySet<string> | undefined,
  retentionClass: string,
  deps: Pick<WriteDeps, 'gdprZeroingRetentionClasses'>,
): Author[] | undefined {
  if (!authors?.length || !erased?.size) return authors;
  return redactAuthors(authors, {
    userIds: erased,
    zeroIds: retentionPermitsZeroing(retentionClass, deps.gdprZeroingRetentionClasses),
  }).authors;
}

export function registeredPayload(course: CourseRow): object {
  return {
    courseId: course.id,
    slug: course.slug,
    title: course.title,
    defaultLocale: course.defaultLocale,
    visibility: course.visibility,
    authors: course.authors,
    taxonomy: course.taxonomy,
    ...(course.sourceDraftId ? { sourceDraftId: course.sourceDraftId } : {}),
  };
}

export function courseEvent(course: CourseRow, actor: Actor) {
  return {
    tenantId: course.tenantId,
    partitionKey: course.id,
    actor,
    retentionClass: course.retentionClass,
    dataResidency: course.dataResidency,
  };
}

export interface CourseSource {
  tenantId: string;
  slug: string;
  values: IncomingValues & { title: CourseMetadata['title']; defaultLocale: string };
  stamp: FieldStamp;
  actor: Actor;
  /** Other users the event names besides its authors (a version's publisher): checked against the erasure record too. */
  alsoNames?: readonly string[];
}

/**
 * RegisterCourse, or the metadata part of an existing course, from a consumed event: creates the
 * course when the slug is new in the tenant (emitting `registered`), otherwise merges the event's
 * fields by the precedence rule. Returns the course locked for the rest of the transaction.
 */
export async function registerOrMergeCourse(
  tx: Tx,
  source: CourseSource,
  deps: WriteDeps,
): Promise<{ course: CourseRow; created: boolean }> {
  const courses = await LockedCourses.lock(tx, [source], deps);
  const result = await courses.registerOrMerge(0, deps.events);
  await courses.save(tx);
  return result;
}

const keyOf = (course: CourseKey) => `${course.tenantId}\u0000${course.slug}`;

/**
 * The courses a batch of consumed events writes, for RegisterCourse and the metadata merge at a
 * handful of statements per batch instead of several per event: one locks (and loads) every
 * course the batch names, one inserts the new ones, one writes the changes back (`save`). In
 * between, `registerOrMerge` replays each event on the locked rows in the batch's order and emits exactly
 * what handling the events one transaction at a time would have emitted.
 */
export class LockedCourses {
  private readonly dirty = new Set<string>();

  private constructor(
    private readonly sources: readonly CourseSource[],
    private readonly rows: Map<string, CourseRow>,
    /** Course key -> index of the source that created it in this batch. */
    private readonly creators: Map<string, number>,
    /** tenantId -> erased userIds among the batch's authors. */
    private readonly erased: Map<string, Set<string>>,
    private readonly deps: Pick<WriteDeps, 'gdprZeroingRetentionClasses' | 'clock'>,
  ) {}

  static async lock(
    tx: Tx,
    sources: readonly CourseSource[],
    deps: Pick<WriteDeps, 'gdprZeroingRetentionClasses' | 'clock'>,
  ): Promise<LockedCourses> {
    const keys = uniqueBy(
      sources.map(({ tenantId, slug }) => ({ tenantId, slug })),
      keyOf,
    );
    const rows = new Map((await lockCoursesBySlugs(tx, keys)).map((row) => [keyOf(row), row]));
    const erased = await erasedAmongTenants(
      tx,
      uniqueBy(
        sources.flatMap((s) =>
          [...(s.values.authors ?? []).map((author) => author.userId), ...(s.alsoNames ?? [])].map((userId) => ({
            tenantId: s.tenantId,
            userId,
          })),
        ),
        (pair) => `${pair.tenantId}\u0000${pair.userId}`,
      ),
    );
    const creators = new Map<string, number>();
    sources.forEach((source, index) => {
      const key = keyOf(source);
      if (!rows.has(key) && !creators.has(key)) creators.set(key, index);
    });
    if (creators.size) {
      const policies = await tenantPolicies(tx, [...new Set([...creators.values()].map((i) => sources[i].tenantId))]);
      const now = deps.clock.now();
      // Sorted by slug: two batches inserting the same new slugs wait for each other in one order.
      const fresh = [...creators]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([, index]) => newCourseRow(sources[index], policies.get(sources[index].tenantId)!, erased, deps, now));
      for (const row of await insertCoursesIfAbsent(tx, fresh)) rows.set(keyOf(row), row);
      // Another transaction registered these slugs first: merge into its courses like any update.
      const lost = fresh.filter((row) => !rows.has(keyOf(row)));
      for (const row of lost) creators.delete(keyOf(row));
      for (const row of await lockCoursesBySlugs(tx, lost)) rows.set(keyOf(row), row);
      const vanished = lost.find((row) => !rows.has(keyOf(row)));
      if (vanished) throw new Error(`course ${vanished.slug} vanished between insert and lock`);
    }
    return new LockedCourses(sources, rows, creators, erased, deps);
  }

  /** The course of source `index` as it stands now. */
  current(index: number): CourseRow {
    return this.rows.get(keyOf(this.sources[index]))!;
  }

  /**
   * A user named by source `index` (its publisher), as the course may keep it: the erased id when
   * the user was erased in the tenant and the course's retention class permits zeroing.
   */
  userAsKept(index: number, userId: string): string {
    const source = this.sources[index];
    const zeroIds = retentionPermitsZeroing(this.current(index).retentionClass, this.deps.gdprZeroingRetentionClasses);
    return withoutErasedId(userId, this.erased.get(source.tenantId), zeroIds);
  }

  /** Whether the course of source `index` existed before this batch. */
  existedBefore(index: number): boolean {
    return !this.creators.has(keyOf(this.sources[index]));
  }

  /**
   * Source `index`'s part of RegisterCourse / the merge: `registered` for the source that created
   * the course, otherwise its fields merged by the precedence rule and what changed emitted.
   * `alsoChange` is the rest of the same event's change to the course row (a new version: its
   * sequence and latest label), made before anything is emitted, so the etag an event carries is
   * the course's once the event is applied, the tag readers get.
   */
  async registerOrMerge(
    index: number,
    events: CatalogEmitter,
    alsoChange?: (row: CourseRow) => CourseRow,
  ): Promise<{ course: CourseRow; created: boolean }> {
    const source = this.sources[index];
    const course = this.current(index);
    if (this.creators.get(keyOf(source)) === index) {
      const registered = alsoChange ? this.replace(alsoChange(course)) : course;
      await events.emit({
        eventType: 'catalog.course.registered',
        payload: registeredPayload(registered),
        ...courseEvent(registered, source.actor),
      });
      return { course: registered, created: true };
    }
    const values = {
      ...source.values,
      authors: withoutErased(source.values.authors, this.erased.get(source.tenantId), course.retentionClass, this.deps),
    };
    const change = courseStateChange(course, mergeByPrecedence(stampedStateOf(course), values, source.stamp), {
      visibilityReason: `authoring draft ${source.values.sourceDraftId ?? 'update'} published`,
      now: this.deps.clock.now(),
      alsoChange,
    });
    if (!change) return { course, created: false };
    this.replace(change.row);
    for (const event of change.events) await events.emit({ ...event, ...courseEvent(change.row, source.actor) });
    return { course: change.row, created: false };
  }

  /** Takes a changed row of one of these courses, with the tag of what it now holds; `save` writes it. */
  replace(row: CourseRow): CourseRow {
    const key = keyOf(row);
    if (!this.rows.has(key)) throw new Error(`course ${row.slug} is not in this batch`);
    const fresh = withFreshEtag(row);
    this.rows.set(key, fresh);
    this.dirty.add(key);
    return fresh;
  }

  /** Writes every changed course, in one statement. */
  async save(tx: Tx): Promise<void> {
    await updateCourses(
      tx,
      [...this.dirty].map((key) => this.rows.get(key)!),
    );
    this.dirty.clear();
  }
}

/** A new course as RegisterCourse creates it from its first source (the erasure registry applied). */
function newCourseRow(
  source: CourseSource,
  policy: TenantPolicy,
  erased: Map<string, Set<string>>,
  deps: Pick<WriteDeps, 'gdprZeroingRetentionClasses'>,
  now: Date,
): CourseRow {
  const values: IncomingValues = {
    ...source.values,
    authors: withoutErased(source.values.authors, erased.get(source.tenantId), policy.retentionClass, deps),
  };
  const metadata: CourseMetadata = {
    title: source.values.title,
    description: values.description ?? {},
    defaultLocale: source.values.defaultLocale,
    authors: values.authors ?? [],
    taxonomy: values.taxonomy ?? [],
    tags: values.tags ?? [],
    cover: values.cover ?? null,
  };
  return withFreshEtag({
    id: newId('course'),
    tenantId: source.tenantId,
    slug: source.slug,
    ...metadataRow(metadata),
    visibility: values.visibility ?? DEFAULT_VISIBILITY,
    sourceDraftId: values.sourceDraftId ?? null,
    etag: '',
    state: INITIAL_COURSE_STATE,
    retentionClass: policy.retentionClass,
    dataResidency: policy.dataResidency,
    versionSeq: 0,
    latestVersionLabel: null,
    metadataProvenance: initialProvenance(values, source.stamp) as Prisma.JsonObject,
    createdAt: now,
    updatedAt: now,
  });
}

function metadataRow(metadata: CourseMetadata) {
  return {
    title: metadata.title,
    description: metadata.description,
    defaultLocale: metadata.defaultLocale,
    authors: metadata.authors as unknown as Prisma.JsonArray,
    taxonomy: metadata.taxonomy as unknown as Prisma.JsonArray,
    tags: metadata.tags,
    cover: (metadata.cover as unknown as Prisma.JsonObject | null) ?? null,
  };
}

function uniqueBy<T>(items: readonly T[], key: (item: T) => string): T[] {
  return [...new Map(items.map((item) => [key(item), item])).values()];
}

type CourseEventFacts = Pick<CatalogEvent, 'eventType' | 'payload'>;

/**
 * A course's next state as a row, with the tag of what it now holds, and the events saying what
 * changed: `metadata_updated` (changedFields, previous, next, the new etag) and/or
 * `visibility_changed`. `alsoChange` adds the rest of the same event's change (a new version) to
 * the row before the tag is taken. Null when nothing, not even a stamp, changed.
 */
export function courseStateChange(
  existing: CourseRow,
  next: StampedState,
  options: { visibilityReason: string; now: Date; alsoChange?: (row: CourseRow) => CourseRow },
): { row: CourseRow; events: CourseEventFacts[] } | null {
  const previous = stampedStateOf(existing);
  const diff = diffMetadata(previous.metadata, next.metadata);
  const visibilityChanged = next.visibility !== previous.visibility;
  const stampsChanged = JSON.stringify(next.provenance) !== JSON.stringify(previous.provenance);
  const merged = diff.changedFields.length || visibilityChanged || stampsChanged || next.sourceDraftId !== previous.sourceDraftId;
  if (!merged && !options.alsoChange) return null;

  const changed: CourseRow = {
    ...existing,
    ...metadataRow(next.metadata),
    visibility: next.visibility,
    sourceDraftId: next.sourceDraftId,
    metadataProvenance: next.provenance as Prisma.JsonObject,
    updatedAt: options.now,
  };
  const row = withFreshEtag(options.alsoChange ? options.alsoChange(changed) : changed);
  const events: CourseEventFacts[] = [];
  if (diff.changedFields.length) {
    events.push({
      eventType: 'catalog.course.metadata_updated',
      payload: { courseId: row.id, changedFields: diff.changedFields, previous: diff.previous, next: diff.next, etag: row.etag },
    });
  }
  if (visibilityChanged) {
    events.push({
      eventType: 'catalog.course.visibility_changed',
      payload: { courseId: row.id, from: previous.visibility, to: next.visibility, reason: options.visibilityReason },
    });
  }
  return { row, events };
}

/**
 * Writes a course's new metadata, visibility and stamps (see courseStateChange) and emits what
 * changed. Writes nothing when nothing changed.
 */
export async function saveCourseState(
  tx: Tx,
  existing: CourseRow,
  next: StampedState,
  deps: Pick<WriteDeps, 'events'>,
  options: { actor: Actor; visibilityReason: string; now: Date },
): Promise<CourseRow> {
  const change = courseStateChange(existing, next, { visibilityReason: options.visibilityReason, now: options.now });
  if (!change) return existing;
  // The same write as a batch's (LockedCourses.save): the caller holds the course's row lock.
  await updateCourses(tx, [change.row]);
  for (const event of change.events) await deps.events.emit({ ...event, ...courseEvent(change.row, options.actor) });
  return change.row;
}
