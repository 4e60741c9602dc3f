import { AppError, notFound } from '../platform/errors/errors.js';
import { ifMatchHolds } from '../platform/http/conditional.logic.js';
import { COURSE, UPDATE_COURSE_METADATA } from './documents.js';
import { metadataInputFromMergePatch } from './merge-patch.logic.js';
import type { RestResult, RouteContext, RouteRequest } from './route-definition.js';
import { courseResult, type CourseData } from './shape.logic.js';

/**
 * `PATCH` with `application/merge-patch+json`: read the course, merge the patch into it (RFC 7396),
 * write the merged members. The caller's If-Match is checked against what was read, and the write
 * is pinned to that tag, so a change between the read and the write is a 412 instead of being
 * overwritten by a merge of the older course.
 */
export async function mergePatchCourse(courseId: string, request: RouteRequest, ctx: RouteContext): Promise<RestResult> {
  const data = await ctx.graphql(COURSE, { courseId });
  if (!data.course) throw notFound('Course');
  const current = data.course as CourseData;
  if (!ifMatchHolds(request.headers.ifMatch ?? '', current.etag)) {
    throw new AppError(
      'request.precondition_failed',
      'If-Match does not match the current course etag; re-read the course and retry',
      {
        status: 412,
        details: { etag: current.etag },
      },
    );
  }
  const input = metadataInputFromMergePatch(current, request.body as Record<string, unknown>);
  const updated = await ctx.graphql(UPDATE_COURSE_METADATA, { courseId, input }, { ifMatch: current.etag });
  return courseResult(updated.updateCourseMetadata as CourseData);
}
