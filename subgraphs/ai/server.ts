import type { TokenVerifier } from '../../platform/auth/verifier.js';
import { startSubgraphServer, type RunningServer } from '../../platform/graphql/subgraph-server.js';
import { sendJson } from '../../platform/http/http.js';
import type { ServerOps } from '../../platform/http/observed-server.js';
import { requestInfo } from '../shared/request-context.js';
import type { AiContext } from './context.js';
import { aiHealth } from './health.js';
import { buildAiSchema } from './schema.js';
import { createAiServices, type AiServiceDeps, type AiServices } from './services.js';

export interface AiDeps extends AiServiceDeps {
  verifier: TokenVerifier;
  ops?: ServerOps;
}

const HEALTH_PATHS = new Set(['/v1/ai/health', '/health']);
const PURGE_INTERVAL_MS = 10 * 60_000;

export async function startAiSubgraph(
  deps: AiDeps,
  port = deps.config.aiPort,
): Promise<RunningServer & { services: AiServices }> {
  const logger = deps.logger.child({ subgraph: 'ai' });
  const services = createAiServices({ ...deps, logger });
  const now = deps.now ?? (() => new Date());
  const server = await startSubgraphServer<AiContext>({
    name: 'ai',
    schema: await buildAiSchema(),
    host: deps.config.host,
    port,
    verifier: deps.verifier,
    logger,
    maxBodyBytes: deps.config.maxBodyBytes,
    ops: deps.ops,
    context: async (req, principal, requestId) => ({
      ...requestInfo(req, principal, requestId, logger, deps.config.idempotencyTtlSeconds),
      db: deps.db,
      now,
      services,
    }),
    routes: async (req, res) => {
      // The phase-0 health endpoint sits under the gateway's /v1/ai/* prefix; /health stays for probes.
      if (!HEALTH_PATHS.has(new URL(req.url ?? '/', 'http://localhost').pathname)) return false;
      const { httpStatus, report } = await aiHealth(deps.db, services);
      sendJson(res, httpStatus, report, { 'cache-control': 'no-store' });
      return true;
    },
  });
  // Held review text has a retention limit; every replica may purge (the update is idempotent).
  const purge = setInterval(() => {
    services.purgeHeldText().then(
      (count) => count && logger.info({ count }, 'purged expired review text'),
      (error) => logger.warn({ err: (error as Error).message }, 'purging review text failed'),
    );
  }, PURGE_INTERVAL_MS);
  purge.unref();
  return {
    ...server,
    services,
    close: async () => {
      clearInterval(purge);
      await server.close();
    },
  };
}
