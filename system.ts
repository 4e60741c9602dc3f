import type { Redis } from 'ioredis';
import type { Config } from './platform/config/config.js';
import { openPlatform, type Platform } from './platform/bootstrap.js';
import type { RunningServer } from './platform/graphql/subgraph-server.js';
import { createRedis } from './platform/redis.js';
import { startAiSubgraph } from './subgraphs/ai/server.js';
import { seedBaseline } from './subgraphs/ai/seed.js';
import { startCatalogSubgraph } from './subgraphs/catalog/server.js';
import { startGateway, type ReadinessReport } from './gateway/server.js';
import { createRestCompat } from './rest-compat/wire.js';
import { gatewayOpsFromConfig, serverOpsFromConfig, subgraphChecks } from './gateway/ops.js';
import { createMetrics } from './platform/metrics.js';
import { createEventBus } from './events/bus/create-bus.js';
import { startEventWorker, type EventWorker } from './events/worker.js';
import { catalogConsumers } from './subgraphs/catalog/consumers.js';
import { feedWorkerMetrics } from './events/worker-metrics.js';
import { feedAiMetrics } from './subgraphs/ai/ops-metrics.js';

export interface System {
  platform: Platform;
  gatewayUrl: string;
  catalogUrl: string;
  aiUrl: string;
  stop(): Promise<void>;
}

/**
 * Everything in one process (`npm start`): migrated database and seed, both subgraphs on their own
 * ports, the gateway with the REST-compat layer on PORT, and the event worker. Production runs the
 * same parts as separate processes through their own entry points.
 */
export async function startSystem(config: Config): Promise<System> {
  const platform = await openPlatform(config, 'main');
  const { logger, database, verifier } = platform;
  const db = database.prisma;
  const redis: Redis | undefined = config.redisUrl ? createRedis(config.redisUrl, logger) : undefined;
  await seedBaseline(db, { hostedModel: config.providers.openaiModel, logger });
  const metrics = createMetrics();
  const ops = serverOpsFromConfig(config, metrics);

  const servers: RunningServer[] = [];
  const bus = await createEventBus(config, logger);
  let worker: EventWorker | undefined;
  try {
    worker = await startEventWorker({
      bus,
      db,
      logger,
      config,
      consumers: catalogConsumers({ events: config.events, gdprZeroingRetentionClasses: config.gdprZeroingRetentionClasses }),
    });
    const relay = worker.relay;
    feedWorkerMetrics(metrics, worker, { db, dlqStream: config.events.dlqStream });
    const catalog = await startCatalogSubgraph({
      config,
      db,
      verifier,
      logger,
      ops,
      bus,
      afterEventsCommitted: () => relay.notify(),
    });
    servers.push(catalog);
    const ai = await startAiSubgraph({ config, db, verifier, logger, ops, redis, metrics });
    servers.push(ai);
    feedAiMetrics(metrics, ai.services, db);
    const readiness = async (): Promise<ReadinessReport> => {
      const checks: ReadinessReport['checks'] = {};
      checks.database = await probe(() => db.$queryRawUnsafe('SELECT 1'), true);
      checks.events = eventsCheck(worker!);
      // Redis down degrades quotas (local request cap, token budgets fail closed) but serves the rest.
      const quota = await ai.services.quota.health();
      checks.quota = {
        status: quota.status,
        required: false,
        detail: `${quota.store} store${quota.detail ? `: ${quota.detail}` : ''}`,
      };
      Object.assign(checks, await subgraphChecks({ catalog: catalog.url, ai: ai.url }));
      return { ready: Object.values(checks).every((c) => c.status !== 'down' || !c.required), checks };
    };
    const gateway = await startGateway({
      host: config.host,
      port: config.port,
      subgraphUrls: { catalog: catalog.url, ai: ai.url },
      verifier,
      logger,
      maxBodyBytes: config.maxBodyBytes,
      readiness,
      ops: gatewayOpsFromConfig(config, { metrics, redis }),
      ...createRestCompat({ config, redis, db, logger, aiUrl: ai.url }),
    });
    servers.unshift(gateway);
    return {
      platform,
      gatewayUrl: gateway.url,
      catalogUrl: catalog.url,
      aiUrl: ai.url,
      stop: async () => {
        // Stop taking requests first (gateway, then subgraphs), then release the dependencies.
        for (const server of servers) await server.close().catch((error) => logger.error({ err: error }, 'close failed'));
        // In-flight messages finish (ack or are left for redelivery), then the outbox is flushed.
        await worker?.stop().catch((error) => logger.error({ err: error }, 'worker stop failed'));
        await bus.close().catch(() => undefined);
        redis?.disconnect();
        await database.close();
      },
    };
  } catch (error) {
    for (const server of servers) await server.close().catch(() => undefined);
    await worker?.stop().catch(() => undefined);
    await bus.close().catch(() => undefined);
    redis?.disconnect();
    await database.close();
    throw error;
  }
}

/** The bus is required; a DLQ alert or a failing relay shows as degraded without failing readiness. */
function eventsCheck(worker: EventWorker): ReadinessReport['checks'][string] {
  const health = worker.health();
  const detail = [
    health.relay.consecutiveFailures > 0 ? `outbox relay failing (${health.relay.consecutiveFailures} attempts)` : undefined,
    health.dlq.alerting ? 'DLQ depth above 0 for longer than the alert window' : undefined,
  ].filter(Boolean);
  return { status: detail.length ? 'degraded' : 'up', required: true, ...(detail.length ? { detail: detail.join('; ') } : {}) };
}

async function probe(check: () => Promise<unknown>, required: boolean, degradedDetail?: string) {
  try {
    await check();
    return { status: 'up' as const, required };
  } catch (error) {
    return { status: 'down' as const, required, detail: degradedDetail ?? (error as Error).message };
  }
}
