import { context, createContextKey, trace, type Context } from '@opentelemetry/api';

/**
 * What every log line written while serving a request should carry. It rides in the OTel context
 * (kept across awaits by the context manager telemetry.ts installs), so code deep in a resolver or
 * a library callback logs with the request's ids without being handed a child logger.
 */
export interface RequestScope {
  requestId: string;
  /** As claimed by X-Tenant-Id; a mismatch with the token is refused before any work is done. */
  tenantId?: string;
}

const REQUEST_SCOPE = createContextKey('catalog-ai-federation.request-scope');

export function withRequestScope(parent: Context, scope: RequestScope): Context {
  return parent.setValue(REQUEST_SCOPE, scope);
}

export function currentRequestScope(from: Context = context.active()): RequestScope | undefined {
  return from.getValue(REQUEST_SCOPE) as RequestScope | undefined;
}

/** requestId, traceId and tenantId of the request being served, for pino's mixin. */
export function requestLogFields(from: Context = context.active()): Record<string, string> {
  const fields: Record<string, string> = {};
  const scope = currentRequestScope(from);
  if (scope) {
    fields.requestId = scope.requestId;
    if (scope.tenantId) fields.tenantId = scope.tenantId;
  }
  const span = trace.getSpanContext(from);
  if (span && trace.isSpanContextValid(span)) fields.traceId = span.traceId;
  return fields;
}
