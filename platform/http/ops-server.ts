import type { AddressInfo } from 'node:net';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { pipeline } from './pipeline.js';
import { probeEndpoints, type ReadinessReport } from './probe-endpoints.js';
import { answerWithEndpoint, createHttpServer, serve } from './serve.js';
import { errorReplies } from './stages/error-replies.js';
import { requestId } from './stages/request-id.js';
import { route } from './stages/route.js';

/**
 * A process without an HTTP door of its own (the event worker) serves its probes on the ops port:
 * /healthz (liveness), /readyz (its dependencies) and /metrics. Keep that port off any ingress.
 */
export async function startOpsServer(options: {
  service: string;
  host: string;
  port: number;
  logger: Logger;
  metrics?: Metrics;
  readiness: () => Promise<ReadinessReport>;
}): Promise<{ port: number; close(): Promise<void> }> {
  const handler = pipeline(
    [
      requestId(),
      errorReplies(options.logger),
      route([probeEndpoints({ service: options.service, readiness: options.readiness, metrics: options.metrics })]),
    ],
    answerWithEndpoint,
  );
  const server = createHttpServer();
  const served = serve(server, handler, { logger: options.logger });
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => served.drain(1_000),
  };
}
