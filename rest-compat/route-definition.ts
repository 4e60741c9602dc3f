import type { JsonSchema } from './validation.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A request after its path, query and body passed their schemas. */
export interface RouteRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  /** The body is an RFC 7396 merge patch (`application/merge-patch+json`), validated by `mergePatchBody`. */
  mergePatch: boolean;
  headers: { acceptLanguage?: string; ifMatch?: string; ifNoneMatch?: string };
}

export interface RestResult {
  status: number;
  body: unknown;
  /** Sent as it is under `mediaType` instead of `body` as JSON (a JSON Lines export). */
  text?: { mediaType: string; content: string };
  headers?: Record<string, string>;
}

export interface GraphQLOutcome {
  data?: Record<string, unknown> | null;
  errors?: ReadonlyArray<{ message: string; extensions?: Record<string, unknown> }>;
}

export interface RouteContext {
  /**
   * Runs the operation through the gateway as the caller; GraphQL errors are thrown as problems.
   * `ifMatch` replaces the caller's If-Match for this operation (a write pinned to what was read).
   */
  graphql(document: string, variables: Record<string, unknown>, options?: { ifMatch?: string }): Promise<Record<string, unknown>>;
  /** Origin-relative URL of the AI subgraph's own HTTP endpoints. */
  aiHttp(path: string): Promise<Response>;
}

/** Response headers a route may declare on its answers (those of every answer are added by the document). */
export type RouteResponseHeader = 'etag' | 'location' | 'content-language' | 'cache-control' | 'retry-after';

/** One answer of a route, as the OpenAPI document (rest-compat/openapi.logic.ts) describes it. */
export interface RouteResponse {
  description: string;
  /** The JSON body; absent for an answer without one (304). */
  schema?: JsonSchema;
  /** A body that is not one JSON document (a JSON Lines export): its media type, instead of application/json. */
  mediaType?: string;
  /** The headers this answer carries: `true` always, `false` when it depends on the answer. */
  headers?: Partial<Record<RouteResponseHeader, boolean>>;
}

/**
 * One entry of the REST table, and the single source of its OpenAPI description. `check` runs
 * before anything executes (semantic validation the schemas cannot express); `run` is the
 * execution, inside the idempotency guard for writes.
 */
export interface Route {
  id: string;
  method: Method;
  /** `/api/v1/courses/{courseId}`: each `{name}` is one path segment, validated by `params`. */
  path: string;
  summary: string;
  /** What a client needs to know beyond the summary (Markdown). */
  description?: string;
  /** Public routes skip authentication (health). */
  public?: boolean;
  /**
   * Any one of these scopes admits the caller (every non-public route has at least one). The
   * subgraphs check the scopes of the operation the route runs; the REST door checks these first,
   * so a route that reads before it writes refuses with its own scopes, not those of the read.
   */
  scopes?: readonly [string, ...string[]];
  /** Optimistic-concurrency write: If-Match is required (428) once the replay check has run. */
  ifMatch?: boolean;
  params?: JsonSchema;
  query?: JsonSchema;
  /** The `application/json` body. */
  body?: JsonSchema;
  /** PATCH only: the `application/merge-patch+json` body (RFC 7396); the route's `run` applies it. */
  mergePatchBody?: JsonSchema;
  /** Every answer that is not an error, by status (a GET with an ETag gets its 304 from the door). */
  responses: Record<number, RouteResponse>;
  /**
   * Error codes the route's own operation may answer, by status, beyond those of the request rules
   * every route shares (authentication, tenancy, scopes, validation, Idempotency-Key, If-Match, outages).
   */
  errors?: Record<number, readonly string[]>;
  check?(request: RouteRequest): void;
  run(request: RouteRequest, context: RouteContext): Promise<RestResult>;
}
