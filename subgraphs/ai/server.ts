import type { TokenVerifier } from '../../platform/auth/verifier.js';
import { startSubgraphServer, subgraphServerSettings, type RunningServer } from '../../platform/graphql/subgraph-server.js';
import { jsonReply, type Endpoint, type EndpointTable } from '../../platform/http/pipeline.js';
import type { ReadinessReport } from '../../platform/http/probe-endpoints.js';
import { requestInfo } from '../shared/request-context.js';
import type { AiContext } from './context.js';
import { aiHealth } from './health.js';
import { REPLICA_BEAT_MS } from './quota/quota.replicas.js';
import { buildAiSchema } from './schema.js';
import { createAiServices, type AiServiceDeps, type AiServices } from './services.js';

export interface AiDeps extends AiServiceDeps {
  verifier: TokenVerifier;
  /** Operation names metrics label by name (REST-compat's documents); every other one is `other`. */
  knownOperations?: ReadonlySet<string>;
  /** `/readyz` of the subgraph's port, built by its process. */
  readiness?: () => Promise<ReadinessReport>;
}

/** The phase-0 health endpoint sits under the gateway's /v1/ai/* prefix; /health stays for probes. */
const HEALTH_PATHS = ['/v1/ai/health', '/health'];

function healthEndpoints(deps: AiDeps, services: AiServices): EndpointTable {
  const endpoint: Endpoint = {
    route: '/v1/ai/health',
    access: 'public',
    errors: 'problem',
    async handle() {
      const { httpStatus, report } = await aiHealth(deps.db, services);
      return jsonReply(httpStatus, report, { 'cache-control': 'no-store' });
    },
  };
  return {
    resolve(exchange) {
      if (!HEALTH_PATHS.includes(exchange.url.pathname)) return { kind: 'not_found' };
      if (exchange.method !== 'GET' && exchange.method !== 'HEAD') return { kind: 'method_not_allowed', allow: ['GET', 'HEAD'] };
      return { kind: 'found', endpoint, params: {} };
    },
  };
}
/** The public keys of every receipt signing key ever used: public, an auditor fetches them without a token. */
export const RECEIPT_JWKS_PATH = '/v1/ai/receipts/jwks.json';

function jwksEndpoints(services: AiServices): EndpointTable {
  const endpoint: Endpoint = {
    route: RECEIPT_JWKS_PATH,
    access: 'public',
    errors: 'problem',
    async handle() {
      return jsonReply(200, await services.receiptKeys.jwks(), { 'cache-control': 'max-age=300' });
    },
  };
  return {
    resolve(exchange) {
      if (exchange.url.pathname !== RECEIPT_JWKS_PATH) return { kind: 'not_found' };
      if (exchange.method !== 'GET' && exchange.method !== 'HEAD') return { kind: 'method_not_allowed', allow: ['GET', 'HEAD'] };
      return { kind: 'found', endpoint, params: {} };
    },
  };
}
const PURGE_INTERVAL_MS = 10 * 60_000;

export async function startAiSubgraph(
  deps: AiDeps,
  port = deps.config.aiPort,
): Promise<RunningServer & { services: AiServices }> {
  const logger = deps.logger.child({ subgraph: 'ai' });
  const services = createAiServices({ ...deps, logger });
  const server = await startSubgraphServer<AiContext>({
    name: 'ai',
    schema: await buildAiSchema(),
    host: deps.config.host,
    port,
    settings: subgraphServerSettings(deps.config),
    verifier: deps.verifier,
    logger,
    metrics: deps.metrics,
    knownOperations: deps.knownOperations,
    context: async (caller) => ({
      ...requestInfo(caller, logger, deps.config.idempotencyTtlSeconds),
      db: deps.db,
      clock: services.clock,
      services,
    }),
    endpoints: [healthEndpoints(deps, services), jwksEndpoints(services)],
    readiness: deps.readiness,
  });
  // Held review text has a retention limit; every replica may purge (the update is idempotent).
  const purge = setInterval(() => {
    services.purgeHeldText().then(
      (count) => count && logger.info({ count }, 'purged expired review text'),
      (error) => logger.warn({ err: (error as Error).message }, 'purging review text failed'),
    );
  }, PURGE_INTERVAL_MS);
  purge.unref();
  // The quota fallback divides its share by the replicas alive; counting them needs Redis up.
  void services.replicaCensus.beat();
  const census = setInterval(() => void services.replicaCensus.beat(), REPLICA_BEAT_MS);
  census.unref();
  return {
    ...server,
    services,
    close: async () => {
      clearInterval(purge);
      clearInterval(census);
      await server.close();
    },
  };
}
