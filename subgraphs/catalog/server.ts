import { systemClock, type Clock } from '../../platform/clock.js';
import type { DeadLetterReplayBus } from '../../events/dead-letters/dead-letters.js';
import type { StreamOptions } from '../../events/streams.js';
import type { TokenVerifier } from '../../platform/auth/verifier.js';
import type { CatalogSubgraphConfig } from './config.js';
import type { Db } from '../../platform/db/database.js';
import { startSubgraphServer, subgraphServerSettings, type RunningServer } from '../../platform/graphql/subgraph-server.js';
import type { ReadinessReport } from '../../platform/http/probe-endpoints.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { Metrics } from '../../platform/observability/metrics.js';
import { requestInfo } from '../shared/request-context.js';
import type { CatalogContext } from './context.js';
import type { EnrollmentCounter } from './enrollment-counter.js';
import { createCatalogLoaders } from './loaders.js';
import { runCatalogMaintenance } from './maintenance.js';
import { feedCatalogMetrics } from './metrics.js';
import { buildCatalogSchema } from './schema.js';
import { createCatalogServices } from './services.js';

export interface CatalogDeps {
  config: CatalogSubgraphConfig;
  db: Db;
  verifier: TokenVerifier;
  logger: Logger;
  metrics?: Metrics;
  /** Operation names metrics label by name (REST-compat's documents); every other one is `other`. */
  knownOperations?: ReadonlySet<string>;
  clock?: Clock;
  /** The event bus: without it, replayDeadLetters answers service.unavailable. */
  bus?: DeadLetterReplayBus;
  /** Stream options the event worker uses (subject prefix), so the DLQ is found where it is. */
  streams?: StreamOptions;
  /** Default: one that answers 0 and says no enrollment service is configured. */
  enrollmentCounter?: EnrollmentCounter;
  /** Called after a mutation's events commit; wire the outbox relay's notify() here. */
  afterEventsCommitted?: () => void;
  /** `/readyz` of the subgraph's port, built by its process. */
  readiness?: () => Promise<ReadinessReport>;
}

export async function startCatalogSubgraph(deps: CatalogDeps, port = deps.config.catalogPort): Promise<RunningServer> {
  const logger = deps.logger.child({ subgraph: 'catalog' });
  const services = createCatalogServices({
    config: deps.config,
    logger,
    bus: deps.bus,
    streams: deps.streams,
    enrollmentCounter: deps.enrollmentCounter,
    afterEventsCommitted: deps.afterEventsCommitted,
  });
  const server = await startSubgraphServer<CatalogContext>({
    name: 'catalog',
    schema: await buildCatalogSchema(),
    host: deps.config.host,
    port,
    settings: subgraphServerSettings(deps.config),
    verifier: deps.verifier,
    logger,
    metrics: deps.metrics,
    knownOperations: deps.knownOperations,
    readiness: deps.readiness,
    context: async (caller) => ({
      ...requestInfo(caller, logger, deps.config.idempotencyTtlSeconds),
      db: deps.db,
      loaders: createCatalogLoaders(deps.db, caller.principal.tenantId),
      clock: deps.clock ?? systemClock,
      services,
    }),
  });
  const maintenance = runCatalogMaintenance({
    db: deps.db,
    logger,
    clock: deps.clock ?? systemClock,
    events: services.events,
    gdprZeroingRetentionClasses: deps.config.gdprZeroingRetentionClasses,
    afterEventsCommitted: deps.afterEventsCommitted,
  });
  const stopMetrics = deps.metrics ? feedCatalogMetrics(deps.metrics, deps.db) : undefined;
  return {
    ...server,
    close: async () => {
      stopMetrics?.();
      await maintenance;
      await server.close();
    },
  };
}
