import { Arg, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { badInput } from '../../../platform/errors/errors.js';
import { isId } from '../../../platform/ids.js';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import { runAdminMutation } from '../admin-mutation.js';
import type { CatalogContext } from '../context.js';
import { CATALOG_ADMIN, CATALOG_READ } from '../scopes.js';
import { requireReason } from '../lifecycle.logic.js';
import { deprecateCourseVersion, withdrawCourseVersion } from '../use-cases/version-admin.js';
import { requireCourseId } from '../course/course.logic.js';
import { toCourse } from '../course/course.mapper.js';
import { Course } from '../course/course.type.js';
import { toCourseVersion } from './course-version.mapper.js';
import { CourseVersion, CourseVersionWithdrawal } from './course-version.type.js';

function requireVersionId(value: string): string {
  if (!isId('courseVersion', value))
    throw badInput('courseVersionId is not a course version id', { argument: 'courseVersionId' });
  return value;
}

@Resolver(() => CourseVersion)
export class CourseVersionResolver {
  @Query(() => [CourseVersion], {
    description: 'Versions of a course in publish order; empty when the course is absent (scope catalog.read or catalog.admin).',
  })
  async courseVersions(@Arg('courseId', () => ID) courseId: string, @Ctx() ctx: CatalogContext): Promise<CourseVersion[]> {
    requireAnyScope(ctx.principal, CATALOG_READ);
    return (await ctx.loaders.versionsOfCourse.load(requireCourseId(courseId))).map(toCourseVersion);
  }

  @Query(() => CourseVersion, {
    nullable: true,
    description: "A course version of the caller's tenant; null when absent (scope catalog.read or catalog.admin).",
  })
  async courseVersion(
    @Arg('courseVersionId', () => ID) courseVersionId: string,
    @Ctx() ctx: CatalogContext,
  ): Promise<CourseVersion | null> {
    requireAnyScope(ctx.principal, CATALOG_READ);
    const row = await ctx.loaders.courseVersion.load(requireVersionId(courseVersionId));
    return row ? toCourseVersion(row) : null;
  }

  @Mutation(() => CourseVersion, {
    description:
      'published -> deprecated, emitting catalog.course_version.deprecated; deprecating a deprecated version is a no-op. Scope catalog.admin.',
  })
  async deprecateCourseVersion(
    @Arg('courseVersionId', () => ID) courseVersionId: string,
    @Arg('reason', () => String) reason: string,
    @Ctx() ctx: CatalogContext,
  ): Promise<CourseVersion> {
    const id = requireVersionId(courseVersionId);
    return toCourseVersion(
      await runAdminMutation(ctx, (admin) => deprecateCourseVersion(admin, { courseVersionId: id, reason })),
    );
  }

  @Mutation(() => CourseVersionWithdrawal, {
    description:
      'published or deprecated -> withdrawn, emitting catalog.course_version.withdrawn with the reason (required) and an approximate count of affected enrollments. Withdrawing a withdrawn version is a no-op. Scope catalog.admin.',
  })
  async withdrawCourseVersion(
    @Arg('courseVersionId', () => ID) courseVersionId: string,
    @Arg('reason', () => String) reason: string,
    @Ctx() ctx: CatalogContext,
  ): Promise<CourseVersionWithdrawal> {
    requireAnyScope(ctx.principal, CATALOG_ADMIN);
    const id = requireVersionId(courseVersionId);
    requireReason(reason);
    // Another service's answer: asked before the transaction so no row lock waits on the network.
    const enrollments = await ctx.services.enrollmentCounter.approximateActiveEnrollments(ctx.tenantId, id);
    const row = await runAdminMutation(ctx, (admin) =>
      withdrawCourseVersion(admin, { courseVersionId: id, reason, enrollments }),
    );
    return {
      courseVersion: toCourseVersion(row),
      affectedEnrollmentsApprox: enrollments.count,
      enrollmentCountSource: enrollments.source,
    };
  }

  @FieldResolver(() => Course, { nullable: true })
  async course(@Root() version: CourseVersion, @Ctx() ctx: CatalogContext): Promise<Course | null> {
    requireAnyScope(ctx.principal, CATALOG_READ);
    const row = await ctx.loaders.course.load(version.courseId);
    return row ? toCourse(row) : null;
  }
}

export async function resolveCourseVersionReference(
  ref: { courseVersionId: string },
  ctx: CatalogContext,
): Promise<CourseVersion | null> {
  requireAnyScope(ctx.principal, CATALOG_READ);
  const row = await ctx.loaders.courseVersion.load(requireVersionId(ref.courseVersionId));
  return row ? toCourseVersion(row) : null;
}
