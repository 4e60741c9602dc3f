import type { Redis } from 'ioredis';
import type { EventBus } from '../events/bus/event-bus.js';
import type { Platform } from '../platform/lifecycle/bootstrap.js';
import type { Metrics } from '../platform/observability/metrics.js';
import type { PartStack } from '../platform/lifecycle/parts.js';
import { databaseCheck, redisCheck } from '../platform/lifecycle/readiness.js';
import { REST_OPERATION_NAMES } from '../rest-compat/documents.js';
import { feedAiMetrics } from '../subgraphs/ai/metrics.js';
import type { ReceiptWriter } from '../subgraphs/ai/provenance/receipts/receipt.repo.js';
import { QUOTA_DEGRADED_DETAIL } from '../subgraphs/ai/quota/quota.service.js';
import { seedBaseline } from '../subgraphs/ai/seed.js';
import { startAiSubgraph } from '../subgraphs/ai/server.js';
import { startCatalogSubgraph } from '../subgraphs/catalog/server.js';
import type { AiProcessConfig, CatalogProcessConfig } from './config.js';
import { busCheck } from './readiness-checks.js';

/*
 * The subgraph parts (processes/parts.ts has the parts every process shares): their own file so
 * the gateway process, which serves the committed supergraph, loads no subgraph code.
 */

/** The catalog subgraph on CATALOG_PORT; the bus is needed only to replay dead letters. */
export async function catalogPart(
  stack: PartStack,
  deps: { config: CatalogProcessConfig; platform: Platform; metrics: Metrics; bus?: EventBus; afterEventsCommitted?: () => void },
) {
  const { config, platform, bus } = deps;
  const db = platform.database.prisma;
  const server = await stack.start(
    'catalog subgraph',
    () =>
      startCatalogSubgraph({
        config,
        db,
        verifier: platform.verifier,
        logger: platform.logger,
        metrics: deps.metrics,
        knownOperations: REST_OPERATION_NAMES,
        bus,
        afterEventsCommitted: deps.afterEventsCommitted,
        readiness: stack.readiness,
      }),
    (running) => running.close(),
    (running) => running.closeConnectionsAfterReply(),
  );
  stack.check('database', databaseCheck(db));
  // Alone, the catalog needs the broker only to replay dead letters; beside the worker, the worker's check says more.
  if (bus?.kind === 'jetstream' && !stack.hasCheck('bus')) stack.check('bus', busCheck(bus, config.events.dlqStream, false));
  return server;
}

/** The AI subgraph on AI_PORT, its baseline seeded; Redis holds quotas (a local cap without it). */
export async function aiPart(
  stack: PartStack,
  deps: {
    config: AiProcessConfig;
    platform: Platform;
    metrics: Metrics;
    redis?: Redis;
    /** Only bench/receipts-http.ts sets it: the same process without receipts, to measure their cost. */
    receipts?: ReceiptWriter;
  },
) {
  const { config, platform, redis } = deps;
  const db = platform.database.prisma;
  await seedBaseline(db, { hostedModel: config.providers.openaiModel, logger: platform.logger });
  const server = await stack.start(
    'ai subgraph',
    () =>
      startAiSubgraph({
        config,
        db,
        verifier: platform.verifier,
        logger: platform.logger,
        redis,
        metrics: deps.metrics,
        knownOperations: REST_OPERATION_NAMES,
        readiness: stack.readiness,
        receipts: deps.receipts,
      }),
    (running) => running.close(),
    (running) => running.closeConnectionsAfterReply(),
  );
  feedAiMetrics(deps.metrics, server.services, db, { clock: server.services.clock });
  stack.check('database', databaseCheck(db));
  if (redis) stack.check('quota', redisCheck(redis, { status: 'degraded', detail: QUOTA_DEGRADED_DETAIL }));
  return server;
}
