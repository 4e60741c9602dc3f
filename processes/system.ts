import type { Redis } from 'ioredis';
import type { SystemConfig } from './config.js';
import { applyMigrations } from '../prisma/migrate.js';
import { openPlatform, type Platform } from '../platform/bootstrap.js';
import type { RunningServer } from '../platform/graphql/subgraph-server.js';
import { connectRedis, connectStateRedis } from '../platform/redis.js';
import { startAiSubgraph } from '../subgraphs/ai/server.js';
import { seedBaseline } from '../subgraphs/ai/seed.js';
import { startCatalogSubgraph } from '../subgraphs/catalog/server.js';
import { subgraphChecks } from '../gateway/readiness.js';
import { idempotencyCheck } from '../platform/idempotency/readiness.js';
import { databaseCheck, readinessOf, redisCheck } from '../platform/readiness.js';
import { QUOTA_DEGRADED_DETAIL } from '../subgraphs/ai/quota/quota.service.js';
import { eventWorkerCheck } from './readiness-checks.js';
import { startFrontDoor } from './front-door.js';
import { REST_OPERATION_NAMES } from '../rest-compat/route-table.js';
import { createMetrics } from '../platform/metrics.js';
import { createEventBus } from '../events/bus/create-bus.js';
import { startEventWorker, type EventWorker } from '../events/worker.js';
import { catalogConsumers } from '../subgraphs/catalog/consumers.js';
import { feedWorkerMetrics } from '../events/worker-metrics.js';
import { feedAiMetrics } from '../subgraphs/ai/metrics.js';
import { loadSchemaRegistry } from '../events/schemas/registry.js';
import { publishDemoCatalog } from '../subgraphs/catalog/demo/demo-catalog.js';

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
export async function startSystem(config: SystemConfig): Promise<System> {
  const platform = await openPlatform(config, 'main', { migrate: applyMigrations });
  const { logger, database, verifier } = platform;
  const db = database.prisma;
  const redis: Redis | undefined = config.redisUrl
    ? await connectStateRedis(config.redisUrl, { allowEviction: config.redisAllowEviction, logger })
    : undefined;
  const cacheRedis = config.redisCacheUrl ? await connectRedis(config.redisCacheUrl, logger, 'REDIS_CACHE_URL') : undefined;
  await seedBaseline(db, { hostedModel: config.providers.openaiModel, logger });
  const metrics = createMetrics();

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
    feedWorkerMetrics(metrics, worker, { db, deadLetterStream: config.events.dlqStream });
    if (config.demoData) {
      // Through the bus, as the producers' events arrive: what a newcomer sees is what the event path makes.
      await publishDemoCatalog({
        db,
        bus,
        registry: loadSchemaRegistry(),
        producer: worker.producer,
        logger,
        source: { service: 'demo-catalog', instance: config.service.instance, commit: config.service.commit },
        afterCommit: () => relay.notify(),
      });
    }
    const catalog = await startCatalogSubgraph({
      config,
      db,
      verifier,
      logger,
      metrics,
      knownOperations: REST_OPERATION_NAMES,
      bus,
      afterEventsCommitted: () => relay.notify(),
    });
    servers.push(catalog);
    const ai = await startAiSubgraph({ config, db, verifier, logger, redis, metrics, knownOperations: REST_OPERATION_NAMES });
    servers.push(ai);
    feedAiMetrics(metrics, ai.services, db, { clock: ai.services.clock });
    const readiness = readinessOf(
      {
        database: databaseCheck(db),
        events: eventWorkerCheck(() => worker),
        idempotency: idempotencyCheck(db, redis),
        // Redis down degrades quotas (local request cap, token budgets fail closed) but serves the rest.
        ...(redis ? { quota: redisCheck(redis, { status: 'degraded', detail: QUOTA_DEGRADED_DETAIL }) } : {}),
      },
      { groups: [() => subgraphChecks({ catalog: catalog.url, ai: ai.url })] },
    );
    const gateway = await startFrontDoor({
      config,
      subgraphUrls: { catalog: catalog.url, ai: ai.url },
      verifier,
      logger,
      db,
      redis,
      cacheRedis,
      metrics,
      readiness,
      // The gateway runs the subgraphs of this process in process; their ports still serve
      // whoever calls them directly (the REST health relay, tests, other tools).
      localSubgraphs: { catalog: catalog.local, ai: ai.local },
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
        cacheRedis?.disconnect();
        await database.close();
      },
    };
  } catch (error) {
    for (const server of servers) await server.close().catch(() => undefined);
    await worker?.stop().catch(() => undefined);
    await bus.close().catch(() => undefined);
    redis?.disconnect();
    cacheRedis?.disconnect();
    await database.close();
    throw error;
  }
}
