import type { ExecuteOperation } from '../gateway/execute-port.js';
import { AppError } from '../platform/errors/errors.js';
import { header } from '../platform/http/http.js';
import { requireAnyScope } from '../platform/auth/verifier.js';
import { reply, type Endpoint, type EndpointTable, type Exchange, type Reply } from '../platform/http/pipeline.js';
import { METHODS_NEEDING_KEY, requestFingerprint } from '../platform/idempotency/idempotency.logic.js';
import { ifNoneMatchHolds } from '../platform/http/conditional.logic.js';
import { errorFromGraphQL } from './graphql-errors.logic.js';
import { OPENAPI_PATH, openApiDocument } from './openapi.logic.js';
import { compilePath, matchPath, type CompiledPath } from './path.logic.js';
import type { RestResult, Route, RouteContext, RouteRequest } from './route-definition.js';
import { ROUTES } from './route-table.js';
import { emptyQuery } from './schemas.js';
import { compileValidator, validationError, type Validator } from './validation.js';

export interface RestEndpointsDeps {
  /** The gateway's port: every route's operation runs through it, as the caller. */
  execute: ExecuteOperation;
  /** Base URL of the AI subgraph's HTTP server (its health endpoint lives there). */
  aiBaseUrl: string;
  routes?: readonly Route[];
  fetch?: typeof fetch;
}

interface CompiledRoute {
  route: Route;
  path: CompiledPath;
  endpoint: Endpoint;
}

const MERGE_PATCH = 'application/merge-patch+json';

/**
 * The REST table as endpoints of the gateway's pipeline, and its OpenAPI document at
 * `/openapi.json` (public). The stages have found the route (404/405), read the body (415/413),
 * authenticated the caller and applied the tenant rule (401/403) and, for writes, read the
 * Idempotency-Key (400); here `prepare` validates path, query and body (400), then after the
 * replay check the route runs: its scopes (403), If-Match (428), then its GraphQL operation
 * through the gateway's port; a GET with an ETag answers If-None-Match with 304.
 */
export function restEndpoints(deps: RestEndpointsDeps): EndpointTable {
  const fetchImpl = deps.fetch ?? fetch;
  const routes = deps.routes ?? ROUTES;
  // Built at start-up, so a route the document cannot describe stops the process, not a request.
  const contract = openApiEndpoint(openApiDocument(routes));
  const table: CompiledRoute[] = routes.map((route) => ({
    route,
    path: compilePath(route.path),
    endpoint: routeEndpoint(route, { ...deps, fetch: fetchImpl }),
  }));
  return {
    resolve(exchange) {
      if (exchange.url.pathname === OPENAPI_PATH) {
        if (exchange.method !== 'GET') return { kind: 'method_not_allowed', allow: ['GET'] };
        return { kind: 'found', endpoint: contract, params: {} };
      }
      const candidates = table.flatMap((entry) => {
        const params = matchPath(entry.path, exchange.url.pathname);
        return params ? [{ entry, params }] : [];
      });
      if (candidates.length === 0) return { kind: 'not_found' };
      const chosen = candidates.find((candidate) => candidate.entry.route.method === exchange.method);
      if (!chosen) return { kind: 'method_not_allowed', allow: [...new Set(candidates.map((c) => c.entry.route.method))] };
      return { kind: 'found', endpoint: chosen.entry.endpoint, params: chosen.params };
    },
  };
}

