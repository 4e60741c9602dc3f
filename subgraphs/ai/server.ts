import type { TokenVerifier } from '../../platform/auth/verifier.js';
import type { Config } from '../../platform/config/config.js';
import type { Db } from '../../platform/db/database.js';
import { startSubgraphServer, type RunningServer } from '../../platform/graphql/subgraph-server.js';
import { sendJson } from '../../platform/http/http.js';
import type { Logger } from '../../platform/logger.js';
import { requestInfo } from '../shared/request-context.js';
import type { AiContext } from './context.js';
import { buildAiSchema } from './schema.js';

export interface AiDeps {
  config: Config;
  db: Db;
  verifier: TokenVerifier;
  logger: Logger;
  now?: () => Date;
}

export async function startAiSubgraph(deps: AiDeps, port = deps.config.aiPort): Promise<RunningServer> {
  const logger = deps.logger.child({ subgraph: 'ai' });
  return startSubgraphServer<AiContext>({
    name: 'ai',
    schema: await buildAiSchema(),
    host: deps.config.host,
    port,
    verifier: deps.verifier,
    logger,
    maxBodyBytes: deps.config.maxBodyBytes,
    context: async (req, principal, requestId) => ({
      ...requestInfo(req, principal, requestId, logger),
      db: deps.db,
      now: deps.now ?? (() => new Date()),
    }),
    routes: async (req, res) => {
      if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/health') return false;
      const started = Date.now();
      let database = 'up';
      try {
        await deps.db.$queryRawUnsafe('SELECT 1');
      } catch {
        database = 'down';
      }
      sendJson(res, database === 'up' ? 200 : 503, {
        status: database === 'up' ? 'ok' : 'degraded',
        service: 'ai',
        dependencies: { database },
        checkedInMs: Date.now() - started,
      });
      return true;
    },
  });
}
