import { processDataDir } from '../../support/child-env.js';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { generateEd25519, mintToken, type DevKeyPair } from '../../../platform/auth/dev-keys.js';
import { createTokenVerifier } from '../../../platform/auth/verifier.js';
import { loadSystemConfig, type SystemConfig } from '../../../processes/config.js';
import { newUlid } from '../../../platform/ids.js';
import { createLogger } from '../../../platform/observability/logger.js';
import { seedBaseline } from '../../../subgraphs/ai/seed.js';
import { startAiSubgraph, type AiDeps } from '../../../subgraphs/ai/server.js';
import type { AiServices } from '../../../subgraphs/ai/services.js';
import { createTestDatabase, type DatabaseKind, type TestDatabase } from '../../support/database.js';

export interface Listening {
  url: string;
  close(): Promise<void>;
}

export async function listen(handler: http.RequestListener): Promise<Listening> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A free local port nobody listens on (bound once, then released). */
export async function closedPort(): Promise<number> {
  const probe = await listen(() => undefined);
  const port = Number(new URL(probe.url).port);
  await probe.close();
  return port;
}

async function body(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export type FakeReply = { status: number; body?: unknown; raw?: string; headers?: Record<string, string> } | 'hang';

export interface FakeOpenAi extends Listening {
  /** v1 base URL, as OPENAI_BASE_URL. */
  baseUrl: string;
  requests: Array<{
    path: string;
    headers: http.IncomingHttpHeaders;
    body: { model?: string; messages?: Array<{ content: string }> };
  }>;
  /** The next replies, in order; when empty the server answers a normal completion. */
  script: FakeReply[];
}

/** A local server speaking the OpenAI chat completions protocol, scripted per request. */
export async function startFakeOpenAi(): Promise<FakeOpenAi> {
  const requests: FakeOpenAi['requests'] = [];
  const script: FakeReply[] = [];
  const hung: http.ServerResponse[] = [];
  const server = await listen(async (req, res) => {
    const parsed = JSON.parse((await body(req)) || '{}');
    requests.push({ path: req.url ?? '', headers: req.headers, body: parsed });
    const reply = script.shift() ?? {
      status: 200,
      body: {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        model: `${parsed.model}-2026`,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: `hosted answer to ${parsed.messages?.[0]?.content?.length ?? 0} chars` },
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
      },
    };
    if (reply === 'hang') {
      hung.push(res);
      return;
    }
    const text = reply.raw ?? JSON.stringify(reply.body ?? {});
    res.writeHead(reply.status, { 'content-type': 'application/json', ...(reply.headers ?? {}) });
    res.end(text);
  });
  return {
    ...server,
    baseUrl: `${server.url}/v1`,
    requests,
    script,
    close: async () => {
      for (const res of hung) res.destroy();
      await server.close();
    },
  };
}

/**
 * A local server speaking HashiCorp Vault's KV v2 API: reads, and the writes of the gateway's own
 * secrets (the receipt signing keys, provisioned on first use); `reads` counts the reads only.
 */
export async function startFakeVault(
  token: string,
  secrets: Record<string, Record<string, string>>,
  mount = 'secret',
): Promise<Listening & { reads: number }> {
  const state = { reads: 0 };
  const server = await listen(async (req, res) => {
    const prefix = `/v1/${mount}/data/`;
    const send = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (req.method === 'POST' && req.headers['x-vault-token'] === token && req.url?.startsWith(prefix)) {
      secrets[decodeURIComponent(req.url.slice(prefix.length))] = (
        JSON.parse(await body(req)) as { data: Record<string, string> }
      ).data;
      return send(200, { data: { version: 1 } });
    }
    state.reads++;
    if (req.headers['x-vault-token'] !== token) return send(403, { errors: ['permission denied'] });
    if (req.method !== 'GET' || !req.url?.startsWith(prefix)) return send(404, { errors: [] });
    const secretPath = decodeURIComponent(req.url.slice(prefix.length));
    const data = secrets[secretPath];
    if (!data) return send(404, { errors: [] });
    send(200, {
      request_id: 'r',
      lease_id: '',
      renewable: false,
      lease_duration: 0,
      data: { data, metadata: { version: 1, created_time: '2026-11-21T00:00:00Z', deletion_time: '', destroyed: false } },
    });
  });
  return {
    ...server,
    get reads() {
      return state.reads;
    },
  };
}

