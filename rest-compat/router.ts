import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GatewayContext, GatewayHandle, RestRouter } from '../gateway/server.js';
import { forwardedHeaders } from '../gateway/server.js';
import { authenticateRequest } from '../platform/auth/verifier.js';
import { AppError, isAppError } from '../platform/errors.js';
import { header, isJsonContentType, readJson, send, toProblem } from '../platform/http/http.js';
import { runIdempotent, sendIdempotentResult } from '../platform/idempotency/guard.js';
import {
  METHODS_NEEDING_KEY,
  parseIdempotencyKey,
  requestFingerprint,
  type StoredResponse,
} from '../platform/idempotency/idempotency.logic.js';
import type { IdempotencyStore } from '../platform/idempotency/store.js';
import { errorFromGraphQL } from './graphql-errors.logic.js';
import { compilePath, matchPath } from './path.logic.js';
import type { RestResult, Route, RouteContext, RouteRequest } from './route.js';
import { ROUTES } from './routes.js';
import { compileValidator, validationError, type Validator } from './validation.js';
import { emptyQuery } from './schemas.js';

export interface RestRouterDeps {
  idempotency: IdempotencyStore;
  /** Base URL of the AI subgraph's HTTP server (its health endpoint lives there). */
  aiBaseUrl: string;
  routes?: Route[];
  fetch?: typeof fetch;
}

interface CompiledRoute {
  route: Route;
  path: ReturnType<typeof compilePath>;
  params?: Validator;
  query: Validator;
  body?: Validator;
}

/**
 * The REST door. Order of the request rules: route (404/405), authentication and tenant (401/403),
 * Idempotency-Key syntax (400), path/query/body validation (415/413/400) — none of which stores
 * anything — then, for writes, the replay check, If-Match (428), and the operation itself.
 */
export function createRestRouter(deps: RestRouterDeps): RestRouter {
  const fetchImpl = deps.fetch ?? fetch;
  const table: CompiledRoute[] = (deps.routes ?? ROUTES).map((route) => ({
    route,
    path: compilePath(route.path),
    params: route.params ? compileValidator(route.params, 'path') : undefined,
    query: compileValidator(route.query ?? emptyQuery, 'query'),
    body: route.body ? compileValidator(route.body, 'body') : undefined,
  }));

  return {
    async handle(req, res, gateway, info) {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const candidates = table.flatMap((entry) => {
        const params = matchPath(entry.path, url.pathname);
        return params ? [{ entry, params }] : [];
      });
      if (candidates.length === 0) return false;
      const method = (req.method ?? 'GET').toUpperCase();
      const chosen = candidates.find((candidate) => candidate.entry.route.method === method);
      if (!chosen) {
        const allow = [...new Set(candidates.map((candidate) => candidate.entry.route.method))].join(', ');
        throw new AppError('METHOD_NOT_ALLOWED', `${method} is not supported on ${url.pathname}`, { headers: { allow } });
      }
      const { entry } = chosen;
      const { route } = entry;
      const { requestId, traceparent } = info;

      if (route.public) {
        const result = await route.run(
          await parseRequest(req, entry, chosen.params, gateway.maxBodyBytes),
          routeContext(undefined),
        );
        reply(res, toStored(result));
        return true;
      }

      const principal = await authenticateRequest(gateway.verifier, {
        authorization: header(req, 'authorization'),
        tenantId: header(req, 'x-tenant-id'),
      });
      const key = METHODS_NEEDING_KEY.has(method) ? parseIdempotencyKey(header(req, 'idempotency-key')) : undefined;
      const request = await parseRequest(req, entry, chosen.params, gateway.maxBodyBytes);
      route.check?.(request);
      const context: GatewayContext = {
        principal,
        requestId,
        forward: forwardedHeaders(req, requestId, traceparent),
        idempotencyChecked: key !== undefined,
        // The route table's documents are ours and bounded by each route's own limits.
        trustedOperation: true,
      };
      const ctx = routeContext({ gateway, context });

      const execute = async (): Promise<StoredResponse> => {
        try {
          if (route.ifMatch && !request.headers.ifMatch) {
            throw new AppError('PRECONDITION_REQUIRED', 'This write needs If-Match with the ETag of the course', { status: 428 });
          }
          return toStored(await route.run(request, ctx));
        } catch (error) {
          // Problems are responses; the guard decides which of them may be replayed.
          if (isAppError(error)) return problemResponse(error);
          throw error;
        }
      };
      if (key === undefined) {
        reply(res, await execute());
        return true;
      }
      const result = await runIdempotent(
        deps.idempotency,
        {
          scope: { tenantId: principal.tenantId, subject: principal.subject, route: `rest:${route.id}` },
          key,
          fingerprint: requestFingerprint(method, url.pathname, request.body),
        },
        execute,
        gateway.logger,
      );
      sendIdempotentResult(res, result);
      return true;
    },
  };

  function routeContext(graph: { gateway: GatewayHandle; context: GatewayContext } | undefined): RouteContext {
    return {
      async graphql(document, variables) {
        if (!graph) throw new Error('A public route cannot run GraphQL operations');
        const result = await graph.gateway.execute({ query: document, variables }, graph.context);
        if (result.errors?.length) throw errorFromGraphQL(result.errors);
        if (!result.data) throw new Error('The gateway returned neither data nor errors');
        return result.data;
      },
      async aiHttp(path) {
        try {
          return await fetchImpl(new URL(path, deps.aiBaseUrl), { signal: AbortSignal.timeout(5_000) });
        } catch {
          throw new AppError('SERVICE_UNAVAILABLE', 'The AI gateway is not reachable');
        }
      },
    };
  }
}

async function parseRequest(
  req: IncomingMessage,
  entry: CompiledRoute,
  rawParams: Record<string, string>,
  maxBodyBytes: number,
): Promise<RouteRequest> {
  const params: Record<string, string> = {};
  for (const [name, raw] of Object.entries(rawParams)) {
    try {
      params[name] = decodeURIComponent(raw);
    } catch {
      throw validationError('path', [{ path: `/${name}`, message: 'is not a valid percent-encoded segment' }]);
    }
  }
  if (entry.params) entry.params(params);

  const query: Record<string, unknown> = {};
  const search = new URL(req.url ?? '/', 'http://localhost').searchParams;
  for (const [name, value] of search) {
    if (name in query) throw validationError('query', [{ path: `/${name}`, message: 'may be given only once' }]);
    query[name] = value;
  }
  entry.query(query);

  let body: unknown;
  if (entry.body) {
    const type = header(req, 'content-type');
    if (type !== undefined && !isJsonContentType(type)) {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Only application/json request bodies are accepted', {
        headers: { 'accept-patch': 'application/json' },
      });
    }
    body = await readJson(req, maxBodyBytes);
    if (body === undefined) throw validationError('body', [{ path: '', message: 'is required (a JSON object)' }]);
    entry.body(body);
  }
  return { params, query, body, headers: { acceptLanguage: header(req, 'accept-language'), ifMatch: header(req, 'if-match') } };
}

function toStored(result: RestResult): StoredResponse {
  return {
    status: result.status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...(result.headers ?? {}) },
    body: JSON.stringify(result.body),
  };
}

function problemResponse(error: AppError): StoredResponse {
  const { problem, headers } = toProblem(error);
  return {
    status: problem.status,
    headers: { 'content-type': 'application/problem+json; charset=utf-8', ...headers },
    body: JSON.stringify(problem),
  };
}

function reply(res: ServerResponse, response: StoredResponse): void {
  send(res, response.status, response.body, response.headers);
}
