import { badInput, notFound } from '../../../platform/errors/errors.js';
import { mergeByPrecedence, requireIfMatch, validateMetadataInput, type MetadataInput } from '../course/course-metadata.logic.js';
import { withFreshEtag } from '../course/course-etag.logic.js';
import { lockCourse, updateCourses, type CourseRow } from '../course/course.repo.js';
import { decideCourseTransition, requireEditableCourse, requireReason, requireVisibility } from '../lifecycle.logic.js';
import { findTaxonomiesByIds } from '../taxonomy/taxonomy.repo.js';
import type { AdminCommandContext } from './admin.js';
import { courseEvent } from './course-payloads.logic.js';
import { stampedStateOf } from './course-state.logic.js';
import { saveCourseState } from './course-writes.js';
import { redactErasedAuthors } from './erased-authors.js';

async function lockOrNotFound(ctx: AdminCommandContext, courseId: string): Promise<CourseRow> {
  const course = await lockCourse(ctx.tx, ctx.tenantId, courseId);
  // A course of another tenant is indistinguishable from no course.
  if (!course) throw notFound(`Course ${courseId}`);
  return course;
}

/**
 * updateCourseMetadata: optimistic concurrency on the course etag (If-Match missing: 428, stale:
 * 412), then the given fields replace the current ones. An admin edit always applies (it is
 * guarded by If-Match) and outranks older drafts by the precedence rule.
 */
export async function updateCourseMetadata(
  ctx: AdminCommandContext,
  command: { courseId: string; input: MetadataInput; ifMatch: string | undefined },
): Promise<CourseRow> {
  const course = await lockOrNotFound(ctx, command.courseId);
  requireIfMatch(command.ifMatch, course.etag);
  requireEditableCourse(course.state);
  const state = stampedStateOf(course);
  const changes = validateMetadataInput(command.input, state.metadata);
  if (changes.taxonomy) await requireTaxonomyNodes(ctx, changes.taxonomy);
  if (changes.authors)
    changes.authors = await redactErasedAuthors(ctx.tx, ctx.tenantId, changes.authors, course.retentionClass, ctx);
  const merged = mergeByPrecedence(
    state,
    changes,
    { source: 'admin', at: ctx.now.toISOString(), id: ctx.requestId },
    { force: true },
  );
  return saveCourseState(ctx.tx, course, merged, ctx, { actor: ctx.actor, visibilityReason: 'unchanged', now: ctx.now });
}

/** Taxonomy references of an admin edit must name nodes of this tenant's taxonomies. */
async function requireTaxonomyNodes(
  ctx: AdminCommandContext,
  refs: Array<{ taxonomyId: string; nodePath: string }>,
): Promise<void> {
  const taxonomies = new Map(
    (await findTaxonomiesByIds(ctx.tx, ctx.tenantId, [...new Set(refs.map((ref) => ref.taxonomyId))])).map((t) => [
      t.id,
      new Set((t.nodes as Array<{ path: string }>).map((node) => node.path)),
    ]),
  );
  refs.forEach((ref, index) => {
    const nodes = taxonomies.get(ref.taxonomyId);
    if (!nodes)
      throw badInput(`taxonomy[${index}]: taxonomy ${ref.taxonomyId} does not exist`, { field: `taxonomy[${index}].taxonomyId` });
    if (!nodes.has(ref.nodePath)) {
      throw badInput(`taxonomy[${index}]: ${ref.nodePath} is not a node of ${ref.taxonomyId}`, {
        field: `taxonomy[${index}].nodePath`,
      });
    }
  });
}

/** changeCourseVisibility: the only way visibility changes by hand; the same value is a no-op. */
export async function changeCourseVisibility(
  ctx: AdminCommandContext,
  command: { courseId: string; to: string; reason: string },
): Promise<CourseRow> {
  const to = requireVisibility(command.to);
  const reason = requireReason(command.reason);
  const course = await lockOrNotFound(ctx, command.courseId);
  requireEditableCourse(course.state);
  if (course.visibility === to) return course;
  const merged = mergeByPrecedence(
    stampedStateOf(course),
    { visibility: to },
    { source: 'admin', at: ctx.now.toISOString(), id: ctx.requestId },
    { force: true },
  );
  return saveCourseState(ctx.tx, course, merged, ctx, { actor: ctx.actor, visibilityReason: reason, now: ctx.now });
}

/** archiveCourse: registered -> archived; archiving an archived course is a no-op. */
export async function archiveCourse(ctx: AdminCommandContext, command: { courseId: string; reason: string }): Promise<CourseRow> {
  const reason = requireReason(command.reason);
  const course = await lockOrNotFound(ctx, command.courseId);
  const decision = decideCourseTransition(course.state, 'archived');
  if (!decision.changed) return course;
  const archived = withFreshEtag({ ...course, state: decision.to, updatedAt: ctx.now });
  await updateCourses(ctx.tx, [archived]);
  await ctx.events.emit({
    eventType: 'catalog.course.archived',
    payload: { courseId: course.id, reason },
    ...courseEvent(archived, ctx.actor),
  });
  return archived;
}
