import { isStorableStatus } from '../platform/idempotency/idempotency.logic.js';
import type { Route, RouteResponse, RouteResponseHeader } from './route-definition.js';
import * as schema from './schemas.js';
import type { JsonSchema } from './validation.js';

/**
 * The OpenAPI 3.1 document of the REST door, generated from the route table: paths, parameters,
 * request and answer schemas, the problem codes of each route by status, the headers, and the
 * scopes. Pure: the table in, the document out. The errors every route shares come from the
 * route's own properties (a body, an Idempotency-Key, If-Match, authentication), so the document
 * says what the stages in front of the route really do.
 */

export const OPENAPI_PATH = '/openapi.json';

type JsonObject = Record<string, unknown>;

/** Components by name; a schema object of the table that is one of these is published as a $ref. */
const NAMED_SCHEMAS: Record<string, JsonSchema> = {
  Problem: schema.problem,
  Course: schema.course,
  CoursesPage: schema.coursesPage,
  AssistCompleted: schema.assistCompleted,
  AssistPendingReview: schema.assistPendingReview,
  Provenance: schema.provenance,
  RoutingRule: schema.routingRule,
  DeadLetterReplay: schema.deadLetterReplay,
  AiHealth: schema.aiHealth,
};

const HEADERS: Record<string, { name: string; description: string; schema: JsonSchema }> = {
  traceparent: {
    name: 'traceparent',
    description: "W3C trace context: the caller's trace continued, or a new one when it sent none or an invalid one",
    schema: { type: 'string', pattern: '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' },
  },
  'x-request-id': {
    name: 'X-Request-Id',
    description: "The caller's X-Request-Id when it matches ^[A-Za-z0-9._:-]{1,64}$, otherwise an id of ours",
    schema: { type: 'string' },
  },
  etag: { name: 'ETag', description: 'The course etag (a strong entity tag)', schema: { type: 'string' } },
  location: { name: 'Location', description: 'Where the created or pending resource is read', schema: { type: 'string' } },
  'content-language': {
    name: 'Content-Language',
    description: 'The locales of the resolved texts (`localizedTitle`, `localizedDescription`), in order of first use',
    schema: { type: 'string' },
  },
  'cache-control': { name: 'Cache-Control', description: 'Never cached', schema: { type: 'string' } },
  'retry-after': { name: 'Retry-After', description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } },
  'idempotent-replayed': {
    name: 'Idempotent-Replayed',
    description: 'The stored answer of an earlier request with the same Idempotency-Key, replayed byte for byte',
    schema: { const: 'true' },
  },
  'www-authenticate': {
    name: 'WWW-Authenticate',
    description:
      'RFC 6750: `Bearer realm="catalog-ai"` without a bearer token; with `error="invalid_token"` and `error_description` "The access token expired" or "The access token is invalid" for a refused one',
    schema: { type: 'string' },
  },
};

const PARAMETERS: Record<string, JsonObject> = {
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: true,
    description:
      'A ULID (bare or quoted). Scoped by tenant, caller and route and kept 24 hours: a repeat replays the stored answer, the same key with another request is 422, a key still running is 409.',
    schema: { type: 'string', pattern: '^"?[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}"?$' },
  },
  IfMatch: {
    name: 'If-Match',
    in: 'header',
    required: true,
    description: 'The ETag of the resource as read (strong comparison; `*` for any). Missing: 428; stale or weak: 412.',
    schema: { type: 'string' },
  },
  IfNoneMatch: {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description: 'Entity tags the caller holds (weak comparison; `*` for any): 304 without a body when one is current.',
    schema: { type: 'string' },
  },
  AcceptLanguage: {
    name: 'Accept-Language',
    in: 'header',
    required: false,
    description: 'BCP 47 preferences for `localizedTitle` and `localizedDescription` (fallback: the course default locale)',
    schema: { type: 'string' },
  },
  Traceparent: {
    name: 'traceparent',
    in: 'header',
    required: false,
    description: 'W3C trace context; the gateway starts a trace when it is missing or invalid',
    schema: { type: 'string' },
  },
  RequestId: {
    name: 'X-Request-Id',
    in: 'header',
    required: false,
    description: 'Echoed when it matches ^[A-Za-z0-9._:-]{1,64}$',
    schema: { type: 'string' },
  },
};

const SECURITY_SCHEMES = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'An EdDSA (Ed25519) JWT with `sub`, `tid`, `iat`, `exp` (at most 15 minutes after `iat`) and `scope` (space-separated). Any one of the scopes listed on an operation admits the caller; without one: 403 `authz.scope_missing` naming them in `acceptedScopes`.',
  },
  tenantId: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Tenant-Id',
    description:
      'Must equal the token `tid`: missing 400 `authz.tenant_header_required`, another tenant 403 `authz.tenant_not_a_member`.',
  },
};

