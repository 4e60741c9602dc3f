import { Arg, Ctx, FieldResolver, ID, Query, Resolver, Root } from 'type-graphql';
import { badInput } from '../../../platform/errors.js';
import { isId } from '../../../platform/ids.js';
import type { CatalogContext } from '../context.js';
import { requireCourseId } from '../course/course.logic.js';
import { toCourse } from '../course/course.mapper.js';
import { Course } from '../course/course.type.js';
import { toCourseVersion } from './course-version.mapper.js';
import { CourseVersion } from './course-version.type.js';

function requireVersionId(value: string): string {
  if (!isId('courseVersion', value)) throw badInput('courseVersionId is not a course version id', { argument: 'courseVersionId' });
  return value;
}

@Resolver(() => CourseVersion)
export class CourseVersionResolver {
  @Query(() => [CourseVersion], { description: 'Versions of a course in publish order; empty when the course is absent.' })
  async courseVersions(@Arg('courseId', () => ID) courseId: string, @Ctx() ctx: CatalogContext): Promise<CourseVersion[]> {
    return (await ctx.loaders.versionsOfCourse.load(requireCourseId(courseId))).map(toCourseVersion);
  }

  @Query(() => CourseVersion, { nullable: true })
  async courseVersion(@Arg('courseVersionId', () => ID) courseVersionId: string, @Ctx() ctx: CatalogContext): Promise<CourseVersion | null> {
    const row = await ctx.loaders.courseVersion.load(requireVersionId(courseVersionId));
    return row ? toCourseVersion(row) : null;
  }

  @FieldResolver(() => Course, { nullable: true })
  async course(@Root() version: CourseVersion, @Ctx() ctx: CatalogContext): Promise<Course | null> {
    const row = await ctx.loaders.course.load(version.courseId);
    return row ? toCourse(row) : null;
  }
}

export async function resolveCourseVersionReference(ref: { courseVersionId: string }, ctx: CatalogContext): Promise<CourseVersion | null> {
  const row = await ctx.loaders.courseVersion.load(requireVersionId(ref.courseVersionId));
  return row ? toCourseVersion(row) : null;
}
