import type http from 'node:http';
import { SpanStatusCode } from '@opentelemetry/api';
import type { Config } from '../config/config.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { newId } from '../ids.js';
import { withRequestScope } from '../request-scope.js';
import { otelContext, startServerSpan } from '../telemetry.js';
import { AppError } from '../errors.js';
import { header, sendJson, sendProblem } from './http.js';

export interface ObservedServerOptions {
  /** `service` label and span attribute: gateway, catalog, ai. */
  service: string;
  logger: Logger;
  metrics?: Metrics;
  /** Route template of a request (e.g. `/api/v1/courses/:id`); defaults to a normalised path. */
  routeOf?: (req: http.IncomingMessage) => string | undefined;
}

/** What a server takes to be observed and drained; absent in tests that do not care. */
export interface ServerOps {
  metrics?: Metrics;
  /** How long shutdown waits for in-flight requests before cutting connections. */
  drainMs?: number;
}

/** Subgraph and gateway servers of a process: its metrics and the drain bound of the configuration. */
export function serverOpsFromConfig(config: Config, metrics: Metrics): ServerOps {
  return { metrics, drainMs: drainBound(config) };
}

/** Draining gets the shutdown bound minus a margin for stopping the worker, closing pools and flushing traces. */
export function drainBound(config: Config): number {
  return Math.max(1_000, config.ops.shutdownTimeoutMs - 5_000);
}

export interface ObservedServer {
  /** Requests being served right now. */
  inFlight(): number;
  readonly draining: boolean;
  /**
   * Stops taking requests and waits for those in flight: the listener closes, idle keep-alive
   * connections are dropped, every response still to be written says `Connection: close`, and a
   * request that still arrives on an open connection gets 503. Resolves when the last response has
   * been written and the server has closed. After `forceAfterMs` the remaining connections are cut.
   */
  drain(forceAfterMs?: number): Promise<void>;
}

/** Paths that are probed every few seconds: their access log lines are debug, not info. */
const PROBES = new Set(['/healthz', '/readyz', '/metrics', '/health', '/v1/ai/health']);

/**
 * Wraps a node:http server's request listeners: one server span per request (continuing the
 * caller's `traceparent`), the request's ids in every log line written while serving it (see
 * request-scope.ts), one access log line, HTTP metrics, and the in-flight count graceful shutdown
 * waits on. Installed after `createServer` so the servers it wraps keep their own handler as is.
 */
export function observeServer(server: http.Server, options: ObservedServerOptions): ObservedServer {
  const { logger, metrics, service } = options;
  const listeners = server.listeners('request') as Array<(req: http.IncomingMessage, res: http.ServerResponse) => void>;
  server.removeAllListeners('request');
  const active = new Set<http.ServerResponse>();
  let draining = false;
  let onIdle: (() => void) | undefined;

  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const startedAt = process.hrtime.bigint();
    const path = pathOf(req);
    if (draining) {
      // GraphQL clients get a GraphQL-shaped error, everyone else problem+json, as on any other error.
      const refusal = new AppError('SERVICE_UNAVAILABLE', 'The server is shutting down; retry on another replica', {
        headers: { 'retry-after': '1', connection: 'close' },
      });
      const graphqlBody = { errors: [{ message: refusal.message, extensions: { code: refusal.code, status: 503 } }] };
      if (path === '/graphql') sendJson(res, 503, graphqlBody, refusal.headers);
      else sendProblem(res, refusal);
      return;
    }
    const requestId = header(req, 'x-request-id') ?? newId('request');
    // Handlers read the id from the request, so the access log and the handler agree on it.
    if (!header(req, 'x-request-id')) req.headers['x-request-id'] = requestId;
    const method = (req.method ?? 'GET').toUpperCase();
    const { span, context } = startServerSpan(`${method} ${path}`, req.headers, {
      'http.request.method': method,
      'url.path': path,
      'service.component': service,
    });
    const scoped = withRequestScope(context, { requestId, tenantId: header(req, 'x-tenant-id') });
    active.add(res);
    metrics?.httpInFlight.inc({ service });

    res.once('close', () => {
      active.delete(res);
      metrics?.httpInFlight.dec({ service });
      const status = res.headersSent ? res.statusCode : 499;
      const route = status === 404 ? 'unmatched' : (options.routeOf?.(req) ?? normaliseRoute(path));
      const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
      const labels = { service, method, route, status: String(status) };
      metrics?.httpRequests.inc(labels);
      metrics?.httpDuration.observe(labels, seconds);
      span.updateName(`${method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': status });
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      const line = {
        requestId,
        traceId: span.spanContext().traceId,
        tenantId: header(req, 'x-tenant-id'),
        method,
        route,
        status,
        durationMs: Math.round(seconds * 1000),
        ...(res.writableFinished ? {} : { aborted: true }),
      };
      if (PROBES.has(path) && status < 500) logger.debug(line, 'request');
      else logger.info(line, 'request');
      if (draining) {
        server.closeIdleConnections();
        if (active.size === 0) onIdle?.();
      }
    });

    otelContext.with(scoped, () => {
      for (const listener of listeners) listener.call(server, req, res);
    });
  });

  return {
    inFlight: () => active.size,
    get draining() {
      return draining;
    },
    drain: async (forceAfterMs = 20_000) => {
      draining = true;
      // Only the last response of each connection says `Connection: close`: one marked earlier would
      // end the socket under a pipelined request already accepted behind it.
      const lastOnSocket = new Map<unknown, http.ServerResponse>();
      for (const res of active) lastOnSocket.set(res.req.socket, res);
      for (const res of lastOnSocket.values()) if (!res.headersSent) res.setHeader('connection', 'close');
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const idle = active.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => (onIdle = resolve));
      const force = setTimeout(() => {
        logger.warn({ inFlight: active.size }, 'drain bound reached; closing remaining connections');
        server.closeAllConnections();
      }, forceAfterMs);
      force.unref();
      try {
        await idle;
        server.closeIdleConnections();
        await closed;
      } finally {
        clearTimeout(force);
      }
    },
  };
}

function pathOf(req: http.IncomingMessage): string {
  try {
    return new URL(req.url ?? '/', 'http://localhost').pathname;
  } catch {
    return '/';
  }
}

/**
 * A route label without ids: segments that look like our ids (`crs_…`), ULIDs, UUIDs or numbers
 * become `:id`, so one label covers every course.
 */
export function normaliseRoute(path: string): string {
  const segments = path.split('/').map((segment) => {
    if (/^[a-z]{2,5}_[0-9A-HJKMNP-TV-Z]{26}$/i.test(segment)) return ':id';
    if (/^[0-9A-HJKMNP-TV-Z]{26}$/i.test(segment)) return ':id';
    if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(segment)) return ':id';
    if (/^\d+$/.test(segment)) return ':id';
    return segment;
  });
  return segments.join('/') || '/';
}
