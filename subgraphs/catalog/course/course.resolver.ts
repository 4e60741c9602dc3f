import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { requireAnyScope } from '../../../platform/auth/verifier.js';
import { resolveLocaleMap } from '../../../platform/text/locale.logic.js';
import { runAdminMutation } from '../admin-mutation.js';
import type { CatalogContext } from '../context.js';
import { CATALOG_READ } from '../scopes.js';
import { toCourseVersion } from '../course-version/course-version.mapper.js';
import { CourseVersion } from '../course-version/course-version.type.js';
import { decodeCursor, encodeCursor, pageSize, requireCourseId } from './course.logic.js';
import { toCourse } from './course.mapper.js';
import { listCourses } from './course.repo.js';
import { Course, CourseConnection, LocalizedText, UpdateCourseMetadataInput } from './course.type.js';
import { archiveCourse, changeCourseVisibility, updateCourseMetadata } from '../use-cases/course-admin.js';

@Resolver(() => Course)
export class CourseResolver {
  @Query(() => Course, {
    nullable: true,
    description: "A course of the caller's tenant; null when absent (scope catalog.read or catalog.admin).",
  })
  async course(@Arg('courseId', () => ID) courseId: string, @Ctx() ctx: CatalogContext): Promise<Course | null> {
    requireAnyScope(ctx.principal, CATALOG_READ);
    const row = await ctx.loaders.course.load(requireCourseId(courseId));
    return row ? toCourse(row) : null;
  }

  @Query(() => CourseConnection, {
    description: "Courses of the caller's tenant, oldest first, by cursor (scope catalog.read or catalog.admin).",
  })
  async courses(
    @Arg('first', () => Int, { nullable: true }) first: number | null,
    @Arg('after', () => String, { nullable: true }) after: string | null,
    @Ctx() ctx: CatalogContext,
  ): Promise<CourseConnection> {
    requireAnyScope(ctx.principal, CATALOG_READ);
    const limit = pageSize(first);
    const rows = await listCourses(ctx.db, ctx.tenantId, limit, after ? decodeCursor(after) : undefined);
    const page = rows.slice(0, limit);
    for (const row of page) ctx.loaders.course.prime(row.id, row);
    const edges = page.map((row) => ({ cursor: encodeCursor(row.id), node: toCourse(row) }));
    return {
      edges,
      count: edges.length,
      pageInfo: { hasNextPage: rows.length > limit, endCursor: edges.at(-1)?.cursor ?? null },
    };
  }

  @Mutation(() => Course, {
    description:
      'Replaces the given metadata fields. Needs If-Match with the course etag (missing: 428 request.precondition_required, stale: 412 request.precondition_failed); emits catalog.course.metadata_updated when something changed. Scope catalog.admin.',
  })
  async updateCourseMetadata(
    @Arg('courseId', () => ID) courseId: string,
    @Arg('input', () => UpdateCourseMetadataInput) input: UpdateCourseMetadataInput,
    @Ctx() ctx: CatalogContext,
  ): Promise<Course> {
    const id = requireCourseId(courseId);
    return toCourse(
      await runAdminMutation(ctx, (admin) => updateCourseMetadata(admin, { courseId: id, input, ifMatch: ctx.ifMatch })),
    );
  }

  @Mutation(() => Course, {
    description:
      'Changes visibility (org, marketplace) and emits catalog.course.visibility_changed; the same value is a no-op. Scope catalog.admin.',
  })
  async changeCourseVisibility(
    @Arg('courseId', () => ID) courseId: string,
    @Arg('to', () => String) to: string,
    @Arg('reason', () => String) reason: string,
    @Ctx() ctx: CatalogContext,
  ): Promise<Course> {
    const id = requireCourseId(courseId);
    return toCourse(await runAdminMutation(ctx, (admin) => changeCourseVisibility(admin, { courseId: id, to, reason })));
  }

  @Mutation(() => Course, {
    description:
      'registered -> archived, emitting catalog.course.archived; archiving an archived course is a no-op. Scope catalog.admin.',
  })
  async archiveCourse(
    @Arg('courseId', () => ID) courseId: string,
    @Arg('reason', () => String) reason: string,
    @Ctx() ctx: CatalogContext,
  ): Promise<Course> {
    const id = requireCourseId(courseId);
    return toCourse(await runAdminMutation(ctx, (admin) => archiveCourse(admin, { courseId: id, reason })));
  }

  @FieldResolver(() => LocalizedText, { nullable: true, description: 'title resolved for Accept-Language.' })
  localizedTitle(@Root() course: Course, @Ctx() ctx: CatalogContext): LocalizedText | undefined {
    return resolveLocaleMap(course.title, ctx.locales, course.defaultLocale);
  }

  @FieldResolver(() => LocalizedText, { nullable: true, description: 'description resolved for Accept-Language.' })
  localizedDescription(@Root() course: Course, @Ctx() ctx: CatalogContext): LocalizedText | undefined {
    return resolveLocaleMap(course.description, ctx.locales, course.defaultLocale);
  }

  @FieldResolver(() => [CourseVersion], { description: 'Versions in publish order.' })
  async versions(@Root() course: Course, @Ctx() ctx: CatalogContext): Promise<CourseVersion[]> {
    requireAnyScope(ctx.principal, CATALOG_READ);
    return (await ctx.loaders.versionsOfCourse.load(course.courseId)).map(toCourseVersion);
  }
}

export async function resolveCourseReference(ref: { courseId: string }, ctx: CatalogContext): Promise<Course | null> {
  requireAnyScope(ctx.principal, CATALOG_READ);
  const row = await ctx.loaders.course.load(requireCourseId(ref.courseId));
  return row ? toCourse(row) : null;
}
