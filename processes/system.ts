import type { EventBus } from '../events/bus/event-bus.js';
import { loadSchemaRegistry } from '../events/schemas/registry.js';
import type { Platform } from '../platform/lifecycle/bootstrap.js';
import { createLogger } from '../platform/observability/logger.js';
import { createMetrics } from '../platform/observability/metrics.js';
import { buildParts, PartStack } from '../platform/lifecycle/parts.js';
import type { ReceiptWriter } from '../subgraphs/ai/provenance/receipts/receipt.repo.js';
import { publishDemoCatalog } from '../subgraphs/catalog/demo/demo-catalog.js';
import type { SystemConfig } from './config.js';
import { busPart, catalogEventFeed, gatewayPart, opsServerPart, platformPart, redisPart } from './parts.js';
import { aiPart, catalogPart } from './subgraph-parts.js';
import { workerPart } from './worker-part.js';

export interface System {
  platform: Platform;
  gatewayUrl: string;
  catalogUrl: string;
  aiUrl: string;
  /** The ops port's base URL when METRICS_PORT is set: /metrics answers there, not on the gateway's door. */
  opsUrl?: string;
  /** The event bus of this process: JetStream with NATS_URL, else the in-process bus (tests publish on it). */
  bus: EventBus;
  /** The parts, for the signal handler (drain, then stop in reverse). */
  stack: PartStack;
  stop(): Promise<void>;
}

/**
 * Everything in one process (`npm start`): migrated database and seed, both subgraphs on their own
 * ports, the gateway with the REST-compat layer on PORT, and the event worker. Production runs the
 * same parts as separate processes through their own entry points (processes/*.main.ts). Started in
 * this order and stopped in reverse: the gateway stops taking requests first, then the subgraphs,
 * then the worker finishes its messages and flushes the outbox, then the connections close.
 * `bench` is for bench/system-without-receipts.main.ts alone (the cost of receipts, measured).
 */
export async function startSystem(
  config: SystemConfig,
  onStack?: PartStack,
  bench?: { receipts?: ReceiptWriter },
): Promise<System> {
  const stack = onStack ?? new PartStack();
  if (!onStack) stack.useLogger(createLogger({ level: config.logLevel, name: 'main' }));
  const system = await buildParts(stack, async () => {
    const platform = await platformPart(stack, config, 'main');
    const { logger } = platform;
    const { redis, cacheRedis } = await redisPart(stack, config, logger);
    const metrics = createMetrics();
    const bus = await busPart(stack, config, logger);
    const worker = await workerPart(stack, { config, platform, bus, metrics, redis, busRequired: false });
    if (config.demoData && !worker.current()) {
      logger.warn("demo catalog not published: the producers' streams do not exist yet (see the event worker's line)");
    } else if (config.demoData) {
      // Through the bus, as the producers' events arrive: what a newcomer sees is what the event path makes.
      await publishDemoCatalog({
        db: platform.database.prisma,
        bus,
        registry: loadSchemaRegistry(),
        producer: worker.producer,
        logger,
        source: { service: 'demo-catalog', instance: config.service.instance, commit: config.service.commit },
        afterCommit: () => worker.notifyRelay(),
      });
    }
    const catalog = await catalogPart(stack, {
      config,
      platform,
      metrics,
      bus,
      afterEventsCommitted: () => worker.notifyRelay(),
    });
    const ai = await aiPart(stack, { config, platform, metrics, redis, receipts: bench?.receipts });
    const gateway = await gatewayPart(stack, {
      config,
      platform,
      metrics,
      redis,
      cacheRedis,
      // Over loopback HTTP through the subgraphs' doors, as a gateway process calls them.
      subgraphUrls: { catalog: catalog.url, ai: ai.url },
      // The catalog's events on this process's bus, through the port a gateway process follows NATS by.
      catalogEvents: catalogEventFeed(bus),
    });
    const ops = await opsServerPart(stack, { config, logger, metrics, service: 'main' });
    // With METRICS_PORT, /metrics answers there and no longer on the gateway's door.
    const opsUrl = ops ? `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${ops.port}` : undefined;
    return { platform, bus, gatewayUrl: gateway.url, catalogUrl: catalog.url, aiUrl: ai.url, opsUrl };
  });
  return { ...system, stack, stop: () => stack.stop() };
}
