import type http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../platform/clock.js';
import { loadSystemConfig } from '../../../processes/config.js';
import { localModerator, remoteModerator } from '../../../subgraphs/ai/moderation/moderator.js';
import {
  createOpenAiModerationClassifier,
  ModerationUnavailableError,
} from '../../../subgraphs/ai/moderation/openai-moderation.js';
import { createAzureOpenAiProvider } from '../../../subgraphs/ai/providers/azure-openai.js';
import { createBedrockProvider } from '../../../subgraphs/ai/providers/bedrock.js';
import { ProviderError, type ModelProvider } from '../../../subgraphs/ai/providers/provider.js';
import { providersFromConfig } from '../../../subgraphs/ai/providers/registry.js';
import { cacheSecrets } from '../../../subgraphs/ai/vault/secrets.js';
import { rejected } from '../../unit/ai/catching.js';
import { closedPort, listen, startFakeOpenAi, type FakeOpenAi, type Listening } from './support.js';

const AZURE_KEY = 'azure-key-SECRET-1234';
const AWS = { accessKeyId: 'AKIDEXAMPLE0000TEST', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };

const call = (provider: ModelProvider, model: string, timeoutMs = 3000) =>
  provider.complete({ model, prompt: 'Summarise: x', maxOutputTokens: 32, attempt: 1, signal: AbortSignal.timeout(timeoutMs) });

async function readBody(req: AsyncIterable<unknown>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

type Recorded = { method: string; path: string; headers: http.IncomingHttpHeaders | http2.IncomingHttpHeaders; body: string };
type Reply = { status: number; body: unknown; headers?: Record<string, string> };

/** A local HTTP server that records requests and answers from a script (default: `fallback`). */
async function scriptedServer(fallback: () => Reply): Promise<Listening & { requests: Recorded[]; script: Reply[] }> {
  const requests: Recorded[] = [];
  const script: Reply[] = [];
  const server = await listen(async (req, res) => {
    requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: await readBody(req) });
    const reply = script.shift() ?? fallback();
    res.writeHead(reply.status, { 'content-type': 'application/json', ...(reply.headers ?? {}) });
    res.end(JSON.stringify(reply.body));
  });
  return { ...server, requests, script };
}

describe('azure-openai adapter against a local server', () => {
  let server: FakeOpenAi;
  let provider: ModelProvider;
  beforeAll(async () => {
    server = await startFakeOpenAi();
    provider = createAzureOpenAiProvider({
      endpoint: server.url,
      apiVersion: '2024-10-21',
      allowedHosts: [new URL(server.url).host],
      residencies: ['AF'],
      timeoutMs: 2000,
      apiKey: async () => AZURE_KEY,
    });
  });
  afterAll(async () => server?.close());

  it('posts to the deployment path with api-version and the api-key header, no bearer and no model in the body', async () => {
    const answer = await call(provider, 'gpt-4o mini/za');
    expect(answer.text).toMatch(/^hosted answer/);
    const request = server.requests.at(-1)!;
    expect(request.path).toBe('/openai/deployments/gpt-4o%20mini%2Fza/chat/completions?api-version=2024-10-21');
    expect(request.headers['api-key']).toBe(AZURE_KEY);
    expect(request.headers.authorization).toBeUndefined();
    expect(request.body).toEqual({ messages: [{ role: 'user', content: 'Summarise: x' }], max_tokens: 32 });
    expect(provider.residencies).toEqual(['AF']);
  });

  it("maps Azure's content filter answer to content_filter", async () => {
    server.script.push({ status: 400, body: { error: { code: 'content_filter', message: 'filtered' } } });
    expect(await rejected(ProviderError, call(provider, 'dep'))).toMatchObject({ kind: 'content_filter' });
  });

  it('fails as not_configured without a key, and refuses an endpoint outside the allow-list', async () => {
    const keyless = createAzureOpenAiProvider({
      endpoint: server.url,
      apiVersion: '2024-10-21',
      allowedHosts: [new URL(server.url).host],
      residencies: ['AF'],
      timeoutMs: 2000,
      apiKey: async () => undefined,
    });
    const before = server.requests.length;
    expect(await rejected(ProviderError, call(keyless, 'dep'))).toMatchObject({ kind: 'not_configured' });
    expect(server.requests.length).toBe(before);
    expect(() =>
      createAzureOpenAiProvider({
        endpoint: 'https://evil.example',
        apiVersion: 'x',
        allowedHosts: ['good.example'],
        residencies: [],
        timeoutMs: 1,
        apiKey: async () => 'k',
      }),
    ).toThrow(/not in PROVIDER_ALLOWED_HOSTS/);
  });
});

