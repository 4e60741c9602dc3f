import type { EventBus } from '../../events/bus/event-bus.js';
import type { StreamOptions } from '../../events/streams.js';
import type { TokenVerifier } from '../../platform/auth/verifier.js';
import type { Config } from '../../platform/config/config.js';
import type { Db } from '../../platform/db/database.js';
import { startSubgraphServer, type RunningServer } from '../../platform/graphql/subgraph-server.js';
import type { Logger } from '../../platform/logger.js';
import type { ServerOps } from '../../platform/http/observed-server.js';
import { requestInfo } from '../shared/request-context.js';
import type { CatalogContext } from './context.js';
import type { EnrollmentCounter } from './enrollment-counter.js';
import { createCatalogLoaders } from './loaders.js';
import { buildCatalogSchema } from './schema.js';
import { createCatalogServices } from './services.js';

export interface CatalogDeps {
  config: Config;
  db: Db;
  verifier: TokenVerifier;
  logger: Logger;
  ops?: ServerOps;
  now?: () => Date;
  /** The event bus: without it, replayDeadLetters answers SERVICE_UNAVAILABLE. */
  bus?: EventBus;
  /** Stream options the event worker uses (subject prefix), so the DLQ is found where it is. */
  streams?: StreamOptions;
  /** Default: one that answers 0 and says no enrollment service is configured. */
  enrollmentCounter?: EnrollmentCounter;
  /** Called after a mutation's events commit; wire the outbox relay's notify() here. */
  afterEventsCommitted?: () => void;
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
  return startSubgraphServer<CatalogContext>({
    name: 'catalog',
    schema: await buildCatalogSchema(),
    host: deps.config.host,
    port,
    verifier: deps.verifier,
    logger,
    maxBodyBytes: deps.config.maxBodyBytes,
    ops: deps.ops,
    context: async (req, principal, requestId) => ({
      ...requestInfo(req, principal, requestId, logger, deps.config.idempotencyTtlSeconds),
      db: deps.db,
      loaders: createCatalogLoaders(deps.db, principal.tenantId),
      now: deps.now ?? (() => new Date()),
      services,
    }),
  });
}
