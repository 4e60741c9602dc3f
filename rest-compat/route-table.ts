import { AppError, notFound } from '../platform/errors/errors.js';
import { mergePatchCourse } from './course-merge-patch.js';
import {
  ASSIST,
  COURSE,
  COURSES,
  CREATE_ROUTING_RULE,
  PROVENANCE,
  PROVENANCE_RECEIPT,
  QUOTA_SETTINGS,
  RECEIPT_EXPORT,
  REPLAY_DEAD_LETTERS,
  ROUTING_RULE,
  SET_QUOTA_SETTINGS,
  UPDATE_COURSE_METADATA,
} from './documents.js';
import type { Route, RouteContext, RouteRequest } from './route-definition.js';
import * as schema from './schemas.js';
import {
  assistResult,
  coursesPage,
  courseResult,
  localeHeaders,
  quotaResult,
  routingRuleJson,
  routingRuleUrl,
  type AssistData,
  type CourseConnectionData,
  type CourseData,
  type RoutingRuleData,
} from './shape.logic.js';
import { validationError } from './validation.js';

/**
 * The REST-compat table: each legacy route is one GraphQL operation run through the gateway, so
 * authentication, tenancy, scopes and error codes are those of the GraphQL door. The operations
 * are in documents.ts, the request and answer schemas in schemas.ts, the shaping of answers in
 * shape.logic.ts.
 */

/** One REST page: one GraphQL page (the route's documents are exempt from the cost limit). */
async function coursesConnection(ctx: RouteContext, limit: number, cursor: string | null): Promise<CourseConnectionData> {
  const data = await ctx.graphql(COURSES, { first: limit, after: cursor });
  return data.courses as CourseConnectionData;
}

const CATALOG_READ = ['catalog.read', 'catalog.admin'] as const;
const CATALOG_ADMIN = ['catalog.admin'] as const;
const AI_ADMIN = ['ai.admin'] as const;
const AI_AUDIT = ['ai.audit'] as const;

const courseAnswer = (description: string) => ({
  description,
  schema: schema.course,
  headers: { etag: true, 'content-language': false },
});