const STATUS_TEXT: Record<number, string> = {
  400: 'The request is invalid',
  401: 'No valid bearer token',
  403: 'Another tenant, or no accepted scope',
  404: 'Not found in the tenant',
  409: 'In conflict with the current state, or the same Idempotency-Key is still running',
  412: 'If-Match does not match the current ETag',
  413: 'The body is larger than MAX_BODY_BYTES',
  415: 'The body is not of an accepted JSON media type',
  422: 'Refused as it stands',
  428: 'If-Match is required',
  429: 'Over the quota',
  500: 'An internal error (its text never leaves the service)',
  501: 'The graph does not offer the operation of this route',
  503: 'A dependency is unavailable; retry after Retry-After',
};

/** The operations' tags (the first segment of the route id), each described for the reader. */
const TAGS: Record<string, string> = {
  courses: "The tenant's courses: list, read, change metadata (catalog subgraph)",
  ai: 'The AI gateway: assist, provenance, quota settings, routing rules, health (AI subgraph)',
  catalog: 'Catalog operations: the dead-letter queue of consumed events (catalog subgraph)',
};

const tagOf = (route: Route) => route.id.split('.')[0];

const isKeyedWrite = (route: Route) => !route.public && ['POST', 'PUT', 'PATCH'].includes(route.method);

/** A GET whose answer carries an ETag answers If-None-Match with 304 (rest-endpoints.ts). */
export const answersNotModified = (route: Route) => route.method === 'GET' && route.responses[200]?.headers?.etag !== undefined;

/** The problem codes each route can answer because of the request rules in front of it. */
export function sharedErrors(route: Route): Record<number, string[]> {
  // Every route validates its query string (a route without query parameters refuses any), so
  // every route can answer 400 request.validation_failed (rest-endpoints.ts, parseRequest).
  const errors: Record<number, string[]> = {
    400: ['request.validation_failed'],
    500: ['INTERNAL_SERVER_ERROR'],
    503: ['service.unavailable'],
  };
  const add = (status: number, ...codes: string[]) => (errors[status] = [...(errors[status] ?? []), ...codes]);
  if (route.body) {
    add(400, 'BAD_USER_INPUT');
    add(413, 'request.payload_too_large');
    add(415, 'request.unsupported_media_type', 'request.unsupported_content_encoding');
  }
  if (!route.public) {
    add(400, 'authz.tenant_header_required');
    add(401, 'UNAUTHENTICATED');
    add(403, 'authz.tenant_not_a_member', 'authz.scope_missing');
    add(501, 'request.not_implemented');
    add(503, 'subgraph.unavailable', 'dependency.unavailable');
  }
  if (isKeyedWrite(route)) {
    add(400, 'idempotency.key_required', 'idempotency.key_invalid');
    add(409, 'idempotency.in_flight');
    add(422, 'idempotency.key_reused');
  }
  if (route.ifMatch) {
    add(412, 'request.precondition_failed');
    add(428, 'request.precondition_required');
  }
  return errors;
}

/** Every problem code of the route by status: the shared ones and its own. */
export function routeErrors(route: Route): Record<number, string[]> {
  const errors = sharedErrors(route);
  for (const [status, codes] of Object.entries(route.errors ?? {})) {
    errors[Number(status)] = [...new Set([...(errors[Number(status)] ?? []), ...codes])];
  }
  return errors;
}

/** Refuses a route the document cannot describe truthfully: the test suite builds the document. */
function checkDocumented(route: Route): void {
  const successes = Object.entries(route.responses).filter(([status]) => Number(status) >= 200 && Number(status) < 300);
  if (successes.length === 0 || successes.some(([, response]) => !response.schema)) {
    throw new Error(`REST route ${route.id} must document each successful answer with its schema`);
  }
  if (!route.public && !route.scopes?.length) throw new Error(`REST route ${route.id} must name the scopes that admit a caller`);
  if (!Object.hasOwn(TAGS, tagOf(route))) throw new Error(`REST route ${route.id}: describe its tag ${tagOf(route)} in TAGS`);
  const inPath = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]).sort();
  const documented = Object.keys((route.params?.properties as JsonObject | undefined) ?? {}).sort();
  if (inPath.join() !== documented.join())
    throw new Error(`REST route ${route.id}: path parameters ${inPath} but schema ${documented}`);
  for (const status of Object.keys(route.errors ?? {})) {
    if (Number(status) < 400) throw new Error(`REST route ${route.id}: error status ${status} is not an error`);
  }
}

function ref(kind: 'schemas' | 'parameters', name: string) {
  return { $ref: `#/components/${kind}/${name}` };
}

/** The schema with each named component it contains (itself too, unless it is the component) as a $ref. */
function publish(value: unknown, names: Map<unknown, string>, self?: unknown): unknown {
  if (value !== self && names.has(value)) return ref('schemas', names.get(value)!);
  if (Array.isArray(value)) return value.map((item) => publish(item, names));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, publish(member, names)]));
}

