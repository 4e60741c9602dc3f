// `npm run start:worker`: the event worker as its own process — the outbox relay (which publishes
// every service's outbox rows, the AI audit events included), the catalog's durable consumers and
// the DLQ monitor, with its probes and /metrics on METRICS_PORT. Replicas are safe: consumers
// share durables, and one relay at a time holds the lease.
import 'reflect-metadata';
import { createMetrics } from '../platform/observability/metrics.js';
import { loadWorkerProcessConfig } from './config.js';
import { busPart, opsServerPart, platformPart, stateRedisPart, WORKER_OPS_PORT } from './parts.js';
import { workerPart } from './worker-part.js';
import { runProcess } from './run-process.js';

await runProcess('worker', loadWorkerProcessConfig, async (stack, config) => {
  const platform = await platformPart(stack, config, 'worker');
  if (!config.natsUrl) platform.logger.warn('NATS_URL is not set: this worker uses an in-process bus no other process can reach');
  const bus = await busPart(stack, config, platform.logger);
  // GDPR erasures reach the gateway's Idempotency-Key records there.
  const redis = await stateRedisPart(stack, config, platform.logger);
  const metrics = createMetrics();
  // Probes first: a worker waiting for the producers' streams answers /readyz 503 meanwhile.
  await opsServerPart(stack, { config, logger: platform.logger, metrics, service: 'worker', defaultPort: WORKER_OPS_PORT });
  await workerPart(stack, { config, platform, bus, metrics, redis });
});
