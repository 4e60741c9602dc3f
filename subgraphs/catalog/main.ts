// `npm run start:catalog`: the catalog subgraph as its own process (stateless; scale out freely).
import 'reflect-metadata';
import { openPlatform } from '../../platform/bootstrap.js';
import { configOrExit, exitOnSignals } from '../../platform/entrypoint.js';
import { startCatalogSubgraph } from './server.js';

const config = configOrExit();
const platform = await openPlatform(config, 'catalog');
const server = await startCatalogSubgraph({
  config,
  db: platform.database.prisma,
  verifier: platform.verifier,
  logger: platform.logger,
});
exitOnSignals(platform.logger, async () => {
  await server.close();
  await platform.database.close();
});
