import type { JsonSchema } from './validation.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A request after its path, query and body passed their schemas. */
export interface RouteRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  headers: { acceptLanguage?: string; ifMatch?: string };
}

export interface RestResult {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface GraphQLOutcome {
  data?: Record<string, unknown> | null;
  errors?: ReadonlyArray<{ message: string; extensions?: Record<string, unknown> }>;
}

export interface RouteContext {
  /** Runs the operation through the gateway as the caller; GraphQL errors are thrown as problems. */
  graphql(document: string, variables: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Origin-relative URL of the AI subgraph's own HTTP endpoints. */
  aiHttp(path: string): Promise<Response>;
}

/**
 * One entry of the REST table. `check` runs before anything executes (semantic validation the
 * schemas cannot express); `run` is the execution, inside the idempotency guard for writes.
 */
export interface Route {
  id: string;
  method: Method;
  /** `/api/v1/courses/{courseId}`: each `{name}` is one path segment, validated by `params`. */
  path: string;
  /** Public routes skip authentication (health). */
  public?: boolean;
  /** Optimistic-concurrency write: If-Match is required (428) once the replay check has run. */
  ifMatch?: boolean;
  params?: JsonSchema;
  query?: JsonSchema;
  body?: JsonSchema;
  check?(request: RouteRequest): void;
  run(request: RouteRequest, context: RouteContext): Promise<RestResult>;
}
