import type { Metrics } from '../observability/metrics.js';
import { jsonReply, reply, type Endpoint, type EndpointTable } from './pipeline.js';

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, { status: 'up' | 'down' | 'degraded'; detail?: string; required: boolean }>;
}

/**
 * What orchestrators and Prometheus ask every server: `/healthz` (the process runs), `/readyz`
 * (its required dependencies answer; 503 otherwise) and `/metrics`. All public and GET only:
 * keep them off the public ingress.
 */
export function probeEndpoints(options: {
  service: string;
  readiness?: () => Promise<ReadinessReport>;
  metrics?: Metrics;
}): EndpointTable {
  const endpoints = new Map<string, Endpoint>();
  const get = (route: string, handle: Endpoint['handle']) =>
    endpoints.set(route, { route, access: 'public', errors: 'problem', handle });
  get('/healthz', async () => jsonReply(200, { status: 'ok', service: options.service }));
  const { readiness, metrics } = options;
  if (readiness) {
    get('/readyz', async () => {
      const report = await readiness();
      return jsonReply(report.ready ? 200 : 503, report, { 'cache-control': 'no-store' });
    });
  }
  if (metrics) {
    get('/metrics', async () => {
      const { contentType, body } = await metrics.render();
      return reply(200, body, { 'content-type': contentType, 'cache-control': 'no-store' });
    });
  }
  return {
    resolve(exchange) {
      const endpoint = endpoints.get(exchange.url.pathname);
      if (!endpoint) return { kind: 'not_found' };
      if (exchange.method !== 'GET' && exchange.method !== 'HEAD') return { kind: 'method_not_allowed', allow: ['GET', 'HEAD'] };
      return { kind: 'found', endpoint, params: {} };
    },
  };
}
