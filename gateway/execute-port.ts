import type { Exchange } from '../platform/http/pipeline.js';

/** One GraphQL operation, as a client would send it. */
export interface OperationRequest {
  query: string;
  variables?: Record<string, unknown>;
  operationName?: string;
}

export interface OperationResult {
  data?: Record<string, unknown> | null;
  errors?: ReadonlyArray<{ message: string; extensions?: Record<string, unknown> }>;
}

/**
 * The gateway's one port for running an operation on behalf of an HTTP exchange that passed the
 * pipeline (authenticated, tenant-checked, keyed where it writes): the query planner, the subgraph
 * fetches and the error formatting are those of /graphql. REST-compat runs every route through it.
 * `trusted` marks the caller's own fixed documents, which the cost limit does not apply to.
 * `ifMatch` replaces the request's If-Match for this operation: a read-modify-write (REST's merge
 * patch) pins its write to the entity tag it read, so a change in between is a 412, not lost.
 */
export type ExecuteOperation = (
  operation: OperationRequest,
  exchange: Exchange,
  options?: ExecuteOptions,
) => Promise<OperationResult>;

export interface ExecuteOptions {
  trusted?: boolean;
  ifMatch?: string;
}
