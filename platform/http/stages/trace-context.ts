import { SpanStatusCode } from '@opentelemetry/api';
import { header } from '../http.js';
import type { Stage } from '../pipeline.js';
import { withRequestScope } from '../../observability/request-scope.js';
import { otelContext, startServerSpan } from '../../observability/telemetry.js';
import { continueTrace } from '../../observability/trace-context.js';

/**
 * Continues the caller's W3C trace (or starts one) with a server span for the request, puts the
 * request's ids in the context every log line reads (request-scope.ts), and returns `traceparent`
 * on every reply. The span ends when the response is written, named by the endpoint's route.
 */
export function traceContext(service: string): Stage {
  return async (exchange, next) => {
    const { method, url, req, res } = exchange;
    const { span, context } = startServerSpan(`${method} ${url.pathname}`, req.headers, {
      'http.request.method': method,
      'url.path': url.pathname,
      'service.component': service,
    });
    const scoped = withRequestScope(context, { requestId: exchange.requestId, tenantId: header(req, 'x-tenant-id') });
    res.once('close', () => {
      const status = res.headersSent ? res.statusCode : 499;
      const route = exchange.endpoint?.route ?? 'unmatched';
      span.updateName(`${method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    return otelContext.with(scoped, () => {
      exchange.trace = continueTrace(header(req, 'traceparent'));
      exchange.replyHeaders.traceparent = exchange.trace.traceparent;
      return next(exchange);
    });
  };
}