function parametersOf(route: Route): JsonObject[] {
  const fromSchema = (where: 'path' | 'query', source?: JsonSchema) => {
    const required = new Set((source?.required as string[] | undefined) ?? []);
    return Object.entries((source?.properties as Record<string, JsonSchema> | undefined) ?? {}).map(([name, member]) => ({
      name,
      in: where,
      required: where === 'path' || required.has(name),
      schema: member,
    }));
  };
  const headers = [
    ...(isKeyedWrite(route) ? ['IdempotencyKey'] : []),
    ...(route.ifMatch ? ['IfMatch'] : []),
    ...(answersNotModified(route) ? ['IfNoneMatch'] : []),
    ...(Object.values(route.responses).some((response) => response.headers?.['content-language'] !== undefined)
      ? ['AcceptLanguage']
      : []),
    'Traceparent',
    'RequestId',
  ];
  return [
    ...fromSchema('path', route.params),
    ...fromSchema('query', route.query),
    ...headers.map((name) => ref('parameters', name)),
  ];
}

function requestBodyOf(route: Route): JsonObject | undefined {
  if (!route.body) return undefined;
  const content: JsonObject = { 'application/json': { schema: route.body } };
  if (route.mergePatchBody) content['application/merge-patch+json'] = { schema: route.mergePatchBody };
  return { required: true, content };
}

type HeaderUse = Partial<Record<RouteResponseHeader | 'idempotent-replayed' | 'www-authenticate', boolean>>;

function headersOf(route: Route, status: number, declared: HeaderUse, codes: readonly string[]): JsonObject {
  const use: HeaderUse & Record<string, boolean> = { traceparent: true, 'x-request-id': true, ...declared };
  if (isKeyedWrite(route) && isStorableStatus(status)) use['idempotent-replayed'] = false;
  if (status === 401) use['www-authenticate'] = true;
  if (status === 429 || status === 503) use['retry-after'] = true;
  if (codes.includes('idempotency.in_flight')) use['retry-after'] = codes.length === 1;
  return Object.fromEntries(
    Object.entries(use).map(([header, required]) => {
      const { description } = HEADERS[header];
      return [HEADERS[header].name, { description, required, schema: HEADERS[header].schema }];
    }),
  );
}

/** Problem+json whose `code` is one of those documented for the status. */
const problemFor = (status: number, codes: readonly string[]): JsonSchema => ({
  type: 'object',
  allOf: [schema.problem],
  properties: { status: { const: status }, code: { enum: [...codes] } },
});

function responsesOf(route: Route): JsonObject {
  const errors = routeErrors(route);
  const answers: Record<number, RouteResponse> = { ...route.responses };
  if (answersNotModified(route)) {
    answers[304] = { description: 'Not modified: If-None-Match names the current ETag; no body', headers: { etag: true } };
  }
  const statuses = [...new Set([...Object.keys(answers), ...Object.keys(errors)].map(Number))].sort((a, b) => a - b);
  return Object.fromEntries(
    statuses.map((status) => {
      const answer = answers[status];
      const codes = errors[status] ?? [];
      const content: JsonObject = {};
      if (answer?.schema) content[answer.mediaType ?? 'application/json'] = { schema: answer.schema };
      if (codes.length) content['application/problem+json'] = { schema: problemFor(status, codes) };
      const description =
        answer?.description ?? `${STATUS_TEXT[status] ?? 'Refused'}: ${codes.map((c) => `\`${c}\``).join(', ')}`;
      return [
        String(status),
        {
          description,
          headers: headersOf(route, status, answer?.headers ?? {}, answer ? [] : codes),
          ...(Object.keys(content).length ? { content } : {}),
        },
      ];
    }),
  );
}

function operationOf(route: Route): JsonObject {
  return {
    operationId: route.id,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [tagOf(route)],
    security: route.public ? [] : route.scopes!.map((scope) => ({ bearerAuth: [scope], tenantId: [] })),
    ...(route.public ? {} : { 'x-scopes': [...route.scopes!] }),
    parameters: parametersOf(route),
    ...(route.body ? { requestBody: requestBodyOf(route) } : {}),
    responses: responsesOf(route),
  };
}

export function openApiDocument(routes: readonly Route[]): JsonObject {
  const names = new Map<unknown, string>(Object.entries(NAMED_SCHEMAS).map(([name, value]) => [value, name]));
  const paths: Record<string, Record<string, JsonObject>> = {};
  for (const route of routes) {
    checkDocumented(route);
    const methods = (paths[route.path] ??= {});
    if (methods[route.method.toLowerCase()]) throw new Error(`REST route ${route.id}: ${route.method} ${route.path} is taken`);
    methods[route.method.toLowerCase()] = operationOf(route);
  }
  const document = {
    openapi: '3.1.1',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'Catalog and AI gateway: REST-compat',
      version: '1.0.0',
      description:
        'The REST routes of legacy consumers. Each runs one GraphQL operation through the gateway, so authentication, tenancy, scopes and error codes are those of `/graphql`. Errors are RFC 9457 problem documents with a stable `code` (every code: docs/error-codes.md).',
      // The package is private; SPDX's LicenseRef- form names a licence that is not on its list.
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: '/', description: 'The gateway that served this document (REST routes beside /graphql)' }],
    tags: [...new Set(routes.map(tagOf))].map((name) => ({ name, description: TAGS[name] })),
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(NAMED_SCHEMAS).map(([name, value]) => [name, publish(value, names, value)])),
      parameters: PARAMETERS,
      securitySchemes: SECURITY_SCHEMES,
    },
  };
  return { ...document, paths: publish(paths, names) };
}
