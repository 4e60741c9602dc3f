import { notFound } from '../../../platform/errors/errors.js';
import type { CourseVersionRow } from '../course-version/course-version.repo.js';
import { lockVersion, setVersionState } from '../course-version/course-version.repo.js';
import type { EnrollmentCount } from '../enrollment-counter.js';
import { decideVersionTransition, requireReason, type VersionState } from '../lifecycle.logic.js';
import type { AdminCommandContext } from './admin.js';

async function transition(
  ctx: AdminCommandContext,
  courseVersionId: string,
  to: VersionState,
  payload: (version: CourseVersionRow) => object,
): Promise<CourseVersionRow> {
  const version = await lockVersion(ctx.tx, ctx.tenantId, courseVersionId);
  if (!version) throw notFound(`Course version ${courseVersionId}`);
  const decision = decideVersionTransition(version.state, to);
  if (!decision.changed) return version;
  const course = await ctx.tx.course.findUniqueOrThrow({
    where: { id: version.courseId },
    select: { retentionClass: true, dataResidency: true },
  });
  const saved = await setVersionState(ctx.tx, version.id, decision.to);
  await ctx.events.emit({
    eventType: to === 'deprecated' ? 'catalog.course_version.deprecated' : 'catalog.course_version.withdrawn',
    payload: payload(saved),
    tenantId: ctx.tenantId,
    partitionKey: version.courseId,
    actor: ctx.actor,
    retentionClass: course.retentionClass,
    dataResidency: course.dataResidency,
  });
  return saved;
}

/** published -> deprecated; deprecating a deprecated version is a no-op, a withdrawn one is refused. */
export function deprecateCourseVersion(
  ctx: AdminCommandContext,
  command: { courseVersionId: string; reason: string },
): Promise<CourseVersionRow> {
  const reason = requireReason(command.reason);
  return transition(ctx, command.courseVersionId, 'deprecated', (v) => ({ courseVersionId: v.id, courseId: v.courseId, reason }));
}

/**
 * published|deprecated -> withdrawn, with the reason the spec requires and the approximate count
 * of affected enrollments (read before the transaction: it comes from another service).
 * Withdrawing does not move the course's latest label back: a fix is published as a higher label.
 */
export function withdrawCourseVersion(
  ctx: AdminCommandContext,
  command: { courseVersionId: string; reason: string; enrollments: EnrollmentCount },
): Promise<CourseVersionRow> {
  const reason = requireReason(command.reason);
  return transition(ctx, command.courseVersionId, 'withdrawn', (v) => ({
    courseVersionId: v.id,
    courseId: v.courseId,
    reason,
    affectedEnrollmentsApprox: command.enrollments.count,
  }));
}
