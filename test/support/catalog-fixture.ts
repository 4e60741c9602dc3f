import { Writable } from 'node:stream';
import { gatewaySettings, startGateway, type GatewaySettings, type RunningGateway } from '../../gateway/gateway.js';
import type { SubgraphUrls } from '../../gateway/subgraph-calls/replicas.js';
import type { ResponseCache } from '../../gateway/response-cache/response-cache.js';
import { generateEd25519, mintToken } from '../../platform/auth/dev-keys.js';
import { createTokenVerifier, type TokenVerifier } from '../../platform/auth/verifier.js';
import type { RunningServer } from '../../platform/graphql/subgraph-server.js';
import { createDatabaseIdempotencyStore } from '../../platform/idempotency/database-store.js';
import { createLogger } from '../../platform/observability/logger.js';
import type { Metrics } from '../../platform/observability/metrics.js';
import { loadSystemConfig } from '../../processes/config.js';
import { restEndpoints } from '../../rest-compat/rest-endpoints.js';
import { startCatalogSubgraph } from '../../subgraphs/catalog/server.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export interface CatalogFixture {
  db: TestDatabase;
  verifier: TokenVerifier;
  /** A token of `tenant` with the scopes asked for, accepted by the catalog and any gateway on `verifier`. */
  token: string;
  /** A token with `scope`, of the fixture's tenant unless `tenant` names another. */
  mintToken(scope: string, subject?: string, tenant?: string): Promise<string>;
  /** A real catalog subgraph on its own port, on a test database. */
  catalog: RunningServer;
  close(): Promise<void>;
}

/**
 * A real catalog subgraph to put behind a gateway under test, warmed up by one query (its cold
 * start — database, plans — is then not inside a fetch the test times).
 */
export async function startCatalogFixture(options: { tenant: string; scope: string; dataDir: string }): Promise<CatalogFixture> {
  const db = await createTestDatabase();
  const keys = await generateEd25519();
  const verifier = await createTokenVerifier({
    publicKey: JSON.stringify(keys.publicJwk),
    maxTokenLifetimeSeconds: 900,
    clockToleranceSeconds: 5,
  });
  const mint = (scope: string, subject = 'svc:fixture', tenant = options.tenant) =>
    mintToken(keys.privateJwk, { sub: subject, tid: tenant, scope });
  const token = await mint(options.scope);
  const config = loadSystemConfig({ HOST: '127.0.0.1', DATA_DIR: options.dataDir });
  const catalog = await startCatalogSubgraph({ config, db: db.prisma, verifier, logger: createLogger({ level: 'silent' }) }, 0);
  await fetch(catalog.url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'x-tenant-id': options.tenant, 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ courses(first: 1) { edges { node { courseId } } } }' }),
  });
  return {
    db,
    verifier,
    token,
    mintToken: mint,
    catalog,
    close: async () => {
      await catalog.close();
      await db.close();
    },
  };
}

export interface FixtureGateway {
  gateway: RunningGateway;
  /** Every line the gateway logged (debug and up), as JSON text. */
  logLines: string[];
}

/**
 * A gateway (with the REST routes) on the fixture's verifier and database, calling the subgraph
 * URLs given — the fixture's catalog, fakes, lists of replicas — with the default settings
 * except those given.
 */
export async function startFixtureGateway(
  fixture: Pick<CatalogFixture, 'verifier'> & { db: Pick<TestDatabase, 'prisma'> },
  options: {
    subgraphUrls: { catalog: SubgraphUrls; ai: SubgraphUrls };
    settings?: Partial<GatewaySettings>;
    metrics?: Metrics;
    responseCache?: ResponseCache;
  },
): Promise<FixtureGateway> {
  const logLines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const gateway = await startGateway({
    host: '127.0.0.1',
    port: 0,
    subgraphUrls: options.subgraphUrls,
    verifier: fixture.verifier,
    logger: createLogger({ level: 'debug', destination }),
    settings: { ...gatewaySettings(loadSystemConfig({})), drainMs: 2_000, ...options.settings },
    metrics: options.metrics,
    responseCache: options.responseCache,
    idempotency: createDatabaseIdempotencyStore(fixture.db.prisma, { ttlSeconds: 300, leaseSeconds: 60 }),
    readiness: async () => ({ ready: true, checks: {} }),
    endpoints: (execute, subgraphHttp) => restEndpoints({ execute, aiBaseUrl: 'http://ai.invalid/', fetch: subgraphHttp('ai') }),
  });
  return { gateway, logLines };
}