export const TENANT_A = 'ten_01JD0000000000000000000A00';
export const TENANT_B = 'ten_01JD0000000000000000000B00';

export interface AiHarness {
  db: TestDatabase;
  url: string;
  config: SystemConfig;
  services: AiServices;
  keys: DevKeyPair;
  logs: string[];
  /** Every response body the harness received, for leak checks. */
  responses: string[];
  token(tenantId: string, scope?: string, sub?: string): Promise<string>;
  /** POSTs a GraphQL operation to the subgraph as `tenantId` with `scope`. */
  gql<T = Record<string, unknown>>(
    query: string,
    variables?: Record<string, unknown>,
    /** `idempotencyKey` replaces the fresh key a mutation gets, to send a retry; `headers` are added (If-Match, ...). */
    as?: { tenantId?: string; scope?: string; sub?: string; idempotencyKey?: string; headers?: Record<string, string> },
  ): Promise<{
    status: number;
    data?: T;
    errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
    headers: Headers;
    raw: string;
  }>;
  close(): Promise<void>;
}

/**
 * The AI subgraph over HTTP on a fresh database, with logs captured line by line so a test can
 * grep them. `env` is the process environment the configuration is parsed from.
 */
export async function startAiHarness(
  kind: DatabaseKind,
  env: Record<string, string>,
  overrides: Partial<Omit<AiDeps, 'config' | 'db' | 'verifier' | 'logger'>> = {},
): Promise<AiHarness> {
  const dataDir = processDataDir('ai-it-');
  const config = loadSystemConfig({ HOST: '127.0.0.1', DATA_DIR: dataDir, AI_CONFIG_CACHE_MS: '0', LOG_LEVEL: 'debug', ...env });
  const db = await createTestDatabase(kind);
  const logs: string[] = [];
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({
      write(chunk, _encoding, done) {
        logs.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    }),
  });
  await seedBaseline(db.prisma, { hostedModel: config.providers.openaiModel, logger });
  const keys = await generateEd25519();
  const verifier = await createTokenVerifier({
    publicKey: JSON.stringify(keys.publicJwk),
    maxTokenLifetimeSeconds: 900,
    clockToleranceSeconds: 30,
  });
  const server = await startAiSubgraph({ config, db: db.prisma, verifier, logger, ...overrides }, 0);
  const responses: string[] = [];
  const token = (tenantId: string, scope = 'ai.assist ai.admin', sub = 'svc-consumer') =>
    mintToken(keys.privateJwk, { sub, tid: tenantId, scope });
  return {
    db,
    url: server.url,
    config,
    services: server.services,
    keys,
    logs,
    responses,
    token,
    async gql(query, variables = {}, as = {}) {
      const tenantId = as.tenantId ?? TENANT_A;
      const response = await fetch(server.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${await token(tenantId, as.scope, as.sub)}`,
          'x-tenant-id': tenantId,
          // The subgraph's door refuses a mutation without a key, as the gateway's does.
          ...(/^\s*mutation\b/.test(query) ? { 'idempotency-key': as.idempotencyKey ?? newUlid() } : {}),
          ...as.headers,
        },
        body: JSON.stringify({ query, variables }),
      });
      const raw = await response.text();
      responses.push(raw, JSON.stringify([...response.headers]));
      const parsed = JSON.parse(raw);
      return { status: response.status, data: parsed.data, errors: parsed.errors, headers: response.headers, raw };
    },
    async close() {
      await server.close();
      await db.close();
      await fs.rm(dataDir, { recursive: true, force: true });
    },
  };
}

export const ASSIST = `mutation Assist($input: AssistInput!) {
  assist(input: $input) {
    provenanceId status text provider model outputHash reviewState mode
    template { templateId version hash }
    timings { totalMs providerMs queueMs }
  }
}`;

export const PROVENANCE = `query P($id: ID!) {
  provenance(provenanceId: $id) {
    provenanceId tenantId actorType actorId featureKey status mode templateId templateVersion templateHash renderedPromptHash
    ruleId ruleVersion provider model outputHash inputTokens outputTokens reviewState residency legacyBackfill errorCode latencyMs providerLatencyMs
    heldTextExpiresAt facilityId specialty subjectRef
    attempts { provider model attempt outcome latencyMs errorCode }
  }
}`;

export function assistInput(featureKey: string, variables: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return { input: { featureKey, variables, context: { facilityId: 'fac-001', specialty: 'cardiology' }, ...extra } };
}
