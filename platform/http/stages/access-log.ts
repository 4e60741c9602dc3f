import { header } from '../http.js';
import type { Stage } from '../pipeline.js';
import type { Logger } from '../../observability/logger.js';
import type { Metrics } from '../../observability/metrics.js';

/** Paths that are probed every few seconds: their access log lines are debug, not info. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics', '/health', '/v1/ai/health']);

/**
 * One access log line and the HTTP metrics per request, written when the response is done (or the
 * client went away: status 499). The `route` label is the endpoint's template, `unmatched` when no
 * endpoint took the request, so a label set stays closed whatever paths clients invent.
 */
export function accessLog(options: { service: string; logger: Logger; metrics?: Metrics }): Stage {
  const { service, logger, metrics } = options;
  return async (exchange, next) => {
    const startedAt = process.hrtime.bigint();
    const { res, method } = exchange;
    metrics?.httpInFlight.inc({ service });
    res.once('close', () => {
      metrics?.httpInFlight.dec({ service });
      const status = res.headersSent ? res.statusCode : 499;
      const route = exchange.endpoint?.route ?? 'unmatched';
      const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
      const labels = { service, method, route, status: String(status) };
      metrics?.httpRequests.inc(labels);
      metrics?.httpDuration.observe(labels, seconds);
      const line = {
        requestId: exchange.requestId,
        traceId: exchange.trace?.traceId,
        tenantId: header(exchange.req, 'x-tenant-id'),
        method,
        route,
        status,
        durationMs: Math.round(seconds * 1000),
        ...(res.writableFinished ? {} : { aborted: true }),
      };
      if (PROBES.has(exchange.url.pathname) && status < 500) logger.debug(line, 'request');
      else logger.info(line, 'request');
    });
    return next(exchange);
  };
}
