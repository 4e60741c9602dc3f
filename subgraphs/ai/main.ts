// `npm run start:ai`: the AI subgraph as its own process (stateless; quotas live in Redis, rules and
// provenance in the database, so replicas scale out freely). The /v1/ai/health endpoint is served here.
import 'reflect-metadata';
import { openPlatform } from '../../platform/bootstrap.js';
import { configOrExit, exitOnSignals } from '../../platform/entrypoint.js';
import { createRedis } from '../../platform/redis.js';
import { seedBaseline } from './seed.js';
import { startAiSubgraph } from './server.js';

const config = configOrExit();
const platform = await openPlatform(config, 'ai');
const db = platform.database.prisma;
await seedBaseline(db, { hostedModel: config.providers.openaiModel, logger: platform.logger });
const redis = config.redisUrl ? createRedis(config.redisUrl, platform.logger) : undefined;
const server = await startAiSubgraph({ config, db, verifier: platform.verifier, logger: platform.logger, redis });
exitOnSignals(platform.logger, async () => {
  await server.close();
  redis?.disconnect();
  await platform.database.close();
});
