// The event worker as `npm run start:worker` runs it (outbox relay, the catalog's durable consumers,
// DLQ monitor), with one difference: every subject carries BENCH_SUBJECT_PREFIX and every stream a
// bench name (CATALOG_STREAM, ...), so the bench never touches the streams of other users of a
// shared NATS server. Spawned by bench/events.ts and bench/scale.ts; ready when /metrics answers.
import 'reflect-metadata';
import { connectJetStreamBus } from '../events/bus/jetstream-bus.js';
import { startEventWorker } from '../events/worker.js';
import { feedWorkerMetrics } from '../events/worker-metrics.js';
import { configOrExit } from '../platform/lifecycle/entrypoint.js';
import { createMetrics } from '../platform/observability/metrics.js';
import { catalogConsumers } from '../subgraphs/catalog/consumers.js';
import { loadWorkerProcessConfig } from '../processes/config.js';
import { opsServerPart, platformPart, WORKER_OPS_PORT } from '../processes/parts.js';
import { runProcess } from '../processes/run-process.js';

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
await runProcess(
  'bench-worker',
  () => config,
  async (stack) => {
    const platform = await platformPart(stack, config, 'bench-worker');
    const bus = await stack.start(
      'bus',
      () => connectJetStreamBus(config.natsUrl!, { logger: platform.logger }),
      (b) => b.close(),
    );
    const worker = await stack.start(
      'event worker',
      () =>
        startEventWorker({
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
        }),
      (running) => running.stop(),
    );
    const metrics = createMetrics();
    feedWorkerMetrics(metrics, worker, { db: platform.database.prisma, deadLetterStream: config.events.dlqStream });
    await opsServerPart(stack, { config, logger: platform.logger, metrics, service: 'worker', defaultPort: WORKER_OPS_PORT });
  },
);