/**
 * The Bedrock runtime client speaks HTTP/2 (its default handler), so the fake does too, in
 * cleartext (h2c with prior knowledge): the adapter runs exactly as it does against AWS.
 */
async function scriptedHttp2Server(fallback: () => Reply): Promise<Listening & { requests: Recorded[]; script: Reply[] }> {
  const requests: Recorded[] = [];
  const script: Reply[] = [];
  const server = http2.createServer(async (req, res) => {
    requests.push({ method: req.method, path: req.url, headers: req.headers, body: await readBody(req) });
    const reply = script.shift() ?? fallback();
    res.writeHead(reply.status, { 'content-type': 'application/json', ...(reply.headers ?? {}) });
    res.end(JSON.stringify(reply.body));
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script,
    close: async () => {
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('bedrock adapter (official SDK, SigV4) against a local server', () => {
  const converse = (text: string): Reply => ({
    status: 200,
    body: {
      output: { message: { role: 'assistant', content: [{ text }] } },
      stopReason: 'end_turn',
      usage: { inputTokens: 9, outputTokens: 4, totalTokens: 13 },
      metrics: { latencyMs: 12 },
    },
  });
  let server: Awaited<ReturnType<typeof scriptedHttp2Server>>;
  let provider: ModelProvider;
  let credentials: typeof AWS | undefined = AWS;

  beforeAll(async () => {
    server = await scriptedHttp2Server(() => converse('bedrock answer'));
    provider = createBedrockProvider({
      region: 'eu-west-1',
      endpoint: server.url,
      allowedHosts: [new URL(server.url).host],
      residencies: ['EU'],
      timeoutMs: 3000,
      credentials: async () => credentials,
    });
  });
  afterAll(async () => server?.close());

  it('signs a Converse request with SigV4 for service bedrock and maps the answer', async () => {
    const answer = await call(provider, 'anthropic.claude-3-haiku-20240307-v1:0');
    expect(answer).toEqual({
      text: 'bedrock answer',
      model: 'anthropic.claude-3-haiku-20240307-v1:0',
      usage: { inputTokens: 9, outputTokens: 4 },
    });
    const request = server.requests.at(-1)!;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse');
    expect(request.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
    const date = String(request.headers['x-amz-date']).slice(0, 8);
    expect(request.headers.authorization).toMatch(
      new RegExp(
        `^AWS4-HMAC-SHA256 Credential=${AWS.accessKeyId}/${date}/eu-west-1/bedrock/aws4_request, SignedHeaders=[a-z0-9;:-]+, Signature=[0-9a-f]{64}$`,
      ),
    );
    // The date, the payload hash and the body type are covered by the signature.
    expect(String(request.headers.authorization)).toMatch(
      /SignedHeaders=[^,]*\bcontent-type;[^,]*x-amz-content-sha256;x-amz-date\b/,
    );
    expect(String(request.headers.authorization)).not.toContain(AWS.secretAccessKey);
    expect(JSON.parse(request.body)).toEqual({
      messages: [{ role: 'user', content: [{ text: 'Summarise: x' }] }],
      inferenceConfig: { maxTokens: 32 },
    });
  });

  it('classifies Bedrock errors by exception name, without SDK retries', async () => {
    const cases: Array<[Reply, string]> = [
      [{ status: 429, body: { message: 'slow down' }, headers: { 'x-amzn-errortype': 'ThrottlingException' } }, 'rate_limited'],
      [{ status: 403, body: { message: 'no' }, headers: { 'x-amzn-errortype': 'AccessDeniedException' } }, 'auth_error'],
      [{ status: 400, body: { message: 'bad' }, headers: { 'x-amzn-errortype': 'ValidationException' } }, 'bad_request'],
      [
        { status: 503, body: { message: 'later' }, headers: { 'x-amzn-errortype': 'ServiceUnavailableException' } },
        'server_error',
      ],
      [{ status: 408, body: { message: 'slow model' }, headers: { 'x-amzn-errortype': 'ModelTimeoutException' } }, 'timeout'],
    ];
    for (const [reply, kind] of cases) {
      const before = server.requests.length;
      server.script.push(reply);
      expect(await rejected(ProviderError, call(provider, 'm'))).toMatchObject({ kind, status: reply.status });
      expect(server.requests.length - before).toBe(1);
    }
  });

  it('maps a guardrail stop to content_filter and an empty answer to malformed_response', async () => {
    server.script.push({ ...converse('x'), body: { ...(converse('x').body as object), stopReason: 'guardrail_intervened' } });
    expect(await rejected(ProviderError, call(provider, 'm'))).toMatchObject({ kind: 'content_filter' });
    server.script.push({
      status: 200,
      body: { output: { message: { role: 'assistant', content: [] } }, stopReason: 'end_turn' },
    });
    expect(await rejected(ProviderError, call(provider, 'm'))).toMatchObject({ kind: 'malformed_response' });
  });

  it('fails as not_configured without credentials, before any request', async () => {
    credentials = undefined;
    const fresh = createBedrockProvider({
      region: 'eu-west-1',
      endpoint: server.url,
      allowedHosts: [new URL(server.url).host],
      residencies: [],
      timeoutMs: 3000,
      credentials: async () => credentials,
    });
    const before = server.requests.length;
    expect(await rejected(ProviderError, call(fresh, 'm'))).toMatchObject({ kind: 'not_configured' });
    expect(server.requests.length).toBe(before);
    credentials = AWS;
  });

  it('reports a refused connection as connect_error', async () => {
    const port = await closedPort();
    const unreachable = createBedrockProvider({
      region: 'eu-west-1',
      endpoint: `http://127.0.0.1:${port}`,
      allowedHosts: [`127.0.0.1:${port}`],
      residencies: [],
      timeoutMs: 3000,
      credentials: async () => AWS,
    });
    expect(await rejected(ProviderError, call(unreachable, 'm'))).toMatchObject({ kind: 'connect_error' });
  });
});

describe('providers from configuration', () => {
  it('adds azure-openai (AF), bedrock and on-prem (ON_PREM) when configured, on-prem without a key', async () => {
    const onPrem = await startFakeOpenAi();
    try {
      const config = loadSystemConfig({
        AZURE_OPENAI_ENDPOINT: 'https://clinic-za.openai.azure.com',
        BEDROCK_REGION: 'eu-central-1',
        ONPREM_BASE_URL: onPrem.baseUrl,
      });
      const secrets = cacheSecrets({ kind: 'file', read: async () => undefined }, { ttlMs: 1000, clock: systemClock });
      const registry = providersFromConfig(config, secrets);
      expect([...registry.providers.keys()].sort()).toEqual(['azure-openai', 'bedrock', 'mock', 'on-prem']);
      expect(registry.profiles.get('azure-openai')!.residencies).toEqual(['AF']);
      expect(registry.profiles.get('on-prem')!.residencies).toEqual(['ON_PREM']);
      expect(config.providers.allowedHosts.sort()).toEqual(
        ['bedrock-runtime.eu-central-1.amazonaws.com', 'clinic-za.openai.azure.com', new URL(onPrem.baseUrl).host].sort(),
      );
      await call(registry.providers.get('on-prem')!, 'llama-3-8b');
      expect(onPrem.requests.at(-1)!.headers.authorization).toBeUndefined();
      expect(onPrem.requests.at(-1)!.path).toBe('/v1/chat/completions');
    } finally {
      await onPrem.close();
    }
  });
});

describe('openai-compatible moderation adapter against a local server', () => {
  let server: Awaited<ReturnType<typeof scriptedServer>>;
  const clean = (): Reply => ({
    status: 200,
    body: {
      id: 'modr-1',
      model: 'omni-moderation-latest',
      results: [{ flagged: false, categories: { violence: false }, category_scores: { violence: 0.01 } }],
    },
  });
  beforeAll(async () => {
    server = await scriptedServer(clean);
  });
  afterAll(async () => server?.close());
  const classifier = (base = server.url) =>
    createOpenAiModerationClassifier({
      baseUrl: base,
      allowedHosts: [new URL(server.url).host],
      model: 'omni-moderation-latest',
      timeoutMs: 2000,
      apiKey: async () => 'mod-key',
    });

  it('posts {model, input} to {base}/v1/moderations with the bearer key (base with or without /v1)', async () => {
    expect(await classifier().classify('hello', AbortSignal.timeout(2000))).toEqual([]);
    expect(await classifier(`${server.url}/v1`).classify('hello', AbortSignal.timeout(2000))).toEqual([]);
    for (const request of server.requests.slice(-2)) {
      expect(request.path).toBe('/v1/moderations');
      expect(request.headers.authorization).toBe('Bearer mod-key');
      expect(JSON.parse(request.body)).toEqual({ model: 'omni-moderation-latest', input: 'hello' });
    }
  });

  it('turns flagged categories into reasons with scores, and adds local PHI rules on outputs only', async () => {
    const flagged: Reply = {
      status: 200,
      body: {
        results: [
          {
            flagged: true,
            categories: { 'self-harm/intent': true, violence: false, 'sexual/minors': true },
            category_scores: { 'self-harm/intent': 0.91234, violence: 0.2, 'sexual/minors': 0.7 },
          },
        ],
      },
    };
    server.script.push(flagged, flagged);
    const moderator = remoteModerator(classifier());
    const signal = AbortSignal.timeout(2000);
    const input = await moderator.classify({
      tenantId: 't',
      featureKey: 'f',
      stage: 'input',
      text: 'MRN: 00482913',
      residency: null,
      signal,
    });
    expect(input).toEqual({
      flagged: true,
      classifier: 'openai-moderation:omni-moderation-latest',
      categories: ['self_harm', 'sexual_minors'],
      reasons: [
        { category: 'self_harm', rule: 'openai:self-harm/intent', count: 1, score: 0.912 },
        { category: 'sexual_minors', rule: 'openai:sexual/minors', count: 1, score: 0.7 },
      ],
    });
    const output = await moderator.classify({
      tenantId: 't',
      featureKey: 'f',
      stage: 'output',
      text: 'MRN: 00482913',
      residency: null,
      signal,
    });
    expect(output.classifier).toBe('openai-moderation:omni-moderation-latest+local-rules-v1');
    expect(output.categories).toEqual(['phi', 'self_harm', 'sexual_minors']);
  });

  it('never sends the text of a request for a residency the endpoint does not serve: the built-in rules judge it', async () => {
    const before = server.requests.length;
    const signal = AbortSignal.timeout(2000);
    const request = { tenantId: 't', featureKey: 'f', stage: 'input' as const, text: 'I want to kill myself', signal };
    const local = await remoteModerator(classifier(), ['EU']).classify({ ...request, residency: 'AF' });
    expect(local).toMatchObject({ flagged: true, classifier: 'local-rules-v1', categories: ['self_harm'] });
    // '*' is every residency but ON_PREM: an on-prem tenant's text stays here unless the list names it.
    const onPrem = await remoteModerator(classifier(), ['*']).classify({ ...request, residency: 'ON_PREM' });
    expect(onPrem.classifier).toBe('local-rules-v1');
    expect(server.requests.length).toBe(before);
    await remoteModerator(classifier(), ['EU']).classify({ ...request, residency: 'EU' });
    await remoteModerator(classifier(), ['EU']).classify({ ...request, residency: null });
    expect(server.requests.length - before).toBe(2);
  });

  it('is unavailable (never "clean") on an error status, a bad body or a dead endpoint', async () => {
    server.script.push({ status: 500, body: { error: 'x' } });
    expect((await rejected(ModerationUnavailableError, classifier().classify('x', AbortSignal.timeout(2000)))).reason).toBe(
      'http_500',
    );
    server.script.push({ status: 200, body: { results: [] } });
    expect((await rejected(ModerationUnavailableError, classifier().classify('x', AbortSignal.timeout(2000)))).reason).toBe(
      'malformed_response',
    );
    const port = await closedPort();
    const dead = createOpenAiModerationClassifier({
      baseUrl: `http://127.0.0.1:${port}`,
      allowedHosts: [`127.0.0.1:${port}`],
      model: 'm',
      timeoutMs: 500,
      apiKey: async () => undefined,
    });
    expect((await rejected(ModerationUnavailableError, dead.classify('x', AbortSignal.timeout(2000)))).reason).toBe(
      'unreachable_or_timeout',
    );
  });

  it('the local moderator needs no server', async () => {
    const verdict = await localModerator.classify({
      tenantId: 't',
      featureKey: 'f',
      stage: 'output',
      text: 'Call 555-123-4567',
      residency: null,
      signal: AbortSignal.timeout(100),
    });
    expect(verdict).toMatchObject({ flagged: true, classifier: 'local-rules-v1', categories: ['phi'] });
  });
});
