import type { TokenVerifier } from '../../platform/auth/verifier.js';
import type { Config } from '../../platform/config/config.js';
import type { Db } from '../../platform/db/database.js';
import { startSubgraphServer, type RunningServer } from '../../platform/graphql/subgraph-server.js';
import type { Logger } from '../../platform/logger.js';
import { requestInfo } from '../shared/request-context.js';
import type { CatalogContext } from './context.js';
import { createCatalogLoaders } from './loaders.js';
import { buildCatalogSchema } from './schema.js';

export interface CatalogDeps {
  config: Config;
  db: Db;
  verifier: TokenVerifier;
  logger: Logger;
  now?: () => Date;
}

export async function startCatalogSubgraph(deps: CatalogDeps, port = deps.config.catalogPort): Promise<RunningServer> {
  const logger = deps.logger.child({ subgraph: 'catalog' });
  return startSubgraphServer<CatalogContext>({
    name: 'catalog',
    schema: await buildCatalogSchema(),
    host: deps.config.host,
    port,
    verifier: deps.verifier,
    logger,
    maxBodyBytes: deps.config.maxBodyBytes,
    context: async (req, principal, requestId) => ({
      ...requestInfo(req, principal, requestId, logger),
      db: deps.db,
      loaders: createCatalogLoaders(deps.db, principal.tenantId),
      now: deps.now ?? (() => new Date()),
    }),
  });
}