function openApiEndpoint(document: Record<string, unknown>): Endpoint {
  const body = JSON.stringify(document);
  return {
    route: OPENAPI_PATH,
    access: 'public',
    errors: 'problem',
    handle: async () => reply(200, body, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-cache' }),
  };
}

interface Validators {
  params?: Validator;
  query: Validator;
  body?: Validator;
  mergePatchBody?: Validator;
}

type RouteDeps = Required<Pick<RestEndpointsDeps, 'execute' | 'aiBaseUrl' | 'fetch'>>;

function routeEndpoint(route: Route, deps: RouteDeps): Endpoint {
  const validators: Validators = {
    params: route.params ? compileValidator(route.params, 'path') : undefined,
    query: compileValidator(route.query ?? emptyQuery, 'query'),
    body: route.body ? compileValidator(route.body, 'body') : undefined,
    mergePatchBody: route.mergePatchBody ? compileValidator(route.mergePatchBody, 'body') : undefined,
  };
  return {
    route: route.path,
    access: route.public ? 'public' : 'tenant',
    body: route.body !== undefined,
    errors: 'problem',
    keyedWrite(exchange) {
      if (route.public || !METHODS_NEEDING_KEY.has(route.method)) return undefined;
      // The same members mean another change as a merge patch: the key must not replay across them.
      const body = route.mergePatchBody && mediaType(exchange) === MERGE_PATCH ? { [MERGE_PATCH]: exchange.body } : exchange.body;
      return {
        route: `rest:${route.id}`,
        fingerprint: requestFingerprint(route.method, exchange.url.pathname, body),
        requiredOn: 'POST, PUT and PATCH requests',
      };
    },
    prepare(exchange): RouteRequest {
      const request = parseRequest(exchange, route, validators);
      route.check?.(request);
      return request;
    },
    async handle(exchange) {
      const request = exchange.input as RouteRequest;
      // The subgraphs check the scopes of each operation too; checking the route's here first
      // refuses a read-then-write route (merge patch) with its own scopes, before it reads.
      if (route.scopes) requireAnyScope(exchange.principal!, route.scopes);
      if (route.ifMatch && !request.headers.ifMatch) {
        throw new AppError('request.precondition_required', 'This write needs If-Match with the ETag of the course', {
          status: 428,
        });
      }
      const result = await route.run(request, routeContext(exchange, deps));
      return toReply(route.method === 'GET' ? notModifiedOr(result, request.headers.ifNoneMatch) : result);
    },
  };
}

/** RFC 9110 §13.1.2: a GET whose current ETag the caller already holds is 304, without a body. */
function notModifiedOr(result: RestResult, ifNoneMatch: string | undefined): RestResult {
  const etag = result.headers?.etag;
  if (ifNoneMatch === undefined || result.status !== 200 || !etag || ifNoneMatchHolds(ifNoneMatch, etag)) return result;
  // §15.4.5: the headers a 200 would have carried for caches (ETag, Vary), no representation metadata.
  const headers: Record<string, string> = { etag };
  if (result.headers?.vary) headers.vary = result.headers.vary;
  return { status: 304, body: undefined, headers };
}

function routeContext(exchange: Exchange, deps: Pick<RestEndpointsDeps, 'execute' | 'aiBaseUrl' | 'fetch'>): RouteContext {
  return {
    async graphql(document, variables, options = {}) {
      if (!exchange.principal) throw new Error('A public route cannot run GraphQL operations');
      // The route table's documents are ours and bounded by each route's own limits.
      const result = await deps.execute({ query: document, variables }, exchange, { trusted: true, ifMatch: options.ifMatch });
      if (result.errors?.length) throw errorFromGraphQL(result.errors);
      if (!result.data) throw new Error('The gateway returned neither data nor errors');
      return result.data;
    },
    async aiHttp(path) {
      try {
        return await deps.fetch!(new URL(path, deps.aiBaseUrl), { signal: AbortSignal.timeout(5_000) });
      } catch {
        throw new AppError('service.unavailable', 'The AI gateway is not reachable', { headers: { 'retry-after': '1' } });
      }
    },
  };
}

/** The body's media type without parameters, lower-cased. */
const mediaType = (exchange: Exchange) => (header(exchange.req, 'content-type') ?? '').split(';')[0].trim().toLowerCase();

/**
 * Which of the route's body schemas applies. A PATCH names its semantics by media type (RFC 5789),
 * so only the two it documents are taken; other JSON types (`application/json-patch+json`) are 415.
 */
function bodyValidator(exchange: Exchange, route: Route, validators: Validators): { validate?: Validator; mergePatch: boolean } {
  const type = mediaType(exchange);
  if (validators.mergePatchBody && type === MERGE_PATCH) return { validate: validators.mergePatchBody, mergePatch: true };
  if (route.method === 'PATCH' && type !== 'application/json') {
    const accepted = ['application/json', ...(validators.mergePatchBody ? [MERGE_PATCH] : [])].join(', ');
    throw new AppError('request.unsupported_media_type', `This PATCH takes ${accepted}`, {
      headers: { 'accept-patch': accepted },
    });
  }
  return { validate: validators.body, mergePatch: false };
}

function parseRequest(exchange: Exchange, route: Route, validators: Validators): RouteRequest {
  const params: Record<string, string> = {};
  for (const [name, raw] of Object.entries(exchange.params)) {
    try {
      params[name] = decodeURIComponent(raw);
    } catch {
      throw validationError('path', [{ path: `/${name}`, message: 'is not a valid percent-encoded segment' }]);
    }
  }
  validators.params?.(params);

  const query: Record<string, unknown> = {};
  for (const [name, value] of exchange.url.searchParams) {
    if (name in query) throw validationError('query', [{ path: `/${name}`, message: 'may be given only once' }]);
    query[name] = value;
  }
  validators.query(query);

  let mergePatch = false;
  if (validators.body) {
    if (exchange.body === undefined) throw validationError('body', [{ path: '', message: 'is required (a JSON object)' }]);
    const chosen = bodyValidator(exchange, route, validators);
    chosen.validate!(exchange.body);
    mergePatch = chosen.mergePatch;
  }
  return {
    params,
    query,
    body: exchange.body,
    mergePatch,
    headers: {
      acceptLanguage: header(exchange.req, 'accept-language'),
      ifMatch: header(exchange.req, 'if-match'),
      ifNoneMatch: header(exchange.req, 'if-none-match'),
    },
  };
}

function toReply(result: RestResult): Reply {
  if (result.status === 304) return { status: 304, headers: result.headers ?? {}, body: '' };
  if (result.text) {
    return {
      status: result.status,
      headers: { 'content-type': result.text.mediaType, ...(result.headers ?? {}) },
      body: result.text.content,
    };
  }
  return {
    status: result.status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...(result.headers ?? {}) },
    body: JSON.stringify(result.body),
  };
}
