import type { Clock } from '../../../platform/clock.js';
import { Prisma, type Tx } from '../../../platform/db/database.js';
import { newId } from '../../../platform/ids.js';
import {
  initialProvenance,
  mergeByPrecedence,
  type CourseMetadata,
  type FieldStamp,
  type IncomingValues,
  type StampedState,
} from '../course/course-metadata.logic.js';
import {
  insertCoursesIfAbsent,
  lockCoursesBySlugs,
  updateCourses,
  type CourseKey,
  type CourseRow,
} from '../course/course.repo.js';
import type { Actor, CatalogEmitter } from '../outbox-port.js';
import { withFreshEtag } from '../course/course-etag.logic.js';
import { erasedAmongTenants } from '../gdpr/gdpr.repo.js';
import { retentionPermitsZeroing, withoutErasedId } from '../gdpr/redaction.logic.js';
import { DEFAULT_VISIBILITY, INITIAL_COURSE_STATE } from '../lifecycle.logic.js';
import { tenantPolicies, type TenantPolicy } from '../tenant.repo.js';
import { courseStateChange } from './course-change.logic.js';
import { courseEvent, registeredPayload } from './course-payloads.logic.js';
import { metadataRow, stampedStateOf } from './course-state.logic.js';
import { withoutErased, type ErasurePolicy } from './erased-authors.js';

/**
 * The catalog's write path for courses: RegisterCourse and the metadata merge from consumed
 * events (LockedCourses, batched), and the admin mutations' save (saveCourseState). The row
 * mapping, the change decider and the event payloads it uses live beside it (course-state,
 * course-change, course-payloads); erased authors are filtered on the way in (erased-authors).
 */

/** What every catalog write needs besides the transaction. */
export interface WriteDeps extends ErasurePolicy {
  events: CatalogEmitter;
  /** When the write happens: rows' createdAt / updatedAt. */
  clock: Clock;
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
  const result = await courses.registerOrMerge(source, deps.events);
  await courses.save(tx);
  return result;
}

const keyOf = (course: CourseKey) => `${course.tenantId}\u0000${course.slug}`;

/**
 * The courses a batch of consumed events writes, for RegisterCourse and the metadata merge at a
 * handful of statements per batch instead of several per event: one locks (and loads) every
 * course the batch names, one inserts the new ones, one writes the changes back (`save`). In
 * between, `registerOrMerge` replays each event on the locked rows in the batch's order and emits exactly
 * what handling the events one transaction at a time would have emitted. A course is addressed by
 * the source (one object per event) that names it, so each event reaches its own course.
 */
export class LockedCourses {
  private readonly dirty = new Set<string>();

  private constructor(
    private readonly sources: ReadonlySet<CourseSource>,
    private readonly rows: Map<string, CourseRow>,
    /** Course key -> the source that created it in this batch. */
    private readonly creators: Map<string, CourseSource>,
    /** tenantId -> erased userIds among the batch's authors. */
    private readonly erased: Map<string, Set<string>>,
    private readonly deps: Pick<WriteDeps, 'gdprZeroingRetentionClasses' | 'clock'>,
  ) {}

  static async lock(
    tx: Tx,
    sources: readonly CourseSource[],
    deps: Pick<WriteDeps, 'gdprZeroingRetentionClasses' | 'clock'>,
  ): Promise<LockedCourses> {
    if (new Set(sources).size !== sources.length)
      throw new Error('a course source stands twice in one batch: one object per event');
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
    const creators = new Map<string, CourseSource>();
    for (const source of sources) {
      const key = keyOf(source);
      if (!rows.has(key) && !creators.has(key)) creators.set(key, source);
    }
    if (creators.size) {
      const policies = await tenantPolicies(tx, [...new Set([...creators.values()].map((source) => source.tenantId))]);
      const now = deps.clock.now();
      // Sorted by slug: two batches inserting the same new slugs wait for each other in one order.
      const fresh = [...creators]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([, source]) => newCourseRow(source, policies.get(source.tenantId)!, erased, deps, now));
      for (const row of await insertCoursesIfAbsent(tx, fresh)) rows.set(keyOf(row), row);
      // Another transaction registered these slugs first: merge into its courses like any update.
      const lost = fresh.filter((row) => !rows.has(keyOf(row)));
      for (const row of lost) creators.delete(keyOf(row));
      for (const row of await lockCoursesBySlugs(tx, lost)) rows.set(keyOf(row), row);
      const vanished = lost.find((row) => !rows.has(keyOf(row)));
      if (vanished) throw new Error(`course ${vanished.slug} vanished between insert and lock`);
    }
    return new LockedCourses(new Set(sources), rows, creators, erased, deps);
  }

  /** The course `source` names, as it stands now. */
  current(source: CourseSource): CourseRow {
    return this.rows.get(keyOf(this.member(source)))!;
  }

  /**
   * A user named by `source` (its publisher), as the course may keep it: the erased id when
   * the user was erased in the tenant and the course's retention class permits zeroing.
   */
  userAsKept(source: CourseSource, userId: string): string {
    const zeroIds = retentionPermitsZeroing(this.current(source).retentionClass, this.deps.gdprZeroingRetentionClasses);
    return withoutErasedId(userId, this.erased.get(source.tenantId), zeroIds);
  }

  /** Whether the course `source` names existed before this batch. */
  existedBefore(source: CourseSource): boolean {
    return !this.creators.has(keyOf(this.member(source)));
  }

  /**
   * `source`'s part of RegisterCourse / the merge: `registered` for the source that created
   * the course, otherwise its fields merged by the precedence rule and what changed emitted.
   * `alsoChange` is the rest of the same event's change to the course row (a new version: its
   * sequence and latest label), made before anything is emitted, so the etag an event carries is
   * the course's once the event is applied, the tag readers get.
   */
  async registerOrMerge(
    source: CourseSource,
    events: CatalogEmitter,
    alsoChange?: (row: CourseRow) => CourseRow,
  ): Promise<{ course: CourseRow; created: boolean }> {
    const course = this.current(source);
    if (this.creators.get(keyOf(source)) === source) {
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

  /** `source`, checked to be one this batch locked (a source from elsewhere is a bug of the caller). */
  private member(source: CourseSource): CourseSource {
    if (!this.sources.has(source)) throw new Error(`course source ${source.slug} is not in this batch`);
    return source;
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

function uniqueBy<T>(items: readonly T[], key: (item: T) => string): T[] {
  return [...new Map(items.map((item) => [key(item), item])).values()];
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
