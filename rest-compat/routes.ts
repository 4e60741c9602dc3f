import { AppError, notFound } from '../platform/errors.js';
import type { Route, RouteContext, RouteRequest } from './route.js';
import * as schema from './schemas.js';
import {
  COURSE_FIELDS,
  courseJson,
  coursesPage,
  localeHeaders,
  strongEtag,
  type CourseConnectionData,
  type CourseData,
} from './shape.logic.js';
import { validationError } from './validation.js';

/**
 * The REST-compat table: each legacy route is one GraphQL operation run through the gateway, so
 * authentication, tenancy, scopes and error codes are those of the GraphQL door.
 */

const COURSES = `query RestCourses($first: Int, $after: String) {
  courses(first: $first, after: $after) { edges { cursor node { ${COURSE_FIELDS} } } pageInfo { hasNextPage endCursor } }
}`;

const COURSE = `query RestCourse($courseId: ID!) { course(courseId: $courseId) { ${COURSE_FIELDS} } }`;

const UPDATE_COURSE_METADATA = `mutation RestUpdateCourseMetadata($courseId: ID!, $input: UpdateCourseMetadataInput!) {
  updateCourseMetadata(courseId: $courseId, input: $input) { ${COURSE_FIELDS} }
}`;

const ASSIST = `mutation RestAssist($input: AssistInput!) {
  assist(input: $input) {
    provenanceId status mode text provider model reviewState outputHash
    template { templateId version hash }
    timings { totalMs providerMs queueMs }
  }
}`;

const PROVENANCE = `query RestProvenance($provenanceId: ID!) {
  provenance(provenanceId: $provenanceId) {
    provenanceId tenantId actorType actorId featureKey status mode
    templateId templateVersion templateHash renderedPromptHash ruleId ruleVersion provider model
    attempts { provider model outcome latencyMs errorCode }
    outputHash moderation reviewState review facilityId specialty subjectRef residency
    legacyBackfill errorCode latencyMs createdAt completedAt
  }
}`;

const CREATE_ROUTING_RULE = `mutation RestCreateRoutingRule($input: CreateRoutingRuleInput!) {
  createRoutingRule(input: $input) {
    ruleId tenantId featureKey residency activeVersion
    versions { version primary { provider model } fallbacks { provider model } createdBy createdAt }
  }
}`;

const REPLAY_DEAD_LETTERS = `mutation RestReplayDeadLetters($filter: DeadLetterFilterInput!) {
  replayDeadLetters(filter: $filter) { matched replayed }
}`;

/** One REST page: one GraphQL page (the route's documents are exempt from the cost limit). */
async function coursesConnection(ctx: RouteContext, limit: number, cursor: string | null): Promise<CourseConnectionData> {
  const data = await ctx.graphql(COURSES, { first: limit, after: cursor });
  return data.courses as CourseConnectionData;
}

function courseResult(course: CourseData) {
  return { status: 200, body: courseJson(course), headers: { etag: strongEtag(course.etag), ...localeHeaders([course]) } };
}

interface AssistData {
  provenanceId: string;
  status: string;
}

/** completed → 200, pending_review → 202 (poll the provenance); blocked and failed are problems that still name the provenance. */
function assistResult(result: AssistData & Record<string, unknown>) {
  const location = `/v1/ai/provenance/${encodeURIComponent(result.provenanceId)}`;
  if (result.status === 'completed') return { status: 200, body: result };
  if (result.status === 'pending_review') return { status: 202, body: result, headers: { location } };
  const details = { provenanceId: result.provenanceId, result: result.status };
  if (result.status === 'blocked') throw new AppError('moderation.blocked', 'The output was blocked by moderation', { details });
  throw new AppError('provider.unavailable', 'No provider produced an output; the attempt is recorded', { details });
}

export const ROUTES: Route[] = [
  {
    id: 'courses.list',
    method: 'GET',
    path: '/api/v1/courses',
    query: schema.coursesQuery,
    async run({ query }, ctx) {
      const page = coursesPage(
        await coursesConnection(ctx, (query.limit as number | undefined) ?? 20, (query.cursor as string | undefined) ?? null),
      );
      return { status: 200, body: page, headers: localeHeaders(page.items) };
    },
  },
  {
    id: 'courses.get',
    method: 'GET',
    path: '/api/v1/courses/{courseId}',
    params: schema.courseIdParams,
    async run({ params }, ctx) {
      const data = await ctx.graphql(COURSE, { courseId: params.courseId });
      if (!data.course) throw notFound('Course');
      return courseResult(data.course as CourseData);
    },
  },
  {
    id: 'courses.update',
    method: 'PATCH',
    path: '/api/v1/courses/{courseId}',
    ifMatch: true,
    params: schema.courseIdParams,
    body: schema.updateCourseMetadataBody,
    async run({ params, body }, ctx) {
      const data = await ctx.graphql(UPDATE_COURSE_METADATA, { courseId: params.courseId, input: body });
      return courseResult(data.updateCourseMetadata as CourseData);
    },
  },
  {
    id: 'ai.assist',
    method: 'POST',
    path: '/v1/ai/assist',
    body: schema.assistBody,
    async run({ body }, ctx) {
      const data = await ctx.graphql(ASSIST, { input: body });
      return assistResult(data.assist as AssistData & Record<string, unknown>);
    },
  },
  {
    id: 'ai.provenance.get',
    method: 'GET',
    path: '/v1/ai/provenance/{provenanceId}',
    params: schema.provenanceIdParams,
    async run({ params }, ctx) {
      const data = await ctx.graphql(PROVENANCE, { provenanceId: params.provenanceId });
      if (!data.provenance) throw notFound('Provenance record');
      return { status: 200, body: data.provenance };
    },
  },
  {
    id: 'ai.routing-rules.create',
    method: 'POST',
    path: '/v1/admin/routing-rules',
    body: schema.createRoutingRuleBody,
    async run({ body }, ctx) {
      const data = await ctx.graphql(CREATE_ROUTING_RULE, { input: body });
      const { ruleId, ...rule } = data.createRoutingRule as { ruleId: string; activeVersion: number | null } & Record<
        string,
        unknown
      >;
      return { status: 201, body: { ruleId, version: rule.activeVersion, ...rule } };
    },
  },
  {
    id: 'catalog.dlq.replay',
    method: 'POST',
    path: '/admin/v1/catalog/dlq/replay',
    body: schema.replayDeadLettersBody,
    check: ({ body }: RouteRequest) => {
      const { from, to } = body as { from?: string; to?: string };
      if (from && to && Date.parse(from) > Date.parse(to))
        throw validationError('body', [{ path: '/to', message: 'must not be before from' }]);
    },
    async run({ body }, ctx) {
      const data = await ctx.graphql(REPLAY_DEAD_LETTERS, { filter: body });
      const result = data.replayDeadLetters as { matched: number; replayed: number };
      return { status: 200, body: { matched: result.matched, replayed: result.replayed } };
    },
  },
  {
    id: 'ai.health',
    method: 'GET',
    path: '/v1/ai/health',
    public: true,
    async run(_request, ctx) {
      // The AI subgraph serves its own health (it checks its own dependencies); this only relays it.
      const response = await ctx.aiHttp('/v1/ai/health');
      const body = await response.json().catch(() => ({ status: 'unknown' }));
      return { status: response.status === 200 ? 200 : 503, body, headers: { 'cache-control': 'no-store' } };
    },
  },
];