export const ROUTES: Route[] = [
  {
    id: 'courses.list',
    method: 'GET',
    path: '/api/v1/courses',
    summary: "A page of the tenant's courses",
    description: 'Courses in a stable order; follow `nextCursor` until it is null. Courses added meanwhile are listed once.',
    scopes: CATALOG_READ,
    query: schema.coursesQuery,
    responses: {
      200: { description: 'One page of courses', schema: schema.coursesPage, headers: { 'content-language': false } },
    },
    errors: { 400: ['BAD_USER_INPUT'] },
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
    summary: 'One course',
    description: 'The `ETag` is the course etag (strong), for `If-Match` on PATCH and `If-None-Match` here.',
    scopes: CATALOG_READ,
    params: schema.courseIdParams,
    responses: { 200: courseAnswer('The course') },
    errors: { 404: ['request.not_found'] },
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
    summary: "Change a course's metadata",
    description: [
      'Needs `If-Match` with the course `ETag` (missing: 428, stale or weak: 412).',
      '`application/json`: each member given replaces the course member whole — `{"title": {"en": "…"}}` leaves a title with `en` only.',
      '`application/merge-patch+json` (RFC 7396): locale maps merge — `{"title": {"en": "…"}}` keeps the other locales,',
      '`{"title": {"fr": null}}` removes `fr`, `{"cover": null}` removes the cover; arrays and strings replace.',
    ].join(' '),
    scopes: CATALOG_ADMIN,
    ifMatch: true,
    params: schema.courseIdParams,
    body: schema.updateCourseMetadataBody,
    mergePatchBody: schema.mergePatchCourseMetadataBody,
    responses: { 200: courseAnswer('The course as changed, with its new ETag') },
    errors: { 400: ['BAD_USER_INPUT'], 404: ['request.not_found'], 409: ['lifecycle.illegal_transition'] },
    async run(request, ctx) {
      const courseId = request.params.courseId;
      if (request.mergePatch) return mergePatchCourse(courseId, request, ctx);
      const data = await ctx.graphql(UPDATE_COURSE_METADATA, { courseId, input: request.body });
      return courseResult(data.updateCourseMetadata as CourseData);
    },
  },
  {
    id: 'ai.assist',
    method: 'POST',
    path: '/v1/ai/assist',
    summary: "Run a feature's prompt through the routed model providers",
    description:
      'Store the `provenanceId` of the answer. An output held for human review is 202 with `Location` to poll; a blocked output is 422 `moderation.blocked` naming the provenance.',
    scopes: ['ai.assist'],
    body: schema.assistBody,
    responses: {
      200: { description: 'The output was released', schema: schema.assistCompleted },
      202: {
        description: 'The output waits for human review; poll the provenance record in `Location`',
        schema: schema.assistPendingReview,
        headers: { location: true },
      },
    },
    errors: {
      400: ['BAD_USER_INPUT'],
      422: [
        'moderation.blocked',
        'template.not_found',
        'routing.no_rule',
        'routing.no_provider_for_residency',
        'routing.assessment_required',
        'routing.residency_not_allowed',
      ],
      429: ['quota.exceeded'],
      503: ['provider.unavailable', 'quota.unavailable', 'moderation.unavailable', 'routing.residency_unavailable'],
    },
    async run({ body }, ctx) {
      const data = await ctx.graphql(ASSIST, { input: body });
      return assistResult(data.assist as AssistData & Record<string, unknown>);
    },
  },
  {
    id: 'ai.provenance.get',
    method: 'GET',
    path: '/v1/ai/provenance/{provenanceId}',
    summary: 'The provenance record of an AI-assisted output',
    scopes: ['ai.assist', 'ai.review', 'ai.admin', 'ai.audit'],
    params: schema.provenanceIdParams,
    responses: { 200: { description: 'The provenance record', schema: schema.provenance } },
    errors: { 404: ['request.not_found'] },
    async run({ params }, ctx) {
      const data = await ctx.graphql(PROVENANCE, { provenanceId: params.provenanceId });
      if (!data.provenance) throw notFound('Provenance record');
      return { status: 200, body: data.provenance };
    },
  },
  {
    id: 'ai.provenance.receipt',
    method: 'GET',
    path: '/v1/ai/provenance/{provenanceId}/receipt',
    summary: "The signed receipt of a provenance record (its latest: after a review, the decision's)",
    description: 'Verify it against `/v1/ai/receipts/jwks.json`; docs/ai-gateway.md, "Receipts".',
    scopes: AI_AUDIT,
    params: schema.provenanceIdParams,
    responses: { 200: { description: 'The receipt', schema: schema.provenanceReceipt } },
    errors: { 404: ['request.not_found'] },
    async run({ params }, ctx) {
      const data = await ctx.graphql(PROVENANCE_RECEIPT, { provenanceId: params.provenanceId });
      const found = data.provenance as { provenanceId: string; receipt: Record<string, unknown> | null } | null;
      if (!found?.receipt) throw notFound('Provenance receipt');
      return { status: 200, body: { provenanceId: found.provenanceId, ...found.receipt } };
    },
  },
  {
    id: 'ai.receipts.export',
    method: 'GET',
    path: '/v1/ai/receipts/export',
    summary: "The tenant's receipt chain for [from, to) as JSON Lines",
    description:
      'The JWKS, each receipt with its provenance row as it is now (null once erased), then a signed seal. At most 31 days per export. Verify offline with `npm run provenance:verify -- FILE --jwks JWKS`.',
    scopes: AI_AUDIT,
    query: schema.receiptExportQuery,
    responses: {
      200: {
        description: 'The export',
        schema: schema.receiptExportLines,
        mediaType: 'application/jsonl',
        headers: { 'cache-control': true },
      },
    },
    async run({ query }, ctx) {
      const data = await ctx.graphql(RECEIPT_EXPORT, { from: query.from, to: query.to });
      const lines = data.provenanceReceiptExport as string[];
      return {
        status: 200,
        body: undefined,
        text: { mediaType: 'application/jsonl; charset=utf-8', content: `${lines.join('\n')}\n` },
        headers: { 'cache-control': 'no-store' },
      };
    },
  },
  {
    id: 'ai.receipts.jwks',
    method: 'GET',
    path: '/v1/ai/receipts/jwks.json',
    summary: 'The public keys of every receipt signing key, current and rotated out',
    public: true,
    responses: {
      200: {
        description: 'The JWKS (Ed25519 keys, `kid` as receipts name them)',
        schema: schema.jwks,
        headers: { 'cache-control': true },
      },
    },
    errors: { 503: ['service.unavailable'] },
    async run(_request, ctx) {
      // The AI subgraph serves its keys from its database; this relays them.
      const response = await ctx.aiHttp('/v1/ai/receipts/jwks.json');
      if (!response.ok)
        throw new AppError('service.unavailable', 'The AI gateway cannot list its receipt keys', {
          headers: { 'retry-after': '1' },
        });
      return { status: 200, body: await response.json(), headers: { 'cache-control': 'max-age=300' } };
    },
  },
  {
    id: 'ai.quota.get',
    method: 'GET',
    path: '/v1/admin/quota',
    summary: "The tenant's quota settings",
    description: "The `ETag` is the settings' tag, for `If-Match` on PUT and `If-None-Match` here.",
    scopes: AI_ADMIN,
    // No parameters; declared so the document lists the 400 an unknown one gets.
    query: schema.emptyQuery,
    responses: {
      200: {
        description: 'The settings in force (the defaults until they are first set)',
        schema: schema.quotaSettings,
        headers: { etag: true },
      },
    },
    async run(_request, ctx) {
      const data = await ctx.graphql(QUOTA_SETTINGS, {});
      return quotaResult(data.quotaSettings as { etag: string });
    },
  },
  {
    id: 'ai.quota.put',
    method: 'PUT',
    path: '/v1/admin/quota',
    summary: "Replace the tenant's quota settings",
    description: [
      'Every member (0 = no limit). Needs `If-Match` with the settings `ETag` (missing: 428, stale: 412 naming the current `etag`).',
      'Audited (`audit.ai.quota_settings_changed` with the previous values); in force at once.',
    ].join(' '),
    scopes: AI_ADMIN,
    ifMatch: true,
    body: schema.quotaSettingsBody,
    responses: {
      200: { description: 'The settings as changed, with their new ETag', schema: schema.quotaSettings, headers: { etag: true } },
    },
    errors: { 400: ['BAD_USER_INPUT'] },
    async run({ body }, ctx) {
      const data = await ctx.graphql(SET_QUOTA_SETTINGS, { input: body });
      return quotaResult(data.setQuotaSettings as { etag: string });
    },
  },
  {
    id: 'ai.routing-rules.create',
    method: 'POST',
    path: '/v1/admin/routing-rules',
    summary: 'Create a routing override for the tenant',
    description: 'One rule per feature and residency: a second one is 409 `request.conflict` (update the existing rule instead).',
    scopes: AI_ADMIN,
    body: schema.createRoutingRuleBody,
    responses: {
      201: {
        description: 'The rule, at version 1; `Location` reads it back',
        schema: schema.routingRule,
        headers: { location: true },
      },
    },
    errors: { 400: ['BAD_USER_INPUT'], 409: ['request.conflict'], 422: ['routing.assessment_required'] },
    async run({ body }, ctx) {
      const data = await ctx.graphql(CREATE_ROUTING_RULE, { input: body });
      const rule = data.createRoutingRule as RoutingRuleData;
      return { status: 201, body: routingRuleJson(rule), headers: { location: routingRuleUrl(rule.ruleId) } };
    },
  },
  {
    id: 'ai.routing-rules.get',
    method: 'GET',
    path: '/v1/admin/routing-rules/{ruleId}',
    summary: "A routing rule: a global one or one of the tenant's",
    scopes: AI_ADMIN,
    params: schema.routingRuleIdParams,
    responses: { 200: { description: 'The rule with its versions', schema: schema.routingRule } },
    errors: { 404: ['request.not_found'] },
    async run({ params }, ctx) {
      const data = await ctx.graphql(ROUTING_RULE, { ruleId: params.ruleId });
      if (!data.routingRule) throw notFound('Routing rule');
      return { status: 200, body: routingRuleJson(data.routingRule as RoutingRuleData) };
    },
  },
  {
    id: 'catalog.dlq.replay',
    method: 'POST',
    path: '/admin/v1/catalog/dlq/replay',
    summary: "Send the tenant's matching dead letters back to their subjects",
    description:
      'A replay needs at least one of `subject`, `eventType`, `from`, `to`, `eventIds` (`"subject": ">"` replays every letter of the tenant); `dryRun` counts without replaying and needs none. `replayed` counts only the letters this call moved: of concurrent replays of one letter, one moves it.',
    scopes: CATALOG_ADMIN,
    body: schema.replayDeadLettersBody,
    responses: { 200: { description: 'How many letters matched and were replayed', schema: schema.deadLetterReplay } },
    errors: { 400: ['BAD_USER_INPUT', 'events.replay_filter_required'], 503: ['service.unavailable', 'events.replay_failed'] },
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
    summary: "The AI gateway's health (phase 0)",
    public: true,
    responses: {
      200: { description: 'The AI gateway can serve', schema: schema.aiHealth, headers: { 'cache-control': true } },
      503: {
        description: 'The AI gateway cannot serve (its database is down)',
        schema: schema.aiHealth,
        headers: { 'cache-control': true, 'retry-after': true },
      },
    },
    errors: { 503: ['service.unavailable'] },
    async run(_request, ctx) {
      // The AI subgraph serves its own health (it checks its own dependencies); this only relays it.
      const response = await ctx.aiHttp('/v1/ai/health');
      const body = await response.json().catch(() => ({ status: 'unknown' }));
      const headers: Record<string, string> = { 'cache-control': 'no-store' };
      if (response.status === 200) return { status: 200, body, headers };
      return { status: 503, body, headers: { ...headers, 'retry-after': '1' } };
    },
  },
];
