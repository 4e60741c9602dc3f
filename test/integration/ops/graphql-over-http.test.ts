import { auditServer, type AuditResult } from 'graphql-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewaySettings, startGateway, type RunningGateway } from '../../../gateway/gateway.js';
import { generateEd25519, mintToken } from '../../../platform/auth/dev-keys.js';
import { createTokenVerifier } from '../../../platform/auth/verifier.js';
import { loadSystemConfig } from '../../../processes/config.js';
import type { RunningServer } from '../../../platform/graphql/subgraph-server.js';
import { createDatabaseIdempotencyStore } from '../../../platform/idempotency/database-store.js';
import { newId } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { startAiSubgraph } from '../../../subgraphs/ai/server.js';
import { startCatalogSubgraph } from '../../../subgraphs/catalog/server.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';

/**
 * The GraphQL over HTTP conformance audit of `graphql-http` (the reference implementation of the
 * spec's working draft) against the gateway's /graphql, as an authenticated client calls it.
 * Every MUST passes; the SHOULDs and MAYs this door does not meet are listed, with the reason, in
 * docs/operations.md ("GraphQL over HTTP") and pinned here so a change in either is noticed.
 */
const TENANT = newId('tenant');

/** The recommendations this door does not follow, by audit id (reasons in docs/operations.md). */
const KNOWN_NOT_MET: Record<string, string> = {
  '572B': 'parse failures are 400 (a client mistake is a 4xx the REST door, proxies and alerts can see)',
  FDE2: 'validation failures are 400, for the same reason',
  '7B9B': 'variable coercion failures are 400, for the same reason',
};

let db: TestDatabase;
let catalog: RunningServer;
let ai: RunningServer;
let gateway: RunningGateway;
let results: AuditResult[];

beforeAll(async () => {
  db = await createTestDatabase();
  const keys = await generateEd25519();
  const verifier = await createTokenVerifier({
    publicKey: JSON.stringify(keys.publicJwk),
    maxTokenLifetimeSeconds: 900,
    clockToleranceSeconds: 5,
  });
  const token = await mintToken(keys.privateJwk, { sub: 'svc:audit', tid: TENANT, scope: 'catalog.read' });
  const config = loadSystemConfig({ HOST: '127.0.0.1', DATA_DIR: '.data/audit-test' });
  catalog = await startCatalogSubgraph({ config, db: db.prisma, verifier, logger: silentLogger }, 0);
  ai = await startAiSubgraph({ config, db: db.prisma, verifier, logger: silentLogger }, 0);
  gateway = await startGateway({
    host: '127.0.0.1',
    port: 0,
    subgraphUrls: { catalog: catalog.url, ai: ai.url },
    settings: gatewaySettings(config),
    verifier,
    logger: silentLogger,
    idempotency: createDatabaseIdempotencyStore(db.prisma, { ttlSeconds: 300, leaseSeconds: 60 }),
    readiness: async () => ({ ready: true, checks: {} }),
  });
  // The audit's requests, as an authenticated client of the tenant sends them.
  const fetchFn = (input: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${token}`);
    headers.set('x-tenant-id', TENANT);
    return fetch(input, { ...init, headers });
  };
  results = await auditServer({ url: `${gateway.url}/graphql`, fetchFn });
});

afterAll(async () => {
  await gateway?.close();
  await ai?.close();
  await catalog?.close();
  await db?.close();
});

describe('GraphQL over HTTP (graphql-http audit) on the gateway', () => {
  it('passes every MUST', () => {
    const failed = results.filter((result) => result.name.startsWith('MUST') && result.status !== 'ok');
    expect(failed.map((result) => `${result.id} ${result.name}: ${'reason' in result ? result.reason : ''}`)).toEqual([]);
    expect(results.filter((result) => result.name.startsWith('MUST')).length).toBeGreaterThan(10);
  });

  it('misses only the recommendations documented as not met', () => {
    const missed = results.filter((result) => !result.name.startsWith('MUST') && result.status !== 'ok');
    expect(Object.fromEntries(missed.map((result) => [result.id, result.name]))).toEqual(
      Object.fromEntries(Object.entries(KNOWN_NOT_MET).map(([id]) => [id, results.find((r) => r.id === id)?.name])),
    );
  });
});
