import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createOpenAiCompatibleProvider, PROVIDER_USER_AGENT } from '../../../subgraphs/ai/providers/openai-compatible.js';
import { ProviderError } from '../../../subgraphs/ai/providers/provider.js';
import { closedPort, startFakeOpenAi, type FakeOpenAi } from './support.js';
import { rejected } from '../../unit/ai/catching.js';

const KEY = 'sk-adapter-SECRET-0042';

describe('openai-compatible adapter against a local chat completions server', () => {
  let server: FakeOpenAi;
  let provider: ReturnType<typeof createOpenAiCompatibleProvider>;
  const call = (timeoutMs = 2000) =>
    provider.complete({
      model: 'llama-3-8b',
      prompt: 'Summarise: x',
      maxOutputTokens: 32,
      attempt: 1,
      signal: AbortSignal.timeout(timeoutMs),
    });

  beforeAll(async () => {
    server = await startFakeOpenAi();
    provider = createOpenAiCompatibleProvider({
      baseUrl: server.baseUrl,
      allowedHosts: [new URL(server.baseUrl).host],
      residencies: ['ON_PREM'],
      timeoutMs: 2000,
      apiKey: async () => KEY,
    });
  });
  afterAll(async () => server?.close());
  afterEach(() => vi.unstubAllGlobals());

  it('sends a chat completion with the key and maps the answer and usage', async () => {
    const answer = await call();
    expect(answer).toEqual({
      text: 'hosted answer to 12 chars',
      model: 'llama-3-8b-2026',
      usage: { inputTokens: 12, outputTokens: 7 },
    });
    const request = server.requests.at(-1)!;
    expect(request.path).toBe('/v1/chat/completions');
    expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request.headers['user-agent']).toBe(PROVIDER_USER_AGENT);
    expect(request.body).toEqual({ model: 'llama-3-8b', messages: [{ role: 'user', content: 'Summarise: x' }], max_tokens: 32 });
  });

  it('classifies failures without echoing the provider body', async () => {
    server.script.push({ status: 500, body: { error: { message: `upstream broke, key=${KEY}` } } });
    const serverError = await rejected(ProviderError, call());
    expect(serverError).toMatchObject({ kind: 'server_error', status: 500 });
    expect(serverError.message).not.toContain(KEY);

    server.script.push({ status: 429, body: {}, headers: { 'retry-after': '2' } });
    expect(await rejected(ProviderError, call())).toMatchObject({ kind: 'rate_limited', retryAfterMs: 2000 });

    server.script.push({ status: 429, body: {}, headers: { 'retry-after-ms': '250' } });
    expect(await rejected(ProviderError, call())).toMatchObject({ kind: 'rate_limited', retryAfterMs: 250 });

    server.script.push({ status: 401, body: { error: { message: 'Incorrect API key provided: sk-adap****' } } });
    expect(await rejected(ProviderError, call())).toMatchObject({ kind: 'auth_error', status: 401 });

    server.script.push({ status: 400, body: { error: { code: 'content_filter', message: 'filtered' } } });
    expect((await rejected(ProviderError, call())).kind).toBe('content_filter');

    server.script.push({ status: 200, body: { choices: [{ message: { content: null }, finish_reason: 'content_filter' }] } });
    expect((await rejected(ProviderError, call())).kind).toBe('content_filter');

    server.script.push({ status: 400, body: { error: { code: 'invalid_request_error' } } });
    expect((await rejected(ProviderError, call())).kind).toBe('bad_request');

    server.script.push({ status: 200, raw: '{"choices": [' });
    expect((await rejected(ProviderError, call())).kind).toBe('malformed_response');

    server.script.push({ status: 200, body: { choices: [] } });
    expect((await rejected(ProviderError, call())).kind).toBe('malformed_response');
  });

  it('does not follow a redirect: the provider is unreachable at its configured URL', async () => {
    const before = server.requests.length;
    server.script.push({ status: 302, body: {}, headers: { location: `${server.baseUrl}/chat/completions` } });
    const error = await rejected(ProviderError, call());
    expect(error).toMatchObject({ kind: 'connect_error' });
    expect(error.message).toContain('HTTP 302');
    expect(server.requests.length).toBe(before + 1);
  });

  // Every AI answer makes this call, and through WHATWG fetch it costs 2.2-3.5 times the CPU of
  // undici's request (bench/results/2026-11-28T2241-assist-provider-request.md): the adapter must not use fetch.
  it('calls the provider without the global fetch', async () => {
    const globalFetch = vi.fn(() => Promise.reject(new Error('the global fetch was used')));
    vi.stubGlobal('fetch', globalFetch);
    const created = createOpenAiCompatibleProvider({
      baseUrl: server.baseUrl,
      allowedHosts: [new URL(server.baseUrl).host],
      residencies: [],
      timeoutMs: 1000,
      apiKey: async () => KEY,
    });
    const answer = await created.complete({
      model: 'm',
      prompt: 'p',
      maxOutputTokens: 1,
      attempt: 1,
      signal: AbortSignal.timeout(1000),
    });
    expect(answer.text).toBe('hosted answer to 1 chars');
    expect(globalFetch).not.toHaveBeenCalled();
  });

  it('reports a timeout when the server does not answer in time', async () => {
    server.script.push('hang');
    expect((await rejected(ProviderError, call(100))).kind).toBe('timeout');
  });

  it('reports a connect error when nothing listens', async () => {
    const port = await closedPort();
    const offline = createOpenAiCompatibleProvider({
      baseUrl: `http://127.0.0.1:${port}/v1`,
      allowedHosts: [`127.0.0.1:${port}`],
      residencies: [],
      timeoutMs: 1000,
      apiKey: async () => KEY,
    });
    const error = await rejected(
      ProviderError,
      offline.complete({ model: 'm', prompt: 'p', maxOutputTokens: 1, attempt: 1, signal: AbortSignal.timeout(1000) }),
    );
    expect(error.kind).toBe('connect_error');
    expect(error.message).not.toContain(KEY);
  });

  it('sends no Authorization header when the vault holds no key (on-prem servers)', async () => {
    const keyless = createOpenAiCompatibleProvider({
      baseUrl: server.baseUrl,
      allowedHosts: [new URL(server.baseUrl).host],
      residencies: [],
      timeoutMs: 1000,
      apiKey: async () => undefined,
    });
    await keyless.complete({ model: 'm', prompt: 'p', maxOutputTokens: 1, attempt: 1, signal: AbortSignal.timeout(1000) });
    expect(server.requests.at(-1)!.headers.authorization).toBeUndefined();
  });

  it('turns a vault failure into not_configured without its detail', async () => {
    const broken = createOpenAiCompatibleProvider({
      baseUrl: server.baseUrl,
      allowedHosts: [new URL(server.baseUrl).host],
      residencies: [],
      timeoutMs: 1000,
      apiKey: async () => {
        throw new Error(`vault said ${KEY}`);
      },
    });
    const error = await rejected(
      ProviderError,
      broken.complete({ model: 'm', prompt: 'p', maxOutputTokens: 1, attempt: 1, signal: AbortSignal.timeout(1000) }),
    );
    expect(error.kind).toBe('not_configured');
    expect(error.message).not.toContain(KEY);
  });

  it('refuses a base URL whose host is not allowed', () => {
    expect(() =>
      createOpenAiCompatibleProvider({
        baseUrl: 'https://elsewhere.example/v1',
        allowedHosts: ['api.openai.com'],
        residencies: [],
        timeoutMs: 1,
        apiKey: async () => undefined,
      }),
    ).toThrow(/not in PROVIDER_ALLOWED_HOSTS/);
  });
});
