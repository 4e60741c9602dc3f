// The event worker as `npm run start:worker` runs it (outbox relay, the catalog's durable consumers,
// DLQ monitor), with one difference: every subject carries BENCH_SUBJECT_PREFIX and every stream a
// bench name (CATALOG_STREAM, ...), so the bench never touches the streams of other users of a
// shared NATS server. Spawned by bench/events.ts and bench/scale.ts; ready when /metrics answers.
import 'reflect-metadata';
import { connectJetStreamBus } from '../events/bus/jetstream-bus.js';
import { startEventWorker } from '../events/worker.js';
import { feedWorkerMetrics } from '../events/worker-metrics.js';
import { applyMigrations } from '../prisma/migrate.js';
import { openPlatform } from '../platform/bootstrap.js';
import { configOrExit, exitOnSignals } from '../platform/entrypoint.js';
import { createMetrics } from '../platform/metrics.js';
import { startOpsServer } from '../platform/http/ops-server.js';
import { catalogConsumers } from '../subgraphs/catalog/consumers.js';
import { loadWorkerProcessConfig } from '../processes/config.js';

const config = configOrExit(loadWorkerProcessConfig);
const subjectPrefix = process.env.BENCH_SUBJECT_PREFIX ?? '';
// ensureStreams updates a stream that already exists: a stream name left at its default (a new
// stream added to the configuration, say) would rewrite the subjects of a stream someone else uses.
const shared = Object.entries(config.events).filter(
  ([key, value]) => key.endsWith('Stream') && !String(value).startsWith('BENCH_'),
);
if (!subjectPrefix || shared.length) {
  console.error(
    `bench worker: set BENCH_SUBJECT_PREFIX and a BENCH_ name for every stream (${shared.map(([k]) => k).join(', ')})`,
  );
  process.exit(2);
}
const platform = await openPlatform(config, 'bench-worker', { migrate: applyMigrations });
const bus = await connectJetStreamBus(config.natsUrl!, { logger: platform.logger });
const worker = await startEventWorker({
  bus,
  db: platform.database.prisma,
  logger: platform.logger,
  config,
  streams: { subjectPrefix },
  consumers: catalogConsumers({
    events: config.events,
    gdprZeroingRetentionClasses: config.gdprZeroingRetentionClasses,
    subjectPrefix,
  }),
});
const metrics = createMetrics();
feedWorkerMetrics(metrics, worker, { db: platform.database.prisma, deadLetterStream: config.events.dlqStream });
const metricsServer = await startOpsServer({
  service: 'worker',
  host: config.host,
  port: config.ops.metricsPort,
  logger: platform.logger,
  metrics,
  readiness: async () => ({ ready: true, checks: {} }),
});
exitOnSignals(
  platform.logger,
  async () => {
    await worker.stop();
    await bus.close();
    await metricsServer.close();
    await platform.database.close();
  },
  config.ops.shutdownTimeoutMs,
);
