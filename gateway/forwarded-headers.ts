/**
 * Headers the gateway passes to every subgraph: the subgraphs verify the same token and tenant
 * again and need the request's trace, locale and write preconditions.
 */
export const FORWARDED_HEADERS = [
  'authorization',
  'x-tenant-id',
  'traceparent',
  'accept-language',
  'if-match',
  'idempotency-key',
  'x-request-id',
] as const;
