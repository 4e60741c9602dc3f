import { generateEd25519, mintToken } from '../../../platform/auth/dev-keys.js';
import { createTokenVerifier } from '../../../platform/auth/verifier.js';
import type { Db } from '../../../platform/db/database.js';
import { newId, newUlid } from '../../../platform/ids.js';
import { silentLogger } from '../../../platform/observability/logger.js';
import { loadSystemConfig } from '../../../processes/config.js';
import { startCatalogSubgraph } from '../../../subgraphs/catalog/server.js';

export interface GraphQLAnswer {
  data?: Record<string, unknown> | null;
  errors?: Array<{ message: string; extensions: { code: string; status?: number } }>;
}

export interface CallOptions {
  tenantId: string;
  /** The token's subject (default: one admin user per client). */
  subject?: string;
  ifMatch?: string;
}

/**
 * The catalog subgraph over HTTP on a test's database, and a client that calls it as the gateway
 * would: a fresh token of the tenant with both catalog scopes, a traceparent, an Idempotency-Key
 * on mutations.
 */
export async function startCatalogClient(db: Db, env: Record<string, string> = {}) {
  const keys = await generateEd25519();
  const verifier = await createTokenVerifier({
    publicKey: JSON.stringify(keys.publicJwk),
    maxTokenLifetimeSeconds: 900,
    clockToleranceSeconds: 5,
  });
  const admin = newId('user');
  const server = await startCatalogSubgraph(
    { config: { ...loadSystemConfig(env), host: '127.0.0.1' }, db, verifier, logger: silentLogger },
    0,
  );
  /** The HTTP status and the parsed body, whatever they are. */
  async function call(
    query: string,
    variables: Record<string, unknown>,
    options: CallOptions,
  ): Promise<{ status: number; body: GraphQLAnswer }> {
    const token = await mintToken(keys.privateJwk, {
      sub: options.subject ?? admin,
      tid: options.tenantId,
      scope: 'catalog.read catalog.admin',
    });
    const response = await fetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        'x-tenant-id': options.tenantId,
        traceparent: `00-${'f'.repeat(32)}-${'e'.repeat(16)}-01`,
        ...(options.ifMatch !== undefined ? { 'if-match': options.ifMatch } : {}),
        ...(/^\s*mutation\b/.test(query) ? { 'idempotency-key': newUlid() } : {}),
      },
      body: JSON.stringify({ query, variables }),
    });
    return { status: response.status, body: (await response.json()) as GraphQLAnswer };
  }
  async function gql(query: string, variables: Record<string, unknown>, options: CallOptions): Promise<GraphQLAnswer> {
    return (await call(query, variables, options)).body;
  }
  /** The answer's data; fails with the errors when there are any. */
  async function data(query: string, variables: Record<string, unknown>, options: CallOptions): Promise<Record<string, unknown>> {
    const answer = await gql(query, variables, options);
    if (answer.errors?.length || !answer.data) throw new Error(`GraphQL errors: ${JSON.stringify(answer.errors)}`);
    return answer.data;
  }
  return { call, gql, data, close: () => server.close() };
}

export type CatalogClient = Awaited<ReturnType<typeof startCatalogClient>>;
